#!/usr/bin/env bash
# Signals sent to rlock while the command runs reach the command: SIGTERM to rlock -> the
# command gets SIGTERM -> exit 143; a command that traps a signal sees it once and its own exit
# status is passed on. The lock is released in every case.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"
# Job control on: background jobs of a script would otherwise start with SIGINT and SIGQUIT
# ignored, and rlock keeps ignored signals ignored (like nohup).
set -m

# start_exec CMD...: runs `rlock exec NAME -- CMD...` in the background; sets $pid.
start_exec() {
  rm -f "$work/started"
  "$RLOCK" exec "$name" -- "$@" >"$work/out" 2>"$work/err" &
  pid=$!
  background+=("$pid")
  wait_for_file "$work/started"
}
finish_exec() {
  set +e
  wait "$pid"
  code=$?
  set -e
}

step "SIGTERM to rlock -> the command dies of SIGTERM -> exit 143"
start_exec sh -c 'touch "$1"; exec sleep 30' sh "$work/started"
t=$(now)
kill -TERM "$pid"
finish_exec
[ "$code" -eq 143 ] || fail "exit $code, want 143"
check "$(elapsed_since "$t")" "<" 3 || fail "the command did not stop promptly"
[ "$(field "$name" locked)" = "no" ] || fail "the lock is held after the command died"

# A command that records every signal it gets and exits 7 once it has seen one.
recorder='
  for s in INT TERM HUP QUIT USR1 USR2; do trap "echo $s >> \"$2\"; seen=1" "$s"; done
  touch "$1"
  seen=0
  while [ "$seen" = 0 ]; do sleep 0.02; done
  sleep 0.3   # a duplicate would arrive meanwhile
  exit 7'

for sig in TERM INT HUP QUIT USR1 USR2; do
  step "SIG$sig reaches the command exactly once"
  rm -f "$work/got"
  start_exec bash -c "$recorder" bash "$work/started" "$work/got"
  kill -s "$sig" "$pid"
  finish_exec
  [ "$code" -eq 7 ] || fail "exit $code after SIG$sig, want the command's 7"
  [ "$(cat "$work/got" 2>/dev/null)" = "$sig" ] || fail "the command saw '$(cat "$work/got" 2>/dev/null)' for SIG$sig"
  [ "$(field "$name" locked)" = "no" ] || fail "the lock is held after SIG$sig"
done

step "several signals in a row are all passed on"
rm -f "$work/got"
start_exec bash -c 'trap "echo USR1 >> \"$2\"" USR1; trap "echo TERM >> \"$2\"; exit 0" TERM
  touch "$1"; while :; do sleep 0.02; done' bash "$work/started" "$work/got"
kill -USR1 "$pid"; sleep 0.2; kill -USR1 "$pid"; sleep 0.2; kill -TERM "$pid"
finish_exec
[ "$code" -eq 0 ] || fail "exit $code, want 0"
[ "$(tr '\n' ' ' < "$work/got")" = "USR1 USR1 TERM " ] || fail "the command saw: $(tr '\n' ' ' < "$work/got")"
echo "PASS $test_name"
