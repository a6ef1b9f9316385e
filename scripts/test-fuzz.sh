#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) in build-fuzz and runs
# each for RLOCK_FUZZ_SECONDS (default 30) from a copy of its seed corpus. Fails if any target
# finds a crash; its log and the reproducer are kept in build-fuzz/run/<target>/.
# Usage: scripts/test-fuzz.sh [target...]      (default: every target)
#        RLOCK_FUZZ_SECONDS=600 scripts/test-fuzz.sh fuzz_reply
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${RLOCK_JOBS:-2}
seconds=${RLOCK_FUZZ_SECONDS:-30}
build=$root/build-fuzz

"$root/scripts/install-deps.sh" clang libclang-rt-14-dev

# CMakePresets.json "fuzz": clang, RLOCK_BUILD_FUZZERS, warnings as errors; binary dir build-fuzz.
cmake --preset fuzz >/dev/null
if ! cmake --build "$build" -j "$jobs" --target rlock_fuzzers >"$build/build.log" 2>&1; then
  tail -n 40 "$build/build.log"
  exit 1
fi

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_url fuzz_names fuzz_reply)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

failed=()
for t in "${targets[@]}"; do
  work=$build/run/$t
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/corpus/"
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  if (cd "$work" && "$build/tests/fuzz/$t" "${dict[@]}" -max_total_time="$seconds" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 corpus >log 2>&1); then
    # The last status line ("#N DONE cov: ... ft: ... corp: ... exec/s: ...") and the runs.
    summary=$(sed -n 's/^#[0-9]*[[:space:]]*DONE[[:space:]]*//p' "$work/log" | tail -n1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
    echo "$t: ok, $runs runs in ${seconds}s; $summary"
  else
    echo "$t: FAILED (log and crash input in $work)"
    # The finding: the target's own message or the sanitizer's report, and the input.
    grep -E -A12 -m1 '^fuzz_|ERROR: |runtime error|SUMMARY' "$work/log" | grep -v '^    #[2-9][0-9]' || true
    grep -E '^(artifact_prefix|Base64)' "$work/log" || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
