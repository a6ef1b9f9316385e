# Helpers for the rlock CLI tests. Sourced by each *_test.sh; $1 is the rlock binary.
# Uses the fixture's TCP URL (RLOCK_TEST_REDIS_DIR/url); unix_socket_test.sh covers unix://.
set -euo pipefail

RLOCK=${1:?usage: $0 path/to/rlock}
: "${RLOCK_TEST_REDIS_DIR:?run through ctest (needs the redis fixture)}"
RLOCK_URL=$(cat "$RLOCK_TEST_REDIS_DIR/url")
export RLOCK_URL
test_name=$(basename "$0" .sh)
# Lock names are unique per run: the fixture server is shared with other tests.
prefix="rlock-cli-test:$test_name:$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/rlock-$test_name.XXXXXX")
background=()

cleanup() {
  local pid
  for pid in "${background[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($test_name): $*" >&2
  for f in "$work"/out "$work"/err; do
    [ -s "$f" ] && { echo "--- $(basename "$f"):" >&2; cat "$f" >&2; }
  done
  exit 1
}

step() { echo "-- $*"; }

# free_port: a loopback port nothing listens on, below the kernel's ephemeral range: a port in
# that range can be taken as the source port of any client's connection before a late server
# binds it (the server then exits with "address in use" and the test sees only refusals).
free_port() {
  local port low=32768 span
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  span=$(( low > 21024 ? low - 20000 : 1024 ))
  for _ in $(seq 1 50); do
    port=$(( (low > 21024 ? 20000 : 10000) + (RANDOM * 32768 + RANDOM) % span ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  fail "no free port"
}

# run CMD...: runs it with stdout/stderr in $work/out and $work/err; sets $code.
run() {
  set +e
  "$@" >"$work/out" 2>"$work/err"
  code=$?
  set -e
}

# expect_code N CMD...: runs CMD and checks its exit status.
expect_code() {
  local want=$1; shift
  run "$@"
  [ "$code" -eq "$want" ] || fail "expected exit $want, got $code from: $*"
}

out_has() { grep -qF -- "$1" "$work/out" || fail "stdout lacks '$1'"; }
err_has() { grep -qF -- "$1" "$work/err" || fail "stderr lacks '$1'"; }

# Seconds since the epoch with microseconds (bash 5).
now() { echo "$EPOCHREALTIME"; }
# elapsed_since T: seconds since T.
elapsed_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
# check A OP B for decimals, e.g. check "$t" "<" 1.5
check() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }

# wait_for_file PATH [SECONDS]: polls until PATH exists.
wait_for_file() {
  local deadline=$(( ${2:-10} * 20 )) i
  for (( i = 0; i < deadline; i++ )); do
    [ -e "$1" ] && return 0
    sleep 0.05
  done
  fail "timed out waiting for $1"
}

# field NAME FIELD: one field of `rlock status NAME` ("locked", "owner", "ttl", ...).
field() {
  "$RLOCK" status "$1" | sed -n "s/^$2: //p"
}

# ttl_seconds NAME: the TTL as a number (without " s").
ttl_seconds() { field "$1" ttl | sed 's/ s$//'; }

# start_holder NAME [exec options...]: runs `rlock exec NAME` in the background with a command
# that waits until $work/stop-NAME-ish file appears. Sets $holder_pid and $holder_dir.
start_holder() {
  local name=$1; shift
  holder_dir=$(mktemp -d "$work/holder.XXXXXX")
  "$RLOCK" exec "$@" "$name" -- sh -c 'echo $$ > "$1/child"; touch "$1/started";
    while [ ! -e "$1/stop" ]; do sleep 0.02; done' sh "$holder_dir" \
    >"$holder_dir/out" 2>"$holder_dir/err" &
  holder_pid=$!
  background+=("$holder_pid")
  wait_for_file "$holder_dir/started"
}

# stop_holder: lets the holder's command end; sets $holder_code.
stop_holder() {
  touch "$holder_dir/stop"
  set +e
  wait "$holder_pid"
  holder_code=$?
  set -e
}
