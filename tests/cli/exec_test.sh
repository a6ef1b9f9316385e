#!/usr/bin/env bash
# rlock exec: exit status passthrough, 128+signal, 126/127, arguments/stdin/environment passed
# on, the lock held while the command runs (status fields) and released afterwards.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"

expect_unlocked() {
  [ "$(field "$name" locked)" = "no" ] || fail "the lock is still held after: $1"
}

step "exit status passthrough"
for status in 0 3 42 255; do
  expect_code "$status" "$RLOCK" exec "$name" -- sh -c "exit $status"
  [ ! -s "$work/out" ] && [ ! -s "$work/err" ] || fail "rlock printed something for exit $status"
  expect_unlocked "exit $status"
done

step "killed by a signal -> 128+signal"
expect_code 137 "$RLOCK" exec "$name" -- sh -c 'kill -KILL $$'
expect_code 143 "$RLOCK" exec "$name" -- sh -c 'kill -TERM $$'
expect_code 134 "$RLOCK" exec --lease 10 "$name" -- sh -c 'kill -ABRT $$'
expect_unlocked "a signal"

step "command not found -> 127, not executable -> 126, the lock released"
expect_code 127 "$RLOCK" exec "$name" -- rlock-no-such-command-xyz arg
err_has "rlock-no-such-command-xyz"
expect_unlocked "127"
expect_code 127 "$RLOCK" exec "$name" -- "$work/missing/cmd"
printf '#!/bin/sh\necho should not run\n' > "$work/not-executable"
chmod 644 "$work/not-executable"
expect_code 126 "$RLOCK" exec "$name" -- "$work/not-executable"
err_has "not-executable"
expect_unlocked "126"
expect_code 126 "$RLOCK" exec "$name" -- "$work"

step "arguments, stdin, stdout and environment reach the command"
expect_code 0 "$RLOCK" exec "$name" -- printf '[%s]' 'a b' '' '*' '--' '$HOME'
[ "$(cat "$work/out")" = '[a b][][*][--][$HOME]' ] || fail "arguments changed: $(cat "$work/out")"
run sh -c 'echo from-stdin | "$1" exec "$2" -- cat' sh "$RLOCK" "$name"
[ "$code" -eq 0 ] && [ "$(cat "$work/out")" = "from-stdin" ] || fail "stdin not passed: $(cat "$work/out")"
expect_code 0 env RLOCK_CLI_TEST_VAR=xyz "$RLOCK" exec "$name" -- sh -c 'echo "$RLOCK_CLI_TEST_VAR"'
[ "$(cat "$work/out")" = "xyz" ] || fail "environment not passed"

step "the command does not inherit rlock's Redis connections"
expect_code 0 "$RLOCK" exec "$name" -- sh -c 'ls -l /proc/self/fd/'
if grep -q "socket:" "$work/out"; then fail "a socket leaked into the command"; fi

step "status while exec holds the lock (watchdog lease)"
expect_code 0 "$RLOCK" exec "$name" -- "$RLOCK" status "$name"
out_has "name: $name"
out_has "locked: yes"
out_has "hold count: 1"
owner=$(sed -n 's/^owner: //p' "$work/out")
[[ "$owner" =~ ^[0-9a-f-]{36}:[0-9]+$ ]] || fail "owner '$owner' is not <uuid>:<thread-id>"
ttl=$(sed -n 's/^ttl: \([0-9.]*\) s$/\1/p' "$work/out")
check "$ttl" ">" 20 && check "$ttl" "<=" 30 || fail "watchdog ttl '$ttl' not in (20, 30]"
expect_unlocked "status"
expect_code 0 "$RLOCK" status "$name"
[ "$(cat "$work/out")" = "$(printf 'name: %s\nlocked: no' "$name")" ] || fail "unlocked status: $(cat "$work/out")"

step "status with --lease 5"
expect_code 0 "$RLOCK" exec --lease 5 "$name" -- "$RLOCK" status "$name"
ttl=$(sed -n 's/^ttl: \([0-9.]*\) s$/\1/p' "$work/out")
check "$ttl" ">" 3 && check "$ttl" "<=" 5 || fail "lease ttl '$ttl' not in (3, 5]"
expect_unlocked "--lease 5"

step "nested exec on the same name from the command is another owner: it waits (--wait 0 -> 75)"
expect_code 75 "$RLOCK" exec "$name" -- "$RLOCK" exec --wait 0 "$name" -- true
echo "PASS $test_name"
