#!/usr/bin/env bash
# --wait: busy lock -> 75 (promptly for --wait 0, after about the wait otherwise), nothing run;
# a wait that succeeds when the holder lets go; SIGTERM/SIGINT cancel a wait -> 143/130 and
# leave no lock behind.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"
ran="$work/ran"

start_holder "$name"
holder_owner=$(field "$name" owner)
[ -n "$holder_owner" ] || fail "the holder does not show as owner"

step "--wait 0 on a held lock exits 75 promptly and runs nothing"
t=$(now)
expect_code 75 "$RLOCK" exec --wait 0 "$name" -- touch "$ran"
took=$(elapsed_since "$t")
check "$took" "<" 2 || fail "--wait 0 took $took s"
[ ! -e "$ran" ] || fail "the command ran without the lock"
err_has "$name"

step "--wait 0.3 exits 75 after about 0.3 s"
t=$(now)
expect_code 75 "$RLOCK" exec --wait 0.3 "$name" -- touch "$ran"
took=$(elapsed_since "$t")
check "$took" ">=" 0.28 && check "$took" "<" 2.5 || fail "--wait 0.3 took $took s"
[ ! -e "$ran" ] || fail "the command ran without the lock"
err_has "0.3"

# cancel_wait SIGNAL EXPECTED: a waiting exec gets SIGNAL -> EXPECTED, nothing ran, no lock left.
cancel_wait() {
  rm -f "$ran"
  "$RLOCK" exec "$name" -- touch "$ran" >"$work/out" 2>"$work/err" &
  local pid=$!
  background+=("$pid")
  sleep 0.4  # let it connect and start waiting
  local t
  t=$(now)
  kill -s "$1" "$pid"
  set +e
  wait "$pid"
  code=$?
  set -e
  [ "$code" -eq "$2" ] || fail "a wait cancelled by $1 exited $code, want $2"
  check "$(elapsed_since "$t")" "<" 2 || fail "cancelling the wait with $1 was slow"
  [ ! -e "$ran" ] || fail "the command ran after $1"
  err_has "SIG$1"
  [ "$(field "$name" owner)" = "$holder_owner" ] || fail "the holder lost the lock after $1"
}

step "SIGTERM while waiting exits 143, nothing left"
cancel_wait TERM 143
step "SIGHUP while waiting exits 129"
cancel_wait HUP 129
step "SIGINT while waiting exits 130 (job control on, so background jobs do not ignore SIGINT)"
set -m
cancel_wait INT 130
set +m

step "a waiter gets the lock when the holder lets go"
( sleep 0.5; touch "$holder_dir/stop" ) &
t=$(now)
expect_code 0 "$RLOCK" exec --wait 10 "$name" -- touch "$ran"
took=$(elapsed_since "$t")
[ -e "$ran" ] || fail "the waiter did not run its command"
check "$took" "<" 3 || fail "the waiter took $took s after the holder let go at 0.5 s"
stop_holder
[ "$holder_code" -eq 0 ] || fail "the holder exited $holder_code"
[ "$(field "$name" locked)" = "no" ] || fail "a cancelled waiter left a lock behind"
echo "PASS $test_name"
