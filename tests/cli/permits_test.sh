#!/usr/bin/env bash
# exec --permits N: a distributed sem(1). 6 workers x 5 runs on a semaphore of 2 permits log
# enter/exit lines; at most 2 are ever inside at once and every run happens. A busy semaphore
# with --wait 0 exits 75; a SIGKILLed holder's permit (--lease 1) comes back after its lease;
# the keys are Redisson's RPermitExpirableSemaphore layout.
source "$(dirname "$0")/lib.sh"
name="$prefix:sem"
log="$work/log"
workers=6
runs=5

redis() { redis-cli -u "$RLOCK_URL" "$@"; }

step "$workers workers x $runs runs share 2 permits"
critical='echo "enter $1 $EPOCHREALTIME" >> "$2"; sleep 0.05; echo "exit $1 $EPOCHREALTIME" >> "$2"'
pids=()
for w in $(seq 1 "$workers"); do
  (
    for r in $(seq 1 "$runs"); do
      "$RLOCK" exec --permits 2 --wait 30 "$name" -- bash -c "$critical" bash "w$w.$r" "$log" \
        || exit 1
    done
  ) &
  pids+=("$!")
  background+=("$!")
done
for pid in "${pids[@]}"; do
  wait "$pid" || fail "a worker's rlock exec --permits failed"
done
# Lines are appended in time order by the commands themselves (O_APPEND), so replaying them
# gives how many were inside at each moment.
awk -v want=$((workers * runs)) '
  $1 == "enter" { inside++; if (inside > most) most = inside; enters++ }
  $1 == "exit"  { inside-- }
  END {
    if (most > 2) { print "up to " most " inside at once"; exit 1 }
    if (most < 2) { print "never 2 inside at once: the permits were not shared"; exit 1 }
    if (enters != want) { print "expected " want " runs, got " enters; exit 1 }
  }' "$log" || { cat "$log" >&2; fail "more than 2 commands ran at once, or runs are missing"; }
[ "$(redis GET "$name")" = "2" ] || fail "the permits did not all come back: $(redis GET "$name")"
[ "$(redis ZCARD "{$name}:timeout")" = "0" ] || fail "permit ids were left behind"

step "every permit taken: --wait 0 exits 75, --wait 0.3 waits then exits 75"
start_holder "$name" --permits 2
first=$holder_pid
first_dir=$holder_dir
start_holder "$name" --permits 2
expect_code 75 "$RLOCK" exec --permits 2 --wait 0 "$name" -- true
err_has "every permit of semaphore '$name' is taken (--wait 0)"
t=$(now)
expect_code 75 "$RLOCK" exec --permits 2 --wait 0.3 "$name" -- true
check "$(elapsed_since "$t")" ">=" 0.29 || fail "--wait 0.3 did not wait"
[ "$(redis ZCARD "{$name}:timeout")" = "2" ] || fail "the holders' permits are not in the set"
stop_holder
holder_pid=$first
holder_dir=$first_dir
stop_holder
[ "$holder_code" -eq 0 ] || fail "a holder exited $holder_code"

step "a SIGKILLed holder's permit (--lease 1) comes back after its lease"
start_holder "$name" --permits 2
live=$holder_pid
live_dir=$holder_dir
start_holder "$name" --permits 2 --lease 1
kill -KILL "$holder_pid"
wait "$holder_pid" 2>/dev/null || true
kill -KILL "$(cat "$holder_dir/child")" 2>/dev/null || true
t=$(now)
expect_code 0 "$RLOCK" exec --permits 2 --wait 5 "$name" -- true
took=$(elapsed_since "$t")
check "$took" "<" 2.5 || fail "the dead holder's permit came back after $took s (lease 1 s)"
check "$took" ">" 0.3 || fail "a permit came back after $took s, before the lease ran out"
echo "   the dead holder's permit came back $took s after it died (lease 1 s)"
holder_pid=$live
holder_dir=$live_dir
stop_holder

step "an existing semaphore keeps its count; --permits is checked"
expect_code 0 "$RLOCK" exec --permits 5 --wait 0 "$name" -- true
err_has "exists with 2 permits in all, not --permits 5"
expect_code 64 "$RLOCK" exec --permits 0 "$name" -- true
err_has "--permits needs a whole number from 1 to 2147483647, got '0'"
expect_code 64 "$RLOCK" exec --permits x "$name" -- true
expect_code 64 "$RLOCK" status --permits 2 "$name"
err_has "option --permits is not valid for 'status'"
redis DEL "$name" "{$name}:timeout" >/dev/null
echo "PASS $test_name"
