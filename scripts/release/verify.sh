# Checks the release artifacts (sourced by scripts/build-release.sh --verify): each stage file
# present defines verify_<stage>; this runs them, then the checks of ELF files that every stage
# shares. Needs $repo, $root, $dist, $work, $version.

# Highest GLIBC_x.y symbol version an ELF file asks for (objdump works for both architectures).
highest_glibc() {
  objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n1
}

# Fails unless an ELF file is for the machine, needs glibc 2.31 at most and exports only names
# matching a pattern.
check_elf() {
  local file=$1 arch=$2 exports=$3 machine glibc bad
  case $arch in x86_64) machine="Advanced Micro Devices X86-64" ;; aarch64) machine=AArch64 ;; esac
  readelf -h "$file" | grep -q "Machine: *$machine" || die "$file is not an $arch ELF file"
  glibc=$(highest_glibc "$file")
  [ "$(printf '%s\n' "$glibc" 2.31 | sort -V | tail -n1)" = 2.31 ] ||
    die "$file needs glibc $glibc, newer than 2.31"
  bad=$(nm -D --defined-only "$file" | awk '{print $NF}' | grep -Ev "$exports" || true)
  [ -z "$bad" ] || die "$file exports more than $exports: $(echo "$bad" | head -n5 | tr '\n' ' ')"
  if readelf -dW "$file" | grep -E 'NEEDED.*(libssl|libcrypto|libhiredis|libstdc\+\+)'; then
    die "$file needs a shared library that should have been linked in (above)"
  fi
}

# A redis-server on a free loopback port for the checks that take a lock; sets redis_port.
start_release_redis() {
  redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis_dir=$(mktemp -d)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
    --daemonize yes --pidfile "$redis_dir/redis.pid" >/dev/null
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
  die "the redis-server for the checks did not start"
}
stop_release_redis() {
  [ -n "${redis_dir:-}" ] && [ -f "$redis_dir/redis.pid" ] && kill "$(cat "$redis_dir/redis.pid")" 2>/dev/null
  rm -rf "${redis_dir:-/nonexistent}"
  redis_dir=
}

# Each x86_64 wheel in a venv of its own Python version: the wheel, lock, exit and TLS tests.
# The aarch64 wheels: ELF machine, glibc floor and exports of the module.
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
    [ "$arch" = x86_64 ] && continue
    for wheel in "$dist"/rlock-"$version"-cp3*-manylinux_2_31_"$arch".whl; do
      tmp=$(mktemp -d)
      python3 -m zipfile -e "$wheel" "$tmp"
      so=$(ls "$tmp"/rlock/_native.*.so)
      check_elf "$so" "$arch" '^PyInit__native$'
      [ ! -d "$tmp/rlock.libs" ] || die "$wheel carries grafted libraries: $(ls "$tmp/rlock.libs")"
      rm -rf "$tmp"
    done
    log "$arch wheels: AArch64 modules, glibc <= 2.31, only PyInit__native exported"
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
  start_release_redis
  in_root "$root" env PYTHONPATH=/build/wheel-check/site python3 -c "
import rlock, sys
client = rlock.Client('redis://127.0.0.1:$redis_port')
lock = client.lock('release-check')
assert lock.acquire(blocking=False)
assert lock.held()
lock.release()
client.close()
print('glibc', __import__('platform').libc_ver()[1], 'Python', sys.version.split()[0], 'rlock', rlock.__version__)
" || { stop_release_redis; die "the cp39 wheel did not take a lock in the bullseye root"; }
  stop_release_redis
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
  log "release artifacts verified"
}
