#!/usr/bin/env bash
# Compiles tests/consumer/app/main.c with `cc $(pkg-config --cflags --libs rlock)` against the
# installed prefix, runs it with LD_LIBRARY_PATH at the prefix, checks the printed version.
#   run_pkgconfig_consumer.sh PREFIX LIBDIR VERSION SONAME CC PKG_CONFIG WORK SOURCE [EXTRA_CFLAGS]
set -euo pipefail
prefix=$1 libdir=$2 version=$3 soname=$4 cc=$5 pkg_config=$6 work=$7 source=$8 extra=${9:-}

fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
"$pkg_config" --exists --print-errors rlock || fail "pkg-config does not find rlock in $PKG_CONFIG_PATH"

modversion=$("$pkg_config" --modversion rlock)
[ "$modversion" = "$version" ] || fail "pkg-config --modversion says '$modversion', expected '$version'"

# The paths in rlock.pc must lead into this prefix, wherever it was installed.
real_prefix=$(realpath "$prefix")
includedir=$("$pkg_config" --variable=includedir rlock)
pc_libdir=$("$pkg_config" --variable=libdir rlock)
[ -f "$includedir/rlock/rlock.h" ] || fail "includedir '$includedir' has no rlock/rlock.h"
[ -e "$pc_libdir/librlock.so" ] || fail "libdir '$pc_libdir' has no librlock.so"
case "$(realpath "$includedir")/" in "$real_prefix"/*) ;; *) fail "includedir '$includedir' is outside $prefix" ;; esac
case "$(realpath "$pc_libdir")/" in "$real_prefix"/*) ;; *) fail "libdir '$pc_libdir' is outside $prefix" ;; esac

cflags=$("$pkg_config" --cflags rlock)
libs=$("$pkg_config" --libs rlock)
echo "pkg-config --cflags: $cflags"
echo "pkg-config --libs:   $libs"
# shellcheck disable=SC2086  # word splitting of the flags is intended
"$cc" -std=c99 -Wall -Wextra -Werror $extra -o "$work/app" "$source" $cflags $libs \
  || fail "compiling with the pkg-config flags failed"

needed=$(readelf -d "$work/app" | sed -n 's/.*(NEEDED).*\[\(librlock[^]]*\)\].*/\1/p')
[ "$needed" = "$soname" ] || fail "the program needs '$needed', expected '$soname'"

out=$(LD_LIBRARY_PATH="$prefix/$libdir" "$work/app") || fail "the program failed: $out"
loaded=$(LD_LIBRARY_PATH="$prefix/$libdir" ldd "$work/app" | sed -n 's/.*librlock[^ ]* => \([^ ]*\).*/\1/p')
case "$(realpath "$loaded")" in "$real_prefix"/*) ;; *) fail "loaded librlock from '$loaded', not from $prefix" ;; esac
[ "$out" = "rlock $version" ] || fail "the program printed '$out', expected 'rlock $version'"
echo "pkg-config consumer printed: $out"
