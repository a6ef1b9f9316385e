"""Writes a Go module's proxy files (list, .info, .mod, .zip) from its module tree.

The files a module proxy serves for one version (the GOPROXY protocol): the release puts them
in dist/goproxy/<module>/@v/, so `GOPROXY=file://.../goproxy go get <module>@v<version>` works
before anything is published, and the .zip is what the go command makes from the release tag.
The zip follows the go command's rules (golang.org/x/mod/zip): every file under
"<module>@v<version>/", regular files only, no directory holding another go.mod, no two paths
equal up to case, sizes within its limits; entries sorted and dated 1980-01-01 so the same tree
gives the same bytes.
Usage: make_gomod_zip.py --module PATH --version vX.Y.Z --time RFC3339 --tree DIR --out DIR
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from pathlib import Path

MAX_ZIP_FILES = 500 << 20  # total size of the files (x/mod/zip MaxZipFile)
MAX_GO_MOD = 16 << 20
# x/mod/module's CheckFilePath, in short: path elements of these characters, not "." or "..",
# not ending with a dot (nor a space).
ELEMENT = re.compile(r"^[A-Za-z0-9!#$%&()+,\-.=@\[\]^_{}~ ]+$")


def module_files(tree: Path) -> list[Path]:
    files = []
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree)
        # A directory with its own go.mod is another module (bindings/go/otel).
        if any((tree / parent / "go.mod").exists() for parent in rel.parents if str(parent) != "."):
            continue
        if path.is_symlink():
            raise SystemExit(f"{rel}: a symbolic link, which a module zip cannot hold")
        if path.is_file():
            files.append(rel)
    return files


def check_path(rel: Path) -> None:
    for element in rel.parts:
        if not ELEMENT.match(element) or element.endswith((".", " ")):
            raise SystemExit(f"{rel}: not a valid file path in a module zip ({element!r})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--time", required=True)
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not re.fullmatch(r"v\d+\.\d+\.\d+", args.version):
        raise SystemExit(f"{args.version}: not a release version vX.Y.Z")
    if args.module != args.module.lower():
        raise SystemExit(f"{args.module}: upper case needs the proxy's !-escaping, not done here")
    files = module_files(args.tree)
    if Path("go.mod") not in files:
        raise SystemExit(f"{args.tree} has no go.mod")
    seen: dict[str, Path] = {}
    total = 0
    for rel in files:
        check_path(rel)
        if str(rel).lower() in seen:
            raise SystemExit(f"{rel} and {seen[str(rel).lower()]} differ only in case")
        seen[str(rel).lower()] = rel
        total += (args.tree / rel).stat().st_size
    if total > MAX_ZIP_FILES:
        raise SystemExit(
            f"the module's files take {total} bytes, over a module zip's {MAX_ZIP_FILES}"
        )
    go_mod = (args.tree / "go.mod").read_bytes()
    if len(go_mod) > MAX_GO_MOD:
        raise SystemExit("go.mod is over 16 MiB")

    args.out.mkdir(parents=True, exist_ok=True)
    prefix = f"{args.module}@{args.version}/"
    with zipfile.ZipFile(args.out / f"{args.version}.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for rel in files:
            info = zipfile.ZipInfo(prefix + rel.as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, (args.tree / rel).read_bytes())
    (args.out / f"{args.version}.mod").write_bytes(go_mod)
    (args.out / f"{args.version}.info").write_text(
        json.dumps({"Version": args.version, "Time": args.time}) + "\n"
    )
    (args.out / "list").write_text(args.version + "\n")
    print(f"{len(files)} files, {total} bytes")


if __name__ == "__main__":
    main()
