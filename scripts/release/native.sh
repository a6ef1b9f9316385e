# Stage "native" of scripts/build-release.sh (sourced): compiles the core once per architecture
# inside the release root, with OpenSSL and hiredis linked in statically, and from that one tree:
# librlock (shared and static), the rlock CLI and one Python extension per Python version.
# Needs: $repo, $root (release root), $work (host dir for outputs), lib.sh sourced.

# 3.14t: the free-threaded build (cp314t).
release_python_versions=(3.9 3.10 3.11 3.12 3.13 3.14 3.14t)
release_pybind11=3.1.0

# Python's headers come from this machine's interpreters (pyenv's, and the 3.14 builds of
# ensure_cpython), one per version; pybind11's from its wheel on PyPI. Both are copied into the
# root under /opt.
stage_python_headers() {
  local v dir python
  for v in "${release_python_versions[@]}"; do
    python=$(release_python_bin "$v")
    dir=${python%/bin/*}/include/python$v
    [ -n "$python" ] && [ -f "$dir/Python.h" ] ||
      die "no headers for Python $v: install it with pyenv (pyenv install $v) or set PYENV_ROOT"
    mkdir -p "$root/opt/python/$v"
    rm -rf "$root/opt/python/$v/include" && cp -r "$dir" "$root/opt/python/$v/include"
  done
  if [ ! -f "$root/opt/pybind11-$release_pybind11/include/pybind11/pybind11.h" ]; then
    local tmp
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "pybind11==$release_pybind11" ||
      die "pip download pybind11==$release_pybind11 failed"
    python3 -m zipfile -e "$tmp"/pybind11-*.whl "$tmp/x"
    mkdir -p "$root/opt/pybind11-$release_pybind11"
    cp -r "$tmp/x/pybind11/include" "$root/opt/pybind11-$release_pybind11/include"
    rm -rf "$tmp"
  fi
}

# Copies the source as it is in the work tree (tracked and new files, not ignored ones).
stage_source() {
  rm -rf "$root/build/src" && mkdir -p "$root/build/src"
  git -C "$repo" ls-files -co --exclude-standard -z |
    (cd "$repo" && tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$root/build/src"
}

build_native() {
  local arch=$1 toolchain="" pairs="" v
  [ "$arch" = aarch64 ] && toolchain=-DCMAKE_TOOLCHAIN_FILE=/build/src/cmake/toolchains/aarch64-linux-gnu.cmake
  for v in "${release_python_versions[@]}"; do
    pairs="$pairs${pairs:+;}$v=/opt/python/$v/include"
  done
  log "compiling for $arch (core, librlock, CLI, Python ${release_python_versions[*]})"
  in_root "$root" bash -ec "
    cd /build && rm -rf native-$arch stage-$arch
    cmake -S src -B native-$arch $toolchain -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/usr -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_CLI=ON -DRLOCK_INSTALL=ON \
      -DRLOCK_BUILD_PYTHON=ON '-DRLOCK_PYTHON_RELEASE=$pairs' \
      -DRLOCK_PYBIND11_INCLUDE_DIR=/opt/pybind11-$release_pybind11/include \
      -DOPENSSL_ROOT_DIR=$(openssl_prefix "$arch") -DOPENSSL_USE_STATIC_LIBS=ON -DRLOCK_STATIC_BUNDLE=ON \
      $(jar_native_cmake_options)
    cmake --build native-$arch -j${RLOCK_JOBS:-2}
    DESTDIR=/build/stage-$arch cmake --install native-$arch" >"$work/native-$arch.log" 2>&1 ||
    die "the $arch build failed; see $work/native-$arch.log"
}
