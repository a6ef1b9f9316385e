#!/usr/bin/env bash
# A lost lock while the command runs does what --on-lost says: term (the default: SIGTERM, then
# SIGKILL after --kill-after), kill, or ignore (a warning, the command's status kept). A loss
# found only at release is reported. The command dies with rlock, even a SIGKILLed one.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"

step "default --on-lost term: --lease 0.5 with a 5 s command: SIGTERM while it runs, exit 74"
t=$(now)
expect_code 74 "$RLOCK" exec --lease 0.5 "$name" -- \
  sh -c 'trap "echo got-term >&2; exit 9" TERM; sleep 5 & wait'
err_has "lost the lock '$name'"
err_has "sent it SIGTERM"
err_has "got-term"
check "$(elapsed_since "$t")" "<" 4 || fail "the command was not stopped when the lease ran out"

step "--on-lost term with a command that ignores SIGTERM: SIGKILL after --kill-after 0.5"
t=$(now)
expect_code 74 "$RLOCK" exec --lease 0.5 --kill-after 0.5 "$name" -- \
  sh -c 'trap "" TERM; sleep 5 & wait; sleep 5'
err_has "sent SIGKILL"
check "$(elapsed_since "$t")" "<" 4 || fail "the command was not killed after --kill-after"

step "--on-lost kill: SIGKILL at once, exit 74"
t=$(now)
expect_code 74 "$RLOCK" exec --lease 0.5 --on-lost kill "$name" -- sh -c 'sleep 5'
err_has "sent it SIGKILL"
check "$(elapsed_since "$t")" "<" 4 || fail "the command was not killed when the lease ran out"

step "--on-lost ignore: a warning while it runs, its status kept"
expect_code 5 "$RLOCK" exec --lease 0.5 --on-lost ignore "$name" -- \
  sh -c 'sleep 1.5; echo command-end >&2; exit 5'
err_has "warning: lost the lock '$name'"
err_has "lease"
# The warning comes while the command still runs, not after it.
[ "$(head -n 1 "$work/err" | grep -c warning)" -eq 1 ] || fail "the warning came after the command ended"
[ "$(grep -c warning "$work/err")" -eq 1 ] || fail "the loss was reported more than once"

step "bad --on-lost and --kill-after values are usage errors"
expect_code 64 "$RLOCK" exec --on-lost stop "$name" -- true
err_has "--on-lost must be term, kill or ignore, got 'stop'"
expect_code 64 "$RLOCK" exec --kill-after -1 "$name" -- true
err_has "--kill-after must not be negative"

step "a force-unlock while the command runs is reported (at release at the latest)"
start_holder "$name"
expect_code 0 "$RLOCK" unlock --force "$name"
stop_holder
[ "$holder_code" -eq 0 ] || [ "$holder_code" -eq 74 ] ||
  fail "the holder exited $holder_code, want 0 (found at release) or 74 (found by a renewal)"
grep -q "lost" "$holder_dir/err" || { cat "$holder_dir/err" >&2; fail "no lost-lock message"; }
[ "$(field "$name" locked)" = "no" ] || fail "the lock is held"

step "the command dies with rlock: SIGKILL to rlock kills the command at once"
start_holder "$name"
child=$(cat "$holder_dir/child")
# Running: its /proc entry exists and is no zombie (a killed orphan may wait a while for a
# reaper, and kill -0 succeeds on a zombie).
running() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
running "$child" || fail "the command is not running"
kill -KILL "$holder_pid"
for _ in $(seq 1 40); do running "$child" || break; sleep 0.05; done
if running "$child"; then
  kill -KILL "$child"
  fail "the command outlived a SIGKILLed rlock"
fi
wait "$holder_pid" 2>/dev/null || true
echo "PASS $test_name"
