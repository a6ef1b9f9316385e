"""The package under test is the installed wheel, and the wheel is self-contained."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import rlock
import rlock._native

REPO = Path(__file__).resolve().parents[2]


def test_imported_from_the_installation_not_the_source_tree():
    package_dir = Path(rlock.__file__).resolve().parent
    assert REPO / "python" not in package_dir.parents and package_dir != REPO / "python" / "rlock"
    assert "site-packages" in package_dir.parts


def test_version_matches_the_header():
    header = (REPO / "capi" / "include" / "rlock" / "version.h").read_text()
    parts = [
        re.search(rf"#define RLOCK_VERSION_{p} (\d+)", header).group(1)
        for p in ("MAJOR", "MINOR", "PATCH")
    ]
    assert rlock.__version__ == ".".join(parts)
    from importlib.metadata import version

    assert version("rlock-redis") == rlock.__version__


def test_the_distribution_is_rlock_redis_and_owns_the_package():
    from importlib.metadata import PackageNotFoundError, distribution

    dist = distribution("rlock-redis")
    assert dist.metadata["Name"] == "rlock-redis"
    assert any(str(f) == "rlock/__init__.py" for f in dist.files or [])
    with pytest.raises(PackageNotFoundError):
        distribution("rlock")  # the unrelated PyPI project, or a build from before the rename
    urls = dict(u.split(", ", 1) for u in dist.metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues", "Changelog"} <= set(urls), urls
    assert "pip install rlock-redis" in (dist.metadata.get_payload() or "")  # the long description


def test_import_warns_when_a_distribution_named_rlock_shares_the_package(tmp_path):
    """Another distribution "rlock" in the same site directory overwrote, or will overwrite, our
    files: import says so and how to repair it."""
    site = tmp_path / "site"
    installed = Path(rlock.__file__).parent
    shutil.copytree(installed, site / "rlock")
    if (installed.parent / "rlock_redis.libs").is_dir():  # what auditwheel grafted (test lane)
        shutil.copytree(installed.parent / "rlock_redis.libs", site / "rlock_redis.libs")
    script = "import warnings; warnings.simplefilter('error'); import rlock"
    env = {**os.environ, "PYTHONPATH": str(site)}
    clean = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stderr
    (site / "rlock-0.0.5.dist-info").mkdir()
    (site / "rlock-0.0.5.dist-info" / "METADATA").write_text("Name: rlock\nVersion: 0.0.5\n")
    shared = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert shared.returncode != 0
    assert "RuntimeWarning" in shared.stderr and "rlock-0.0.5.dist-info" in shared.stderr
    assert "pip uninstall rlock rlock-redis" in shared.stderr, shared.stderr


def test_typing_files_are_installed():
    package_dir = Path(rlock.__file__).parent
    assert (package_dir / "py.typed").exists()
    assert (package_dir / "_native.pyi").exists()


def test_the_celery_integration_ships_with_its_extra():
    """rlock.celery is in the wheel, its framework an extra (rlock-redis[celery]) that a plain
    install does not pull in, and importing rlock does not import celery."""
    from importlib.metadata import distribution

    dist = distribution("rlock-redis")
    assert any(str(f) == "rlock/celery.py" for f in dist.files or [])
    assert "celery" in (dist.metadata.get_all("Provides-Extra") or [])
    requires = dist.metadata.get_all("Requires-Dist") or []
    assert any(r.startswith("celery") and 'extra == "celery"' in r for r in requires), requires
    out = subprocess.run(
        [sys.executable, "-c", "import sys, rlock; print('celery' in sys.modules)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert out.strip() == "False"


def test_every_public_name_is_documented():
    for name in rlock.__all__:
        obj = getattr(rlock, name)
        if callable(obj) and name != "__version__":
            assert obj.__doc__, f"rlock.{name} has no docstring"
    for method in (
        "acquire",
        "release",
        "extend",
        "held",
        "locked",
        "hold_count",
        "remaining_ttl",
        "force_unlock",
        "on_lost",
    ):
        assert getattr(rlock.Lock, method).__doc__


def _elf_needed(path: Path) -> list:
    out = subprocess.run(
        ["readelf", "-dW", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def _elf_exports(path: Path) -> list:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


# OpenSSL (the core's TLS) is on no manylinux list. The release wheels (scripts/build-release.sh,
# RLOCK_TEST_RELEASE=1) link a static OpenSSL into the module; the wheel of the test lane links
# the build machine's libssl and libcrypto, which auditwheel repair copies into the wheel
# (rlock_redis.libs/, named after the distribution, the libraries renamed with a hash).
_OPENSSL = re.compile(r"^(libssl|libcrypto)(-[0-9a-f]{8})?\.so\.3$")
RELEASE = os.environ.get("RLOCK_TEST_RELEASE") == "1"
# A musllinux wheel (scripts/release/musl.sh) runs on a musl Python: zig links libc++ and its
# unwinder in, so the module needs musl's libc alone, named libc.so by zig's musl stub or
# libc.musl-<arch>.so.1 as Alpine names it.
MUSL = rlock._native.__file__.endswith("-linux-musl.so")


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils not installed")
def test_extension_needs_only_the_c_runtime_and_openssl():
    """The C library and the shared unwinder libgcc_s (both on every manylinux system); libgcc_s
    must be the process's one, or a thread ended by pthread_exit aborts (test_exit.py). Besides
    those, OpenSSL's two libraries (the test lane's wheel) or nothing (a release wheel, whose
    module carries OpenSSL)."""
    ext = Path(rlock._native.__file__)
    needed = _elf_needed(ext)
    if MUSL:
        assert RELEASE, "a musl module is a release build"
        # The release renames zig's libc.so to Alpine's libc.musl-<arch>.so.1 (docs/packaging.md).
        assert len(needed) == 1, needed
        assert re.fullmatch(r"libc\.musl-[a-z0-9_]+\.so\.1", needed[0]), needed
        assert not (ext.parent.parent / "rlock_redis.libs").exists()
        assert _elf_exports(ext) == ["PyInit__native"]
        return
    assert "libgcc_s.so.1" in needed
    allowed = re.compile(r"^(libc|libm|libpthread|libdl|librt|libgcc_s|ld-linux-x86-64)\.so\.\d+$")
    openssl = [lib for lib in needed if _OPENSSL.match(lib)]
    if RELEASE:
        assert openssl == [], needed  # test_tls.py, run beside, shows that TLS works
        assert not (ext.parent.parent / "rlock_redis.libs").exists()
    else:
        assert sorted(lib.split("-")[0].split(".")[0] for lib in openssl) == ["libcrypto", "libssl"]
    assert all(allowed.match(lib) for lib in needed if lib not in openssl), needed
    for lib in openssl:
        if "-" in lib:  # grafted by auditwheel: shipped in the wheel itself
            assert (ext.parent.parent / "rlock_redis.libs" / lib).is_file(), lib
    assert _elf_exports(ext) == ["PyInit__native"]


def test_wheel_is_manylinux():
    wheel = os.environ.get("RLOCK_TEST_WHEEL")
    if not wheel:
        pytest.skip("RLOCK_TEST_WHEEL (the built wheel) is not set")
    tag = r"manylinux_2_31_x86_64" if RELEASE else r"manylinux_\d+_\d+_x86_64"
    assert re.search(tag, Path(wheel).name), wheel
    out = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", wheel],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    text = " ".join(out.split())
    assert "is consistent with the following platform tag" in text, out
    assert "manylinux" in text
    assert "external versioned symbols" not in text or "libstdc++" not in text
