#!/usr/bin/env bash
# rlock elect: one leader among several, the term passed in --term-env and growing with each
# leader, the command stopped the moment leadership is lost, dies with a SIGKILLed rlock, and
# the documented exit statuses.
source "$(dirname "$0")/lib.sh"
name="$prefix:leader"

# start_candidate ID: `rlock elect` in the background; its command records the term it got,
# then waits for $work/stop-ID. Sets cand_pid[ID].
declare -A cand_pid
start_candidate() {
  local id=$1; shift
  "$RLOCK" elect --lease 1 --term-env TERM_NO "$@" "$name" -- sh -c '
    echo "$TERM_NO" > "$1/term-$2"; echo $$ > "$1/child-$2"
    trap "echo term >> \"$1/signals-$2\"; exit 7" TERM
    while [ ! -e "$1/stop-$2" ]; do sleep 0.02; done' sh "$work" "$id" \
    >"$work/out-$id" 2>"$work/err-$id" &
  cand_pid[$id]=$!
  background+=("${cand_pid[$id]}")
}
leaders() { ls "$work"/term-* 2>/dev/null | wc -l; }
leader_id() { ls "$work"/term-* | sed 's/.*term-//' | head -n 1; }
wait_leaders() {  # wait_leaders N: until N candidates have led
  for _ in $(seq 1 100); do [ "$(leaders)" -ge "$1" ] && return 0; sleep 0.05; done
  fail "$(leaders) candidates led, want $1"
}

step "three candidates: exactly one leads; its command gets the term"
for id in a b c; do start_candidate $id; done
wait_leaders 1
sleep 0.5
[ "$(leaders)" -eq 1 ] || fail "$(leaders) leaders at once"
first=$(leader_id)
t1=$(cat "$work/term-$first")
[ "$t1" -gt 0 ] || fail "term '$t1'"
[ "$(field "$name" token)" = "$t1" ] || fail "status token $(field "$name" token) is not the term $t1"

step "the leader's command ends: its rlock exits with the command's status and resigns at once"
t=$(now)
touch "$work/stop-$first"
set +e; wait "${cand_pid[$first]}"; c=$?; set -e
[ "$c" -eq 0 ] || fail "leader exited $c"
wait_leaders 2
check "$(elapsed_since "$t")" "<" 1 || fail "the next leader took $(elapsed_since "$t") s (resign should hand over at once)"
second=$(ls -t "$work"/term-* | head -n 1 | sed 's/.*term-//')
[ "$second" != "$first" ] || fail "the same candidate led twice"
t2=$(cat "$work/term-$second")
[ "$t2" -gt "$t1" ] || fail "term $t2 is not above $t1"

step "leadership lost (lock deleted): SIGTERM to the command, exit 74, the third takes over"
expect_code 0 "$RLOCK" unlock --force "$name"
set +e; wait "${cand_pid[$second]}"; c=$?; set -e
[ "$c" -eq 74 ] || fail "lost leader exited $c, want 74"
grep -q "lost leadership of '$name'" "$work/err-$second" || fail "no lost-leadership message"
grep -q term "$work/signals-$second" || fail "the command got no SIGTERM"
wait_leaders 3
third=$(ls -t "$work"/term-* | head -n 1 | sed 's/.*term-//')
t3=$(cat "$work/term-$third")
[ "$t3" -gt "$t2" ] || fail "term $t3 is not above $t2"

step "SIGKILL to the leader's rlock kills its command; a new candidate leads within the lease"
child=$(cat "$work/child-$third")
running() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
start_candidate d
sleep 0.2
t=$(now)
kill -KILL "${cand_pid[$third]}"
for _ in $(seq 1 40); do running "$child" || break; sleep 0.05; done
running "$child" && { kill -KILL "$child"; fail "the command outlived a SIGKILLed rlock"; }
wait_leaders 4
check "$(elapsed_since "$t")" "<" 3 || fail "takeover took $(elapsed_since "$t") s with --lease 1"
t4=$(cat "$work/term-d")
[ "$t4" -gt "$t3" ] || fail "term $t4 is not above $t3"
touch "$work/stop-d"
set +e; wait "${cand_pid[d]}"; c=$?; set -e
[ "$c" -eq 0 ] || fail "candidate d exited $c"

step "--wait runs out while another leads: exit 75, the command not run"
start_candidate e
wait_leaders 5
expect_code 75 "$RLOCK" elect --wait 0.3 "$name" -- touch "$work/ran"
err_has "not the leader of '$name' after --wait"
[ ! -e "$work/ran" ] || fail "the command ran without leadership"

step "a signal while campaigning: exit 128+N, nothing held"
"$RLOCK" elect "$name" -- touch "$work/ran" 2>"$work/err" &
p=$!
background+=("$p")
sleep 0.3
kill -TERM "$p"
set +e; wait "$p"; c=$?; set -e
[ "$c" -eq 143 ] || fail "exit $c after SIGTERM, want 143"
[ ! -e "$work/ran" ] || fail "the command ran"
touch "$work/stop-e"
wait "${cand_pid[e]}" || true
[ "$(field "$name" locked)" = "no" ] || fail "the lock is still held"

step "a name that is no lock: the campaign fails, exit 69"
redis_key="$prefix:string"
# redis_cmd ARGS...: one command on the fixture server (no redis-cli needed).
redis_cmd() {
  python3 - "$RLOCK_URL" "$@" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port or 6379))
args = [a.encode() for a in sys.argv[2:]]
s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
reply = s.recv(100)
assert not reply.startswith(b"-"), reply
PY
}
redis_cmd SET "$redis_key" x
expect_code 69 "$RLOCK" elect "$redis_key" -- true
err_has "campaign for leader of '$redis_key' ended"
err_has "not a lock"
redis_cmd DEL "$redis_key"

step "usage errors"
expect_code 64 "$RLOCK" elect --on-lost ignore "$name" -- true
err_has "--on-lost ignore is not for elect"
expect_code 64 "$RLOCK" elect --wait 0 "$name" -- true
err_has "--wait must be more than 0"
expect_code 64 "$RLOCK" elect --term-env "A-B" "$name" -- true
err_has "--term-env needs an environment variable name"
expect_code 64 "$RLOCK" elect "$name"
err_has "missing '--' before the command"
expect_code 64 "$RLOCK" exec --term-env X "$name" -- true
err_has "option --term-env is not valid for 'exec'"
echo "PASS $test_name"
