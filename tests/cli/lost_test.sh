#!/usr/bin/env bash
# Lost locks are reported on stderr, and the command's exit status still passes through:
# a --lease that runs out while the command runs (seen by the watchdog, while it runs), and a
# force-unlock found at release.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"

step "--lease 0.5 with a 1.5 s command: a warning while it runs, its status kept"
expect_code 5 "$RLOCK" exec --lease 0.5 "$name" -- sh -c 'sleep 1.5; echo command-end >&2; exit 5'
err_has "warning: lost the lock '$name'"
err_has "lease"
# The warning comes while the command still runs, not after it.
[ "$(head -n 1 "$work/err" | grep -c warning)" -eq 1 ] || fail "the warning came after the command ended"
[ "$(grep -c warning "$work/err")" -eq 1 ] || fail "the loss was reported more than once"

step "a force-unlock while the command runs is reported (at release at the latest)"
start_holder "$name"
expect_code 0 "$RLOCK" unlock --force "$name"
stop_holder
[ "$holder_code" -eq 0 ] || fail "the holder exited $holder_code, want its command's 0"
grep -q "warning: .*lost" "$holder_dir/err" || { cat "$holder_dir/err" >&2; fail "no lost-lock warning"; }
[ "$(field "$name" locked)" = "no" ] || fail "the lock is held"
echo "PASS $test_name"
