#!/usr/bin/env bash
# Runs every test: installs what is missing, runs the static checks (scripts/lint.sh), builds
# with warnings as errors (CMakePresets.json: dev), runs the CTest suite (unit, integration,
# abi, cli, and the Go and Java bindings' suites), the Python suite against the installed wheel
# (with the cross-language test: CLI, Python, Go and Java processes on the same locks), the
# fault-injection catalog (tests/faults), the fault worker under valgrind memcheck, the
# Redisson interop tests (tests/redisson, JUnit
# with Redisson from Maven Central), the server matrix (scripts/test-servers.sh: the
# server-facing tests against Redis 6.0 and 8.0, Valkey 8.1 and 9.1), a smoke run of the benchmark harness and the fuzz targets,
# a build without TLS (scripts/test-notls.sh), the release artifacts built in a Debian 11 root
# and checked (scripts/build-release.sh --verify: wheels for CPython 3.9-3.14 and 3.14t, the sdist, the
# jar, the .deb, the Go module, musllinux wheels for CPython 3.11-3.14; needs root),
# then builds again with ASan/UBSan (unit and integration tests, then the fault cases marked
# 'sanitized') and with TSan (integration tests and the fault cases marked 'threads').
# This full run is what CI executes.
# Usage: scripts/test.sh [--quick]
#   --quick: the day-to-day lane: static checks, build, the CTest suite and pytest only (no
#            fault catalog, valgrind, Redisson interop, server matrix, bench smoke, fuzzing or
#            sanitizers).
#   RLOCK_SKIP_SANITIZERS=1 skips the sanitizer passes; RLOCK_FUZZ_SECONDS=N fuzzes each target
#   N s, default 30; RLOCK_SOAK_SECONDS=N runs the G1 soak N s, default 120;
#   RLOCK_FAULT_CYCLES=N cycles per criterion-1 fault class, 20000.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${RLOCK_JOBS:-2}
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
start=$SECONDS

# Each stage's wall time, printed as a table when the run ends, passed or not.
stage_names=()
stage_secs=()
current_stage=""
stage_start=$SECONDS
stage() {  # NAME DESCRIPTION: ends the stage before it and starts this one
  end_stage
  current_stage=$1
  stage_start=$SECONDS
  echo "== $2"
}
end_stage() {
  [ -n "$current_stage" ] || return 0
  stage_names+=("$current_stage")
  stage_secs+=($((SECONDS - stage_start)))
  current_stage=""
}
print_stage_table() {
  local rc=$? i failed=$current_stage total=$((SECONDS - start))
  end_stage
  echo
  echo "== stage times of scripts/test.sh${*:+ $*} (exit status $rc)"
  for i in "${!stage_names[@]}"; do
    printf '%6d s %4d:%02d  %s%s\n' "${stage_secs[$i]}" $((stage_secs[i] / 60)) \
      $((stage_secs[i] % 60)) "${stage_names[$i]}" \
      "$([ "$rc" != 0 ] && [ "${stage_names[$i]}" = "$failed" ] && echo "  <- failed here")"
  done
  printf '%6d s %4d:%02d  total\n' "$total" $((total / 60)) $((total % 60))
}
release_pid=""
on_exit() {
  local rc=$?
  if [ -n "$release_pid" ] && kill -0 "$release_pid" 2>/dev/null; then
    kill -- "-$release_pid" 2>/dev/null || true
  fi
  (exit "$rc")
  print_stage_table "$@"
}
trap 'on_exit "$@"' EXIT

stage install "installing the Debian packages that are missing (scripts/install-deps.sh)"
# Every package of the lane in one apt run: the release build below runs in the background, and
# two apt runs at once would fail on apt's lock.
if [ "$quick" = 1 ]; then
  "$root/scripts/install-deps.sh" swig default-jdk-headless maven clang-format-14 clang-tidy-14
else
  "$root/scripts/install-deps.sh" swig default-jdk-headless maven clang-format-14 clang-tidy-14 \
    nftables iproute2 valgrind clang libclang-rt-14-dev debootstrap curl qemu-user-static
fi
if ! command -v go >/dev/null; then
  echo "Go 1.22 or newer is needed for the Go binding (https://go.dev/dl); 'go' is not on PATH" >&2
  exit 1
fi

run_suite() {  # preset (CMakePresets.json), then extra ctest args
  local preset=$1; shift
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs" "$@"
}

stage lint "static checks (scripts/lint.sh)"
cmake --preset dev >/dev/null
"$root/scripts/lint.sh" "$root/build"

stage build+ctest "build (RelWithDebInfo, warnings as errors) and test, with the Go and Java bindings"
run_suite dev

stage python "Python: build the wheel, install it in a venv, run pytest against the installation"
# The C, Go and Java workers of the cross-language test were built by the CTest pass above.
export RLOCK_GO_WORKER=$root/build/bindings/go/rlock-contend
export RLOCK_C_WORKER=$root/build/tests/integration/rlock_it_worker
java_out=$root/build/bindings/java/maven
export RLOCK_JAVA_WORKER="java -cp $(ls "$java_out"/rlock-*.jar | head -n1):$java_out/test-classes io.rlock.CrossLanguageWorker"
export RLOCK_REQUIRE_CROSSLANG=1
RLOCK_WARNINGS_AS_ERRORS=ON "$root/scripts/test-python.sh"

if [ "$quick" = 1 ]; then
  echo "== quick lane passed in $((SECONDS - start)) s (scripts/test.sh without --quick runs everything)"
  exit 0
fi

# The release artifacts are built in the background while the catalog, the valgrind, Redisson
# and server matrix stages run: they need nothing from them, and those leave the cores idle for
# much of their time (leases running out, failovers). At idle priority the build only takes what
# they do not use; the catalog's liveness bounds add what its own measure of the machine says
# the load costs (docs/faults.md).
release_log=$root/build/release-build.log
echo "== release artifacts: building in the background (scripts/build-release.sh, log $release_log)"
# setsid: its own process group, so that a run that stops early stops all of it (on_exit).
setsid chrt --idle 0 nice -n 19 "$root/scripts/build-release.sh" >"$release_log" 2>&1 &
release_pid=$!
# Where the kernel groups tasks by session (autogroup), a new session gets a share of the cores
# equal to this run's whatever its priority: the build took half of them from the catalog's
# timed cases. Its group gets the lowest weight.
# Only once it leads its own session: before that, the group is this run's.
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
  lowered=0
  for _ in $(seq 50); do
    if [ "$(ps -o sid= -p "$release_pid" | tr -d ' ')" = "$release_pid" ]; then
      echo 19 >"/proc/$release_pid/autogroup" 2>/dev/null && lowered=1
      break
    fi
    sleep 0.02
  done
  [ "$lowered" = 1 ] ||
    echo "== could not lower the release build's autogroup priority; it shares the cores evenly"
fi

stage faults "fault-injection catalog (tests/faults): workers under injected faults, six checkers"
RLOCK_SOAK_SECONDS=${RLOCK_SOAK_SECONDS:-60} "$root/scripts/test-faults.sh" -q --durations=15

stage valgrind "valgrind memcheck over the fault worker (connections killed meanwhile): no errors, no definite leaks"
"$root/scripts/test-valgrind.sh" "$root/build"

stage redisson "Redisson interop: Redisson $(sed -n 's:.*<redisson.version>\(.*\)</redisson.version>.*:\1:p' tests/redisson/pom.xml) and rlock processes on the same locks"
"$root/scripts/test-redisson.sh"

stage servers "server matrix: Redis 6.0 and 8.0, Valkey 8.1 and 9.1 (Debian's packages, unpacked by scripts/servers.sh) under the server-facing tests"
"$root/scripts/test-servers.sh"

stage release "release artifacts: built in a Debian 11 root (scripts/build-release.sh, in the background since the catalog began), then checked"
if ! wait "$release_pid"; then
  tail -n 40 "$release_log"
  echo "the release build failed; its log: $release_log" >&2
  exit 1
fi
tail -n 25 "$release_log"
"$root/scripts/build-release.sh" --verify-only

stage bench-smoke "benchmark harness smoke (C contenders, 0.3 s each; bench/run.sh makes the real report)"
bash "$root/bench/run.sh" --smoke

stage fuzz "fuzz targets (libFuzzer + ASan/UBSan, ${RLOCK_FUZZ_SECONDS:=20} s each)"
RLOCK_FUZZ_SECONDS=$RLOCK_FUZZ_SECONDS "$root/scripts/test-fuzz.sh"

stage notls "build without TLS (RLOCK_TLS=OFF): rediss:// is refused as unsupported"
"$root/scripts/test-notls.sh"

if [ "${RLOCK_SKIP_SANITIZERS:-0}" != "1" ]; then
  stage asan "build and test with ASan + UBSan, then the fault cases marked 'sanitized' on that build"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite asan
  RLOCK_FAULT_WORKER=$root/build-asan/tests/faults/rlock-fault-worker RLOCK_FAULT_SANITIZED=1 \
    "$root/scripts/test-faults.sh" -q -m sanitized
  stage tsan "build and test the threaded parts with TSan, then the fault cases marked 'threads'"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  run_suite tsan
  RLOCK_FAULT_WORKER=$root/build-tsan/tests/faults/rlock-fault-worker RLOCK_FAULT_SANITIZED=1 \
    "$root/scripts/test-faults.sh" -q -m threads
fi
end_stage
echo "== all tests passed in $((SECONDS - start)) s"
