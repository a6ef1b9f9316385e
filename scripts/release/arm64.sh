# The aarch64 wheel and jar run, not only read (sourced by scripts/build-release.sh; verify.sh
# calls verify_arm64_run): an arm64 Python and an arm64 JVM, under qemu's user-mode emulation,
# take a lock and have a waiter woken through them over redis:// and rediss://.
# Needs: $repo, $dist, $work, $version, lib.sh sourced (jar.sh for jar_jdk_home).

# The arm64 run root: Debian 11's arm64 python3 and the JRE, unpacked only. No arm64 code runs to
# make it (no binfmt_misc needed): qemu-aarch64-static -L ROOT runs its binaries with the loader
# and libraries inside ROOT. Changing this list (or the recipe below) makes a new root.
arm64_run_packages=(python3 openjdk-11-jre-headless)

arm64_run_root_key() {
  printf '%s\n' "${arm64_run_packages[@]}" "$release_mirror" "arm64-run-recipe-2" | sha256sum | cut -c1-12
}

# Prints the root's path, making it first when it is missing (under a minute, once): debootstrap's
# first stage (--foreign) only downloads and unpacks the base; the .debs it fetched for the
# packages above are unpacked here with dpkg-deb. Absolute symlinks (the JRE's conf/security
# files point into /etc) are made relative, since under -L the kernel would resolve them on the
# host.
ensure_arm64_run_root() {
  need_root_user
  local key dir tmp deb
  key=$(arm64_run_root_key)
  dir=$release_cache/arm64-run-$key
  mkdir -p "$release_cache"
  exec 8>"$release_cache/.lock"
  flock 8
  if [ ! -f "$dir/.rlock-root-ready" ]; then
    command -v debootstrap >/dev/null || "$repo/scripts/install-deps.sh" debootstrap >&2
    tmp=$dir.tmp
    rm -rf "$tmp"
    log "making the arm64 run root (debootstrap --foreign, unpacked only) in $dir" >&2
    debootstrap --arch=arm64 --foreign --variant=minbase \
      --include="$(IFS=,; echo "${arm64_run_packages[*]}")" bullseye "$tmp" "$release_mirror" \
      >"$release_cache/arm64-run-debootstrap.log" 2>&1 ||
      die "debootstrap of the arm64 run root failed; see $release_cache/arm64-run-debootstrap.log"
    for deb in "$tmp"/var/cache/apt/archives/*.deb; do
      dpkg-deb -x "$deb" "$tmp" || die "unpacking $deb into the arm64 run root failed"
    done
    rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/usr/share/{doc,man,locale}
    python3 - "$tmp" <<'EOF' || die "making the arm64 run root's symlinks relative failed"
import os, sys
root = sys.argv[1]
for d, dirs, files in os.walk(root):
    for f in dirs + files:
        p = os.path.join(d, f)
        if os.path.islink(p) and os.readlink(p).startswith("/"):
            target = root + os.readlink(p)
            os.unlink(p)
            os.symlink(os.path.relpath(target, d), p)
EOF
    touch "$tmp/.rlock-root-ready"
    mv "$tmp" "$dir"
  fi
  flock -u 8
  echo "$dir"
}

# Runs an arm64 program of ROOT under qemu with a clean environment (ENV=VALUE words first).
arm64_run() {
  local root=$1 limit=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do envs+=(-E "$1"); shift; done
  env -i PATH=/usr/bin:/bin LANG=C.UTF-8 timeout --kill-after=10 "$limit" \
    qemu-aarch64-static -L "$root" "${envs[@]}" "$root$1" "${@:2}"
}

# The cp3N aarch64 wheel of the root's Python, installed as pip on another machine would for
# that platform (which also proves its tags install there), then tests/release/python/arm_check.py
# in the arm64 Python: a lock taken and released, a waiter woken, for each URL.
arm64_check_wheel() {
  local root=$1; shift
  local py minor wheel site=$work/arm64-wheel/site venv start=$SECONDS
  py=$(readlink "$root/usr/bin/python3")  # python3.9
  minor=${py#python3.}
  [[ $minor =~ ^[0-9]+$ ]] || die "cannot tell the arm64 run root's Python version from /usr/bin/python3 -> $py"
  wheel=$(ls "$dist"/*-"$version"-cp3"$minor"-cp3"$minor"-manylinux_2_31_aarch64.whl 2>/dev/null) ||
    die "no aarch64 wheel for Python 3.$minor in $dist (the arm64 run root's Python): run the wheels stage"
  [ "$(echo "$wheel" | wc -l)" = 1 ] || die "more than one aarch64 cp3$minor wheel in $dist: ${wheel//$'\n'/ }"
  venv=$(release_tools_venv)
  rm -rf "$work/arm64-wheel" && mkdir -p "$work/arm64-wheel"
  "$venv/bin/python" -m pip install -q --no-deps --no-compile --target "$site" \
    --platform manylinux_2_31_aarch64 --python-version "3.$minor" --implementation cp \
    --only-binary=:all: "$wheel" >"$work/arm64-wheel/pip.log" 2>&1 ||
    die "pip refused $(basename "$wheel") for manylinux_2_31_aarch64, CPython 3.$minor; see $work/arm64-wheel/pip.log"
  arm64_run "$root" 300 PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 \
    "$repo/tests/release/python/arm_check.py" "$version" "$@" >"$work/arm64-wheel/check.log" 2>&1 ||
    return
  sed 's/^/-- arm64 wheel: /' "$work/arm64-wheel/check.log"
  log "arm64 wheel: $(basename "$wheel") checked in $((SECONDS - start)) s"
}

# The release jar on the root's arm64 JVM: tests/release/java/WaiterCheck.java, compiled here
# against the jar, takes a lock and has a waiter woken, for each URL, with only the jar's
# native/linux-aarch64 library to load (an empty java.library.path).
arm64_check_jar() {
  local root=$1; shift
  local jar=$dist/rlock-$version.jar out=$work/arm64-jar java jdk start=$SECONDS
  [ -f "$jar" ] || die "no $jar: run the jar stage"
  java=$(ls "$root"/usr/lib/jvm/java-*-openjdk-arm64/bin/java | head -n1)
  [ -x "$java" ] || die "no java in the arm64 run root $root"
  jdk=$(jar_jdk_home)
  rm -rf "$out" && mkdir -p "$out/classes" "$out/empty" "$out/tmp"
  "$jdk/bin/javac" --release 11 -Xlint:all -Werror -cp "$jar" -d "$out/classes" \
    "$repo/tests/release/java/WaiterCheck.java" >"$out/javac.log" 2>&1 ||
    die "compiling tests/release/java/WaiterCheck.java against the jar failed; see $out/javac.log"
  # The temporary directory outside the cached root, where the jar's library is unpacked.
  arm64_run "$root" 600 "${java#"$root"}" -Djava.library.path="$out/empty" -Djava.io.tmpdir="$out/tmp" \
    -cp "$jar:$out/classes" WaiterCheck "$version" "$@" >"$out/check.log" 2>&1 || return
  sed 's/^/-- arm64 jar: /' "$out/check.log"
  log "arm64 jar: $(basename "$jar") on the arm64 JVM checked in $((SECONDS - start)) s"
}

# Run when aarch64 is built and the wheels or the jar are checked; `--verify-only --only arm64`
# runs this alone, on both.
verify_arm64_run() {
  local arm_root certs=$work/arm64-certs start=$SECONDS
  command -v qemu-aarch64-static >/dev/null || "$repo/scripts/install-deps.sh" qemu-user-static
  arm_root=$(ensure_arm64_run_root)
  log "arm64 run root ready ($((SECONDS - start)) s)"
  "$repo/tests/fixtures/tls-certs.sh" "$certs" >/dev/null 2>&1 || die "making test certificates failed"
  # A subshell, so its trap stops the server however it ends.
  (
    trap stop_redis EXIT
    start_redis "$certs"
    set -- "redis://127.0.0.1:$redis_port" "rediss://127.0.0.1:$redis_tls_port?tls_ca_file=$certs/ca.crt"
    if wants wheels || wants arm64; then
      arm64_check_wheel "$arm_root" "$@" ||
        die "under qemu-aarch64, the aarch64 wheel's check failed (exit $?; 124 is a timeout); see $work/arm64-wheel/check.log"
    fi
    if wants jar || wants arm64; then
      arm64_check_jar "$arm_root" "$@" ||
        die "under qemu-aarch64, the jar's check on the arm64 JVM failed (exit $?; 124 is a timeout); see $work/arm64-jar/check.log"
    fi
  ) || exit 1
  log "arm64: ran under qemu-aarch64 in $((SECONDS - start)) s"
}
