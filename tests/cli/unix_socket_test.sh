#!/usr/bin/env bash
# The CLI over a unix:// URL (the fixture's RLOCK_TEST_REDIS_URL): exec, status, unlock.
source "$(dirname "$0")/lib.sh"
: "${RLOCK_TEST_REDIS_URL:?}"
export RLOCK_URL=$RLOCK_TEST_REDIS_URL
name="$prefix:lock"

step "exec and status over $RLOCK_URL"
# Bounded wait: a lock nobody holds must be had at once.
expect_code 0 "$RLOCK" exec --wait 5 "$name" -- "$RLOCK" status "$name"
out_has "locked: yes"
expect_code 0 "$RLOCK" status "$name"
out_has "locked: no"

step "unlock --force over $RLOCK_URL"
expect_code 1 "$RLOCK" unlock --force "$name"
echo "PASS $test_name"
