#!/usr/bin/env bash
# Command line handling: --help, --version, every usage error (exit 64, a message naming the
# problem, nothing run), unreachable or refusing Redis (exit 69).
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"
ran="$work/ran"

step "--help documents the commands and exit codes"
expect_code 0 "$RLOCK" --help
for text in "usage: rlock exec" "rlock status" "rlock unlock --force" "rlock list" "rlock watch" \
            "--match PATTERN" "--json" "--interval SECONDS" "JSON Lines" "surrogateescape" "RLOCK_URL" \
            "Exit status" "64" "69" "70" "75" "126" "127" "128+N" "lost"; do
  out_has "$text"
done
expect_code 0 "$RLOCK" exec --help
out_has "usage: rlock exec"

step "--version matches version.h"
header="$(dirname "$0")/../../capi/include/rlock/version.h"
version=$(awk '/#define RLOCK_VERSION_(MAJOR|MINOR|PATCH) / { v = v (v == "" ? "" : ".") $3 }
               END { print v }' "$header")
expect_code 0 "$RLOCK" --version
[ "$(cat "$work/out")" = "rlock $version" ] || fail "--version printed '$(cat "$work/out")', want 'rlock $version'"

# usage_error "problem text" ARGS...: exit 64, the message on stderr, the usage, nothing run.
usage_error() {
  local problem=$1; shift
  rm -f "$ran"
  expect_code 64 "$RLOCK" "$@"
  err_has "rlock: "
  err_has "$problem"
  err_has "usage: rlock exec"
  [ ! -s "$work/out" ] || fail "usage error printed to stdout: $*"
  [ ! -e "$ran" ] || fail "the command ran despite a usage error: $*"
}

step "usage errors exit 64 and name the problem"
usage_error "missing command"
usage_error "unknown command 'frobnicate'" frobnicate "$name"
usage_error "unknown option '--bogus'" --bogus
usage_error "unknown option '--bogus'" exec --bogus "$name" -- touch "$ran"
usage_error "unknown option '-x'" exec -x "$name" -- touch "$ran"
usage_error "missing lock NAME" exec -- touch "$ran"
usage_error "missing lock NAME" exec
usage_error "missing '--'" exec "$name" touch "$ran"
usage_error "missing '--'" exec "$name"
usage_error "missing command after '--'" exec "$name" --
usage_error "unexpected argument 'extra'" exec "$name" extra -- touch "$ran"
usage_error "the lock NAME is empty" exec "" -- touch "$ran"
usage_error "the lock NAME is empty" status ""
usage_error "option --wait needs a value" exec "$name" --wait
usage_error "option --url needs a value" status "$name" --url ""
usage_error "--wait needs a number of seconds" exec --wait abc "$name" -- touch "$ran"
usage_error "--wait needs a number of seconds" exec --wait "" "$name" -- touch "$ran"
usage_error "--wait must not be negative" exec --wait -1 "$name" -- touch "$ran"
usage_error "--wait must not be negative" exec --wait=-0.5 "$name" -- touch "$ran"
for bad in nan NaN inf infinity 0x10 1e3 " 1" "1.2.3" "." "5s"; do
  usage_error "--wait needs a number of seconds" exec --wait "$bad" "$name" -- touch "$ran"
done
usage_error "--wait is too large" exec --wait 99999999999999999999 "$name" -- touch "$ran"
usage_error "--wait is too large" exec --wait 9007199254741 "$name" -- touch "$ran"
usage_error "--lease is too large" exec --lease 1$(printf '0%.0s' {1..400}) "$name" -- touch "$ran"
usage_error "--lease must be more than 0" exec --lease 0 "$name" -- touch "$ran"
usage_error "--lease must be more than 0" exec --lease 0.0 "$name" -- touch "$ran"
usage_error "--lease needs a number of seconds" exec --lease nan "$name" -- touch "$ran"
usage_error "missing lock NAME" status
usage_error "unexpected argument 'other'" status "$name" other
usage_error "option --wait is not valid for 'status'" status --wait 1 "$name"
usage_error "option --force is not valid for 'exec'" exec --force "$name" -- touch "$ran"
usage_error "unlock needs --force" unlock "$name"
usage_error "option --force takes no value" unlock --force=yes "$name"
usage_error "missing lock NAME" unlock --force
usage_error "unexpected argument 'extra'" list extra
usage_error "unexpected argument 'extra'" list -- extra
usage_error "option --match needs a value" list --match ""
usage_error "option --match is not valid for 'status'" status --match "x*" "$name"
usage_error "option --json is not valid for 'exec'" exec --json "$name" -- touch "$ran"
usage_error "option --json is not valid for 'watch'" watch --json "$name"
usage_error "option --json takes no value" list --json=yes
usage_error "option --interval is not valid for 'list'" list --interval 1
usage_error "--interval must be more than 0" watch --interval 0 "$name"
usage_error "--interval needs a number of seconds" watch --interval soon "$name"
usage_error "missing lock NAME" watch
usage_error "the lock NAME is empty" watch ""
usage_error "unexpected argument 'other'" watch "$name" other

step "options before or after NAME, --opt=value, everything after -- is the command's"
expect_code 0 "$RLOCK" exec "$name" --wait 1 --lease=5 -- echo --wait x -- --lease
[ "$(cat "$work/out")" = "--wait x -- --lease" ] || fail "command arguments changed: $(cat "$work/out")"
expect_code 0 "$RLOCK" status "$name" --url "$RLOCK_URL"
expect_code 0 "$RLOCK" status --url="$RLOCK_URL" -- "$name"

step "unreachable Redis exits 69 with the library's message"
# Port 1 on loopback: nothing listens there, the connection is refused at once.
for args in "exec --url redis://127.0.0.1:1 $name -- touch $ran" \
            "exec --url redis://127.0.0.1:1 --wait 0 $name -- touch $ran" \
            "status --url redis://127.0.0.1:1 $name" \
            "unlock --force --url redis://127.0.0.1:1 $name" \
            "status --url unix://$work/no-such.sock $name" \
            "status --json --url redis://127.0.0.1:1 $name" \
            "list --url redis://127.0.0.1:1" \
            "watch --url redis://127.0.0.1:1 $name"; do
  # shellcheck disable=SC2086  # word splitting intended; no argument has spaces
  expect_code 69 "$RLOCK" $args
  err_has "rlock: "
  grep -q "[Rr]edis\|connect" "$work/err" || fail "no connection message for: $args"
  [ ! -e "$ran" ] || fail "the command ran without the lock"
done

step "\$RLOCK_URL is the default, --url overrides it"
expect_code 69 env RLOCK_URL=redis://127.0.0.1:1 "$RLOCK" status "$name"
expect_code 0 env RLOCK_URL=redis://127.0.0.1:1 "$RLOCK" status --url "$RLOCK_URL" "$name"

step "credentials refused exits 69"
port=$(cat "$RLOCK_TEST_REDIS_DIR/port")
expect_code 69 "$RLOCK" status --url "redis://nosuchuser:wrong@127.0.0.1:$port" "$name"
err_has "rlock: "

step "a malformed URL is a usage error"
expect_code 64 "$RLOCK" status --url "http://127.0.0.1:$port" "$name"
err_has "rlock: "
echo "PASS $test_name"
