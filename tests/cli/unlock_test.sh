#!/usr/bin/env bash
# rlock unlock --force: exit 0 and the lock gone when it was locked, exit 1 when it was not.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"

step "not locked -> exit 1"
expect_code 1 "$RLOCK" unlock --force "$name"
out_has "not locked"

step "locked by another process -> deleted, exit 0, free for the next exec"
start_holder "$name" --lease 60
[ "$(field "$name" locked)" = "yes" ] || fail "not locked by the holder"
expect_code 0 "$RLOCK" unlock "$name" --force
out_has "unlocked"
out_has "$name"
[ "$(field "$name" locked)" = "no" ] || fail "still locked after unlock --force"
expect_code 0 "$RLOCK" exec --wait 0 "$name" -- true
expect_code 1 "$RLOCK" unlock --force "$name"
stop_holder

step "without --force -> usage error"
expect_code 64 "$RLOCK" unlock "$name"
err_has "--force"
echo "PASS $test_name"
