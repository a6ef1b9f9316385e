#!/usr/bin/env bash
# Builds every release artifact into dist/ (see docs/packaging.md):
#   wheels  rlock_redis-<v>-cp3N-cp3N-manylinux_2_31_{x86_64,aarch64}.whl for CPython 3.9-3.14 and 3.14t, an sdist
#           (the PyPI distribution rlock-redis; the package is rlock)
#   jar     rlock-<v>.jar with native/linux-x86_64 and native/linux-aarch64
#   deb     librlock_<v>_{amd64,arm64}.deb: library, headers, pkg-config, CMake files, the CLI
#   gomod   goproxy/github.com/rlock/rlock/bindings/go/@v/: the Go module with librlock.a bundled,
#           and goproxy/.../bindings/go/gocron/@v/: the gocron module
#   musl    rlock_redis-<v>-cp3N-cp3N-musllinux_1_2_{x86_64,aarch64}.whl for CPython 3.11-3.14, built
#           with zig on this host (scripts/release/musl.sh)
# Everything native is compiled in a Debian 11 root (glibc 2.31, gcc 10) made once by debootstrap
# and cached in $RLOCK_RELEASE_CACHE (default /var/cache/rlock-release); needs root.
# Usage: scripts/build-release.sh [--verify | --verify-only] [--arch x86_64|aarch64|all] [--only STAGES]
#   --verify       then checks the artifacts (scripts/release/verify.sh): what .ci/run does
#   --verify-only  checks the artifacts already in dist/, builds nothing
#   --arch         the architectures to build (default all)
#   --only STAGES  comma-separated subset of: native,sdist,wheels,jar,deb,gomod,musl (default all);
#                  with --verify-only, "arm64" runs only the aarch64 wheel and jar under qemu
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
verify=0
build=1
arches=(x86_64 aarch64)
only=native,sdist,wheels,jar,deb,gomod,musl
while [ $# -gt 0 ]; do
  case $1 in
    --verify) verify=1 ;;
    --verify-only) verify=1; build=0 ;;
    --arch) shift; case ${1:-} in all) ;; x86_64|aarch64) arches=("$1") ;; *) echo "--arch: x86_64, aarch64 or all" >&2; exit 2 ;; esac ;;
    --only) shift; only=${1:?--only needs a list of stages} ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

source "$repo/scripts/release/lib.sh"
source "$repo/scripts/release/native.sh"
source "$repo/scripts/release/jar.sh"  # stage_jni and the JNI library's cmake options, for native
source "$repo/scripts/release/arm64.sh"  # verify_arm64_run: the aarch64 wheel and jar under qemu
dist=$repo/dist
work=$repo/build/release
mkdir -p "$dist" "$work"
start=$SECONDS
version=$(sed -n 's/^#define RLOCK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
  "$repo/capi/include/rlock/version.h" | paste -sd.)

# The sdist and musl stages alone need no Debian root (musl.sh compiles on this host).
root=
for stage in native wheels jar deb gomod arm64; do
  if wants "$stage"; then root=$(ensure_release_root); break; fi
done
if [ "$build" = 1 ] && wants native; then
  for arch in "${arches[@]}"; do ensure_openssl "$root" "$arch"; done
  stage_python_headers
  stage_source
  stage_jni
  for arch in "${arches[@]}"; do build_native "$arch"; done
fi
stages=()
for stage in sdist wheels jar deb gomod musl; do
  if [ -f "$repo/scripts/release/$stage.sh" ]; then
    [ "$stage" = jar ] || source "$repo/scripts/release/$stage.sh"
    stages+=("$stage")
  fi
done
for stage in "${stages[@]}"; do
  if [ "$build" = 1 ] && wants "$stage"; then "build_$stage"; fi
done
log "artifacts in $dist ($((SECONDS - start)) s):"
ls -1 "$dist"
if [ "$verify" = 1 ]; then
  source "$repo/scripts/release/verify.sh"
  verify_release
fi
