# Checks the release artifacts (sourced by scripts/build-release.sh --verify): each stage file
# defines verify_<stage>; verify_release runs them, then loads the cp39 wheel in Debian 11's
# Python and runs the aarch64 wheel and jar under qemu (arm64.sh). The ELF and redis-server helpers are lib.sh's. Needs $repo, $root, $dist, $work, $version.

# Each x86_64 wheel in a venv of its own Python version: the wheel, lock, exit and TLS tests.
# Every wheel's module: ELF machine, glibc floor, exports and needed libraries (check_elf).
verify_wheels() {
  local v minor wheel python venv arch so tmp
  for v in "${release_python_versions[@]}"; do
    minor=${v#3.}
    wheel=$(ls "$dist"/rlock-"$version"-cp3"$minor"-cp3"$minor"-manylinux_2_31_x86_64.whl) ||
      die "no x86_64 wheel for Python $v"
    python=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v" | sort -V | tail -n1)
    venv=$work/venv-$v
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q pytest pytest-timeout redis auditwheel >/dev/null
    "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
    log "Python $v: $(basename "$wheel")"
    (cd "$repo" && RLOCK_TEST_WHEEL=$wheel RLOCK_TEST_RELEASE=1 RLOCK_REQUIRE_CLI=0 \
      "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" \
      tests/python/test_wheel.py tests/python/test_locks.py tests/python/test_exit.py \
      tests/python/test_tls.py -x) || die "the tests failed with the Python $v wheel"
  done
  for arch in "${arches[@]}"; do
    for wheel in "$dist"/rlock-"$version"-cp3*-manylinux_2_31_"$arch".whl; do
      tmp=$(mktemp -d)
      python3 -m zipfile -e "$wheel" "$tmp"
      so=$(ls "$tmp"/rlock/_native.*.so)
      check_elf "$so" "$arch" '^PyInit__native$' >/dev/null
      [ ! -d "$tmp/rlock.libs" ] || die "$wheel carries grafted libraries: $(ls "$tmp/rlock.libs")"
      rm -rf "$tmp"
    done
    log "$arch wheels: modules for $arch, glibc <= 2.31, only PyInit__native exported, no libssl"
  done
}

# The cp39 wheel installed with pip into Debian 11's own Python 3.9 in the release root (glibc
# 2.31 really loads it), taking a lock on a server on the host's loopback.
verify_wheel_in_root() {
  local wheel
  wheel=$(ls "$dist"/rlock-"$version"-cp39-cp39-manylinux_2_31_x86_64.whl)
  in_root "$root" bash -c 'command -v pip3 >/dev/null' ||
    in_root "$root" apt-get install -y -q --no-install-recommends python3-pip >"$work/root-pip.log" 2>&1 ||
    die "installing python3-pip in the root failed; see $work/root-pip.log"
  rm -rf "$root/build/wheel-check" && mkdir -p "$root/build/wheel-check"
  cp "$wheel" "$root/build/wheel-check/"
  in_root "$root" python3 -m pip install -q --no-index --target /build/wheel-check/site \
    "/build/wheel-check/$(basename "$wheel")" || die "pip in the root refused $(basename "$wheel")"
  start_redis
  in_root "$root" env PYTHONPATH=/build/wheel-check/site python3 -c "
import rlock, sys
client = rlock.Client('redis://127.0.0.1:$redis_port')
lock = client.lock('release-check')
assert lock.acquire(blocking=False)
assert lock.held()
lock.release()
client.close()
print('glibc', __import__('platform').libc_ver()[1], 'Python', sys.version.split()[0], 'rlock', rlock.__version__)
" || { stop_redis; die "the cp39 wheel did not take a lock in the bullseye root"; }
  stop_redis
}

# The sdist builds and installs where no wheel fits (pip compiles it here).
verify_sdist() {
  local venv=$work/venv-sdist
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  log "building from the sdist with pip (a few minutes)"
  "$venv/bin/python" -m pip install -q --force-reinstall --no-binary rlock \
    "$dist/rlock-$version.tar.gz" >"$work/sdist-install.log" 2>&1 ||
    die "pip could not build and install the sdist; see $work/sdist-install.log"
  "$venv/bin/python" -c 'import rlock; print("sdist installed: rlock", rlock.__version__)'
  # Where a build needs what is missing, the error says what to install: hiredis hidden from
  # CMake here, and no C++ compiler.
  local src=$work/sdist-src out
  rm -rf "$src" && mkdir -p "$src" && tar -xzf "$dist/rlock-$version.tar.gz" -C "$src" --strip-components=1
  out=$(cmake -S "$src" -B "$src/build-nohiredis" -DRLOCK_BUILD_TESTS=OFF \
    "-DCMAKE_IGNORE_PATH=/usr/include;/usr/lib/$(uname -m)-linux-gnu" 2>&1) &&
    die "the sdist configured without hiredis"
  grep -q "install libhiredis-dev" <<<"$(echo $out)" || die "without hiredis the sdist's error does not say what to install: $out"
  out=$(CXX=/nonexistent/c++ cmake -S "$src" -B "$src/build-nocxx" 2>&1) && die "the sdist configured without a C++ compiler"
  grep -q "CMAKE_CXX_COMPILER" <<<"$out" || die "without a compiler the sdist's error does not say so: $out"
  log "sdist: without hiredis or a C++ compiler, CMake says what is missing"
}

verify_release() {
  local stage
  for stage in sdist wheels jar deb; do
    if declare -F "verify_$stage" >/dev/null && wants "$stage"; then
      log "verifying $stage"
      "verify_$stage"
    fi
  done
  if wants wheels; then verify_wheel_in_root; fi
  if [[ " ${arches[*]} " == *" aarch64 "* ]] && { wants wheels || wants jar || wants arm64; }; then
    log "verifying the aarch64 wheel and jar by running them (qemu)"
    verify_arm64_run
  fi
  log "release artifacts verified"
}
