# Checks the release artifacts (sourced by scripts/build-release.sh --verify): each stage file
# defines verify_<stage>; verify_release runs them, then loads the cp39 wheel in Debian 11's
# Python and runs the aarch64 wheel and jar under qemu (arm64.sh). The ELF and redis-server helpers are lib.sh's. Needs $repo, $root, $dist, $work, $version.

# The TLS tests that wait on timers (a renewal, a timeout) and test only the shared C core: the
# wheels of the versions between the oldest and the newest skip them, which halves their run.
release_timer_tls_tests='not (test_the_watchdog_renews_over_tls or test_messages_never_show_the_password or test_a_plaintext_server_on_a_rediss_url or test_sentinel_over_tls)'

# Each x86_64 wheel in a venv of its own Python version: the wheel, lock, exit and TLS tests
# (the versions between the oldest and the newest without $release_timer_tls_tests); the
# free-threaded cp314t wheel the whole suite, with the GIL off (PYTHON_GIL=0), after showing that
# importing rlock leaves it off where nothing forces it (the module declares it needs no GIL).
# Every wheel's module: ELF machine, glibc floor, exports and needed libraries (check_elf).
verify_wheels() {
  local v minor wheel python venv arch so tmp tests gil newest
  for v in "${release_python_versions[@]}"; do [[ $v == *t ]] || newest=$v; done
  for v in "${release_python_versions[@]}"; do
    minor=${v#3.}
    wheel=$(ls "$dist"/"$release_python_dist"-"$version"-cp3"${minor%t}"-cp3"$minor"-manylinux_2_31_x86_64.whl) ||
      die "no x86_64 wheel for Python $v"
    python=$(release_python_bin "$v")
    [ -x "$python" ] || die "no Python $v interpreter to test its wheel with"
    venv=$work/venv-$v
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    tests=(tests/python/test_wheel.py tests/python/test_locks.py tests/python/test_exit.py tests/python/test_tls.py -x)
    case $v in "${release_python_versions[0]}" | "$newest" | *t) ;; *) tests+=(-k "$release_timer_tls_tests") ;; esac
    gil=()
    if [ "$v" = 3.14t ]; then
      "$venv/bin/python" -m pip install -q -r "$repo/tests/python/requirements.txt" >/dev/null ||
        die "installing the Python suite's requirements into the $v venv failed"
      # The green-thread libraries where they have a free-threaded wheel (eventlet; not gevent):
      # their tests skip, naming it, what is missing (as scripts/test-python.sh does).
      grep -v '^#' "$repo/tests/python/requirements-green.txt" | while read -r req; do
        [ -z "$req" ] || "$venv/bin/python" -m pip install -q --only-binary=:all: "$req" >/dev/null 2>&1 ||
          log "Python $v: $req has no free-threaded wheel; its tests skip"
      done
      tests=(tests/python)
      gil=(PYTHON_GIL=0)
    else
      "$venv/bin/python" -m pip install -q pytest pytest-timeout redis auditwheel >/dev/null
    fi
    "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
    log "Python $v: $(basename "$wheel")"
    if [ "$v" = 3.14t ]; then
      env -u PYTHON_GIL "$venv/bin/python" -W error -c '
import sys, rlock
assert not sys._is_gil_enabled(), "importing rlock turned the GIL on"' ||
        die "the cp314t module does not declare that it runs without the GIL"
      log "Python $v: the GIL stays off after import rlock"
    fi
    (cd "$repo" && env "${gil[@]}" RLOCK_TEST_WHEEL="$wheel" RLOCK_TEST_RELEASE=1 RLOCK_REQUIRE_CLI=0 \
      "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" \
      "${tests[@]}") || die "the tests failed with the Python $v wheel"
  done
  for arch in "${arches[@]}"; do
    for wheel in "$dist"/"$release_python_dist"-"$version"-cp3*-manylinux_2_31_"$arch".whl; do
      tmp=$(mktemp -d)
      python3 -m zipfile -e "$wheel" "$tmp"
      so=$(ls "$tmp"/rlock/_native.*.so)
      check_elf "$so" "$arch" '^PyInit__native$' >/dev/null
      [ -z "$(ls -d "$tmp"/*.libs 2>/dev/null)" ] || die "$wheel carries grafted libraries: $(ls "$tmp"/*.libs)"
      rm -rf "$tmp"
    done
    log "$arch wheels: modules for $arch, glibc <= 2.31, only PyInit__native exported, no libssl"
  done
  # What PyPI's upload checks: the metadata, and a long description that renders.
  "$(release_tools_venv)/bin/twine" check --strict "$dist"/"$release_python_dist"-"$version"* \
    >"$work/twine.log" 2>&1 || die "twine check refused the wheels or the sdist; see $work/twine.log"
  log "wheels and sdist: twine check --strict passed ($(grep -c PASSED "$work/twine.log") files)"
  # PyPI also refuses a classifier that is not in its list (trove-classifiers).
  "$(release_tools_venv)/bin/python" - "$work/PKG-INFO" <<'PY' || die "the metadata has classifiers PyPI does not know"
import sys
from email.parser import Parser

from trove_classifiers import classifiers

meta = Parser().parse(open(sys.argv[1], encoding="utf-8"))
unknown = [c for c in meta.get_all("Classifier") or [] if c not in classifiers]
if unknown:
    sys.exit(f"unknown classifiers: {unknown}")
PY
}

# The cp39 wheel installed with pip into Debian 11's own Python 3.9 in the release root (glibc
# 2.31 really loads it), taking a lock on a server on the host's loopback.
verify_wheel_in_root() {
  local wheel
  wheel=$(ls "$dist"/"$release_python_dist"-"$version"-cp39-cp39-manylinux_2_31_x86_64.whl)
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
  "$venv/bin/python" -m pip install -q --force-reinstall --no-binary rlock-redis \
    "$dist/$release_python_dist-$version.tar.gz" >"$work/sdist-install.log" 2>&1 ||
    die "pip could not build and install the sdist; see $work/sdist-install.log"
  "$venv/bin/python" -c 'import rlock; print("sdist installed: rlock", rlock.__version__)'
  # Where a build needs what is missing, the error says what to install: hiredis hidden from
  # CMake here, and no C++ compiler.
  local src=$work/sdist-src out
  rm -rf "$src" && mkdir -p "$src" && tar -xzf "$dist/$release_python_dist-$version.tar.gz" -C "$src" --strip-components=1
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
  for stage in sdist wheels jar deb gomod musl; do
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
