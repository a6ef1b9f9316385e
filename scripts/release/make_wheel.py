"""Packs a built extension module and the rlock package into a wheel (PEP 427).

The release build compiles the module in the release root, outside any Python build backend,
so this writes the wheel itself; its metadata is the sdist's PKG-INFO, which scikit-build-core
made from pyproject.toml, so both artifacts describe the same project.
Usage: make_wheel.py --pkg-info PKG-INFO --package python/rlock --module _native.<suffix>.so
                     --license LICENSE [--license NOTICES] --tag cp311-cp311-linux_x86_64 --out DIR
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import zipfile
from pathlib import Path


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pkg-info", type=Path, required=True)
    parser.add_argument("--package", type=Path, required=True)
    parser.add_argument("--module", type=Path, required=True)
    parser.add_argument("--license", type=Path, required=True, action="append")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    metadata = args.pkg_info.read_bytes()
    found = re.search(rb"^Version: (\S+)$", metadata, re.M)
    if not found:
        raise SystemExit(f"{args.pkg_info}: no Version line")
    version = found.group(1).decode()
    found = re.search(rb"^Name: (\S+)$", metadata, re.M)
    if not found:
        raise SystemExit(f"{args.pkg_info}: no Name line")
    # The file names spell the distribution's name normalized (PEP 427, PEP 503).
    dist_name = re.sub(r"[-_.]+", "_", found.group(1).decode()).lower()
    # A free-threaded build's ABI tag ends in t; its Python tag does not (cp314-cp314t).
    if not re.fullmatch(r"(cp3\d+)-\1t?-linux_(x86_64|aarch64)", args.tag):
        raise SystemExit(f"--tag {args.tag!r} is not cp3N-cp3N[t]-linux_<x86_64|aarch64>")
    dist_info = f"{dist_name}-{version}.dist-info"
    files: list[tuple[str, bytes]] = []
    for path in sorted(args.package.iterdir()):
        if path.is_file() and path.suffix in (".py", ".pyi", ".typed"):
            files.append((f"rlock/{path.name}", path.read_bytes()))
    files.append((f"rlock/{args.module.name}", args.module.read_bytes()))
    files.append((f"{dist_info}/METADATA", metadata))
    wheel_file = (
        "Wheel-Version: 1.0\nGenerator: rlock make_wheel.py\nRoot-Is-Purelib: false\n"
        f"Tag: {args.tag}\n"
    )
    files.append((f"{dist_info}/WHEEL", wheel_file.encode()))
    for license_file in args.license:
        files.append((f"{dist_info}/licenses/{license_file.name}", license_file.read_bytes()))
    record = "\n".join(record_line(n, d) for n, d in files) + f"\n{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode()))

    args.out.mkdir(parents=True, exist_ok=True)
    wheel = args.out / f"{dist_name}-{version}-{args.tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    print(wheel)


if __name__ == "__main__":
    main()
