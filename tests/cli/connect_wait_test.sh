#!/usr/bin/env bash
# exec --wait N also covers connecting: a Redis that starts late, or is still loading its data,
# is tried again within the wait (the command runs, exit 0); no Redis at all exits 69 after
# about the wait, not at once; refused credentials exit 69 at once, whatever the wait.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"
ran="$work/ran"
server=${RLOCK_TEST_REDIS_SERVER:-redis-server}
servers=()
stop_servers() {
  local pid
  for pid in "${servers[@]}"; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
  cleanup
}
trap stop_servers EXIT

# start_server PORT DIR [ARGS...]: a redis-server of this test in the background.
start_server() {
  local port=$1 dir=$2; shift 2
  mkdir -p "$dir"
  "$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/log" "$@" &
  servers+=("$!")
}

# until_answers PORT REPLY: waits until PING on PORT answers REPLY (PONG, or LOADING ...).
until_answers() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" ping 2>&1 | grep -q "^$2" && return 0
    sleep 0.02
  done
  fail "the server on port $1 never answered $2"
}

step "--help says that --wait covers connecting"
expect_code 0 "$RLOCK" --help
out_has "also covers connecting"

step "--wait 5 with Redis starting 1.5 s later: the command runs, exit 0"
port=$(free_port)
t=$(now)
"$RLOCK" exec --url "redis://127.0.0.1:$port" --wait 5 "$name" -- touch "$ran" \
  >"$work/out" 2>"$work/err" &
exec_pid=$!
background+=("$exec_pid")
sleep 1.5
start_server "$port" "$work/late"
set +e
wait "$exec_pid"
code=$?
set -e
took=$(elapsed_since "$t")
if [ "$code" -ne 0 ]; then
  cp "$work/late/log" "$work/out" 2>/dev/null || true
  fail "exec --wait 5 exited $code with Redis starting late (stdout shows the server's log)"
fi
[ -e "$ran" ] || fail "the command did not run"
[ ! -s "$work/err" ] || fail "retrying printed something"
check "$took" ">=" 1.5 && check "$took" "<" 5 || fail "exec took $took s (Redis came at 1.5 s)"
[ "$("$RLOCK" status --url "redis://127.0.0.1:$port" "$name" | sed -n 's/^locked: //p')" = "no" ] ||
  fail "the lock was left behind"
echo "   ran $took s after the start"

step "--wait 10 with Redis loading its data: the command runs once loading is done"
port=$(free_port)
rm -f "$ran"
start_server "$port" "$work/loading" --enable-debug-command local
until_answers "$port" PONG
redis-cli -p "$port" debug populate 2000 >/dev/null
redis-cli -p "$port" save >/dev/null
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "${servers[-1]}" 2>/dev/null || true
# 1 ms per key: about 2 s of LOADING, during which the server answers (every 1 KB read).
start_server "$port" "$work/loading" --key-load-delay 1000 \
  --loading-process-events-interval-bytes 1024
until_answers "$port" LOADING
t=$(now)
expect_code 0 "$RLOCK" exec --url "redis://127.0.0.1:$port" --wait 10 "$name" -- touch "$ran"
took=$(elapsed_since "$t")
[ -e "$ran" ] || fail "the command did not run"
redis-cli -p "$port" ping | grep -q PONG || fail "the server is not up"
echo "   ran $took s after the first LOADING answer"

step "--wait 1 and no Redis: exit 69 after about the wait, having tried again"
t=$(now)
expect_code 69 "$RLOCK" exec --url redis://127.0.0.1:1 --wait 1 "$name" -- touch "$ran.none"
took=$(elapsed_since "$t")
[ ! -e "$ran.none" ] || fail "the command ran without the lock"
err_has "tried to connect for --wait 1 s"
grep -q "[Rr]edis\|connect" "$work/err" || fail "no connection message"
# At most the wait, one connect timeout (2 s) and slack.
check "$took" ">=" 0.95 && check "$took" "<" 4 || fail "--wait 1 without Redis took $took s"
echo "   gave up after $took s"

step "refused credentials exit 69 at once, also with --wait"
port=$(cat "$RLOCK_TEST_REDIS_DIR/port")
t=$(now)
expect_code 69 "$RLOCK" exec --url "redis://nosuchuser:wrong@127.0.0.1:$port" --wait 5 "$name" \
  -- touch "$ran.none"
took=$(elapsed_since "$t")
[ ! -e "$ran.none" ] || fail "the command ran without the lock"
check "$took" "<" 1 || fail "refused credentials took $took s with --wait 5: they were retried"
err_has "rlock: "

step "SIGTERM while trying to connect exits 143 promptly"
"$RLOCK" exec --url redis://127.0.0.1:1 --wait 30 "$name" -- touch "$ran.none" \
  >"$work/out" 2>"$work/err" &
exec_pid=$!
background+=("$exec_pid")
sleep 0.5
t=$(now)
kill -TERM "$exec_pid"
set +e
wait "$exec_pid"
code=$?
set -e
[ "$code" -eq 143 ] || fail "SIGTERM while connecting: exit $code, want 143"
check "$(elapsed_since "$t")" "<" 1.5 || fail "SIGTERM while connecting was slow"
err_has "SIGTERM"
[ ! -e "$ran.none" ] || fail "the command ran after SIGTERM"
echo "PASS $test_name"
