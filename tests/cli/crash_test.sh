#!/usr/bin/env bash
# A holder that dies without unlocking (SIGKILL): with --lease 1 its lock stays, with a TTL,
# and comes free after about the lease; with the watchdog its lock shows a TTL <= 30 s.
source "$(dirname "$0")/lib.sh"

# kill_holder: SIGKILLs rlock and then its orphaned command.
kill_holder() {
  kill -KILL "$holder_pid"
  wait "$holder_pid" 2>/dev/null || true
  kill -KILL "$(cat "$holder_dir/child")" 2>/dev/null || true
}

step "SIGKILLed --lease 1 holder: the lock keeps its TTL and frees itself after the lease"
name="$prefix:lease"
start_holder "$name" --lease 1
kill_holder
t=$(now)
[ "$(field "$name" locked)" = "yes" ] || fail "the lock vanished with its holder"
ttl=$(ttl_seconds "$name")
check "$ttl" ">" 0 && check "$ttl" "<=" 1 || fail "ttl '$ttl' not in (0, 1]"
expect_code 0 "$RLOCK" exec --wait 5 "$name" -- true
took=$(elapsed_since "$t")
check "$took" "<" 2.2 || fail "the next exec got the lock after $took s (lease 1 s)"
check "$took" ">=" "$(awk -v t="$ttl" 'BEGIN { print t - 0.3 }')" || fail "got the lock after $took s, before the TTL $ttl ran out"
echo "   got the lock $took s after the holder died (ttl was $ttl s)"

step "SIGKILLed watchdog holder: the lock shows a positive TTL <= 30 s"
name="$prefix:watchdog"
start_holder "$name"
kill_holder
[ "$(field "$name" locked)" = "yes" ] || fail "the lock vanished with its holder"
ttl=$(ttl_seconds "$name")
check "$ttl" ">" 0 && check "$ttl" "<=" 30 || fail "ttl '$ttl' not in (0, 30]"
sleep 0.3
ttl2=$(ttl_seconds "$name")
check "$ttl2" "<" "$ttl" || fail "ttl does not count down: $ttl then $ttl2"
expect_code 75 "$RLOCK" exec --wait 0 "$name" -- true
expect_code 0 "$RLOCK" unlock --force "$name"
echo "PASS $test_name"
