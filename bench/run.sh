#!/usr/bin/env bash
# The benchmark in one command: installs what it needs, builds, starts a throwaway redis-server,
# measures the baselines, runs every contender alone for each scenario and writes the report.
# See bench/README.md.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/run.sh [--smoke] [--seconds S] [--only CONTENDER,...] [--waiters N,...]
  --smoke      the C contenders only, 0.3 s per scenario; the report goes to build/bench/smoke/
               and must have a row per contender
  --seconds S  measured seconds per contender and scenario (default 10)
  --only LIST  run only these contenders (comma-separated); the baselines (ping,
               evalsha-ceiling) always run, since the targets refer to them
  --waiters N,...  the waiter counts of many-waiters (default 1000,10000; 100 with --smoke),
               each run on one lock and on 100 locks
environment:
  RLOCK_BENCH_BUILD  the CMake build directory to configure and build (default: build)
  RLOCK_BENCH_OUT    where a full run writes RESULTS.md and results/ (default: bench)
EOF
}

die() {
  echo "run.sh: $*" >&2
  exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# rlock-c-tls: rlock-c over TLS to the same server (hiredis-floor cannot: hiredis 0.14 has no
# TLS). rlock-c-nostats: rlock-c with its client's statistics off, to measure what they cost.
c_contenders=(rlock-c rlock-c-tls rlock-c-nostats hiredis-floor)
# Compared with rlock-c, so each of their scenarios runs right after rlock-c's run of it.
paired_with_reference=(rlock-c-tls rlock-c-nostats)
peer_contenders=(rlock-py redis-py python-redis-lock rlock-go redsync rlock-java redisson)
is_peer() { [[ " ${peer_contenders[*]} " == *" $1 "* ]]; }
# The scenarios each contender supports, in run order; a contender is not run for the others.
scenarios_of() {
  case "$1" in
    rlock-c) echo uncontended throughput handoff reconnect herd herd-fair watchdog memory \
      many-waiters semaphore latch leader ;;
    rlock-c-tls) echo uncontended throughput handoff reconnect ;;
    rlock-c-nostats) echo uncontended throughput ;;
    rlock-java) echo uncontended throughput handoff herd herd-fair many-waiters ;;
    redisson) echo uncontended throughput handoff herd herd-fair many-waiters semaphore latch ;;
    rlock-py | redis-py | rlock-go | redsync) echo uncontended throughput many-waiters ;;
    *) echo uncontended throughput ;;
  esac
}

smoke=0
seconds=""
only=""
waiter_counts=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --seconds) [ $# -ge 2 ] || die "--seconds needs a value"; seconds=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs a value"; only=$2; shift 2 ;;
    --waiters) [ $# -ge 2 ] || die "--waiters needs a value"; waiter_counts=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
if [ -z "$seconds" ]; then
  seconds=10
  [ "$smoke" -eq 0 ] || seconds=0.3
fi
[[ "$seconds" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$seconds" 'BEGIN { exit !(s > 0) }' ||
  die "--seconds must be a positive number, got '$seconds'"
if [ -z "$waiter_counts" ]; then
  waiter_counts=1000,10000
  [ "$smoke" -eq 0 ] || waiter_counts=100
fi
[[ "$waiter_counts" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  die "--waiters must be whole numbers separated by commas, got '$waiter_counts'"
IFS=, read -r -a waiter_counts <<< "$waiter_counts"
for n in "${waiter_counts[@]}"; do
  [ "$n" -ge 100 ] && [ "$n" -le 100000 ] || die "--waiters: each count must be 100 to 100000, got $n"
done

# The contenders to run, in report order.
contenders=("${c_contenders[@]}")
have_peers=0
[ "$smoke" -eq 1 ] || [ ! -f "$root/bench/peers.sh" ] || have_peers=1
[ "$have_peers" -eq 0 ] || contenders+=("${peer_contenders[@]}")
if [ -n "$only" ]; then
  IFS=, read -r -a wanted <<< "$only"
  [ ${#wanted[@]} -gt 0 ] || die "--only needs at least one contender"
  for w in "${wanted[@]}"; do
    [[ " ${c_contenders[*]} ${peer_contenders[*]} " == *" $w "* ]] ||
      die "--only: unknown contender '$w' (known: ${c_contenders[*]} ${peer_contenders[*]})"
    if is_peer "$w"; then
      [ "$smoke" -eq 0 ] || die "--only: --smoke runs the C contenders only, not '$w'"
      [ "$have_peers" -eq 1 ] || die "--only: $w needs bench/peers.sh, which is missing"
    fi
  done
  selected=()
  for c in "${contenders[@]}"; do
    [[ ",$only," == *",$c,"* ]] && selected+=("$c")
  done
  contenders=("${selected[@]}")
fi

build=${RLOCK_BENCH_BUILD:-$root/build}
work=$root/build/bench
venv=$work/venv
if [ "$smoke" -eq 1 ]; then
  outdir=$work/smoke
else
  outdir=${RLOCK_BENCH_OUT:-$root/bench}
fi
mkdir -p "$work" "$outdir"

echo "== installing and building" >&2
"$root/scripts/install-deps.sh"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import matplotlib' 2>/dev/null || "$venv/bin/pip" install -q matplotlib
py=$venv/bin/python
# -S with an existing cache keeps its generator and every other setting.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DRLOCK_BUILD_BENCH=ON >/dev/null
else
  cmake -S "$root" -B "$build" -G Ninja -DRLOCK_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
bench=$build/bench/c/rlock-bench

want_peers=0
for c in "${contenders[@]}"; do is_peer "$c" && want_peers=1; done
if [ "$want_peers" -eq 1 ]; then
  # Setup is all or nothing; a peer whose part did build still runs, and one that cannot run
  # fails on its own.
  bash "$root/bench/peers.sh" setup ||
    echo "run.sh: warning: bench/peers.sh setup failed; running the peers that can" >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-bench.XXXXXX")
cleanup() {
  bash "$root/tests/fixtures/redis.sh" stop "$tmp/redis" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
bash "$root/tests/fixtures/redis.sh" start "$tmp/redis" >&2
url=$(cat "$tmp/redis/url")
port=$(cat "$tmp/redis/port")

# The same server also listens for TLS (CONFIG SET, so plaintext and TLS contenders measure one
# server), with the test certificates; rlock-c-tls connects there and verifies it in full.
tls_url=""
start_tls() {
  local certs=$work/tls-certs tls_port
  bash "$root/tests/fixtures/tls-certs.sh" "$certs" || return
  for _ in $(seq 1 20); do
    tls_port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    if redis-cli -p "$port" CONFIG SET tls-cert-file "$certs/server.crt" \
        tls-key-file "$certs/server.key" tls-ca-cert-file "$certs/ca.crt" \
        tls-auth-clients no tls-port "$tls_port" | grep -qx OK; then
      tls_url="rediss://127.0.0.1:$tls_port?tls_ca_file=$certs/ca.crt"
      echo "redis-server TLS on port $tls_port" >&2
      return 0
    fi
  done
  echo "could not enable TLS on the redis-server" >&2
  return 1
}
for c in "${contenders[@]}"; do
  if [ "$c" = rlock-c-tls ]; then
    start_tls || die "TLS setup failed"
    break
  fi
done

raw=$work/raw-$(date -u +%Y%m%dT%H%M%SZ).jsonl
: > "$raw"
# Startup (a JVM, a Go binary) plus warm-up and the measured time, with room to spare.
limit=$(awk -v s="$seconds" 'BEGIN { printf "%d", 2 * s + 180 }')
# many-waiters also settles (up to a minute) and drains (up to two).
limit_waiters=$(awk -v s="$seconds" 'BEGIN { printf "%d", 2 * s + 360 }')
failures=()
# The shape of the run being measured, as the extra of a failure line (many-waiters runs the
# same contender at several shapes, and the report keeps each).
shape="{}"

# Records a failed run as a line the report shows as failed. Args: SCENARIO CONTENDER MESSAGE.
record_failure() {
  failures+=("$2/$1")
  "$py" -c 'import json, sys
print(json.dumps({"scenario": sys.argv[1], "contender": sys.argv[2], "failed": True,
                  "error": sys.argv[3][-2000:] or "exited non-zero without a message",
                  "extra": json.loads(sys.argv[4])}))' \
    "$1" "$2" "$3" "$shape" >> "$raw"
}

# Runs COMMAND..., which must print result lines for SCENARIO and CONTENDER only, and appends
# them to the raw file; a failure or stray output is recorded as a failure instead.
measure() {
  local scenario=$1 contender=$2
  shift 2
  echo "== $contender / $scenario$([ "$shape" = "{}" ] || echo " $shape")" >&2
  local problem=""
  if ! "$@" > "$tmp/out" 2> "$tmp/err"; then
    # A Go runtime crash (thread exhaustion in many-waiters) says why at the top of a goroutine
    # dump that can run to megabytes: keep its message rather than the dump's end.
    problem=$(grep -m 3 -E '^(fatal error|panic|runtime): ' "$tmp/err" || tail -c 2000 "$tmp/err")
    [ -n "$problem" ] || problem="exited non-zero without a message (timed out after ${limit}s?)"
  else
    problem=$("$py" - "$tmp/out" "$scenario" "$contender" <<'PY'
import json, sys
path, scenario, contender = sys.argv[1:]
lines = [l for l in open(path, encoding="utf-8", errors="replace") if l.strip()]
if not lines:
    print("printed no result")
for line in lines:
    try:
        r = json.loads(line)
        ok = (r["scenario"] == scenario and r["contender"] == contender
              and isinstance(r["value"], (int, float)) and isinstance(r["metric"], str)
              and isinstance(r["unit"], str))
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        print("printed something other than its result lines: " + line.strip()[:300])
        break
PY
    )
  fi
  if [ -n "$problem" ]; then
    echo "   failed:" >&2
    tail -n 5 <<< "$problem" | sed 's/^/   /' >&2
    record_failure "$scenario" "$contender" "$problem"
  else
    cat "$tmp/out" >> "$raw"
    cat "$tmp/out" >&2
  fi
}

# Redis's own limit for the acquire script: redis-benchmark sending it pipelined on random keys
# (the same owner each time, so repeats are re-entries: the same work as a first acquire).
ceiling() {
  local sha owner=00000000-0000-4000-8000-000000000000:1 rps requests
  # Each step checks its own status: errexit is off inside measure's `if`.
  sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$root/core/scripts/acquire.lua")") || return
  [[ "$sha" =~ ^[0-9a-f]{40}$ ]] || { echo "SCRIPT LOAD answered: $sha" >&2; return 1; }
  local args=(-h 127.0.0.1 -p "$port" -c 16 -P 16 -r 1024 --csv
              EVALSHA "$sha" 1 "bench:t:evalsha-ceiling:__rand_int__" 30000 "$owner")
  # A short first run warms up and sizes the measured one to last about --seconds.
  redis-benchmark -n 50000 "${args[@]}" > "$tmp/ceiling.csv" || return
  rps=$("$py" -c 'import csv, sys; print(list(csv.reader(open(sys.argv[1])))[1][1])' \
    "$tmp/ceiling.csv") || return
  requests=$(awk -v r="$rps" -v s="$seconds" 'BEGIN { n = int(r * s); print (n < 10000 ? 10000 : n) }')
  redis-benchmark -n "$requests" "${args[@]}" > "$tmp/ceiling.csv" || return
  redis-cli -p "$port" --scan --pattern 'bench:t:evalsha-ceiling:*' |
    xargs -r redis-cli -p "$port" unlink > /dev/null || return
  "$py" - "$tmp/ceiling.csv" "$requests" <<'PY'
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1])))
row = dict(zip(rows[0], rows[1]))
print(json.dumps({"scenario": "throughput", "contender": "evalsha-ceiling",
                  "metric": "requests_per_s", "value": float(row["rps"]), "unit": "requests/s",
                  "extra": {"clients": 16, "pipeline": 16, "keys": 1024,
                            "requests": int(sys.argv[2]),
                            "p50_latency_ms": float(row["p50_latency_ms"])}}))
PY
}

measure ping ping timeout "$limit" "$bench" --contender ping --url "$url" --scenario ping \
  --seconds "$seconds"
measure throughput evalsha-ceiling ceiling
# The smoke run holds and waits on fewer locks; a full run uses the programs' defaults
# (10,000 locks, 1,000 waiters).
sizes=()
[ "$smoke" -eq 0 ] || sizes=(--locks 1000 --waiters 100)
# Runs contender $1 for scenario $2 with the extra arguments after them.
run_one() {
  local c=$1 scenario=$2 time_limit=$limit
  shift 2
  local args=(--url "$url" --scenario "$scenario" --seconds "$seconds" "$@")
  [ "$c" != rlock-c-tls ] || args=(--url "$tls_url" --admin-url "$url" "${args[@]:2}")
  [ "$scenario" != many-waiters ] || time_limit=$limit_waiters
  if is_peer "$c"; then
    measure "$scenario" "$c" timeout "$time_limit" bash "$root/bench/peers.sh" run "$c" "${args[@]}"
  else
    measure "$scenario" "$c" timeout "$time_limit" "$bench" --contender "$c" "${args[@]}"
  fi
}

# With rlock-c, rlock-c-tls and rlock-c-nostats run each scenario right after rlock-c's run of
# it: the machine's state drifts over a run, and they are compared with rlock-c.
paired=()
if [[ " ${contenders[*]} " == *" rlock-c "* ]]; then
  for p in "${paired_with_reference[@]}"; do
    [[ " ${contenders[*]} " != *" $p "* ]] || paired+=("$p")
  done
fi
for c in "${contenders[@]}"; do
  [[ " ${paired[*]} " != *" $c "* ]] || continue
  for scenario in $(scenarios_of "$c"); do
    case "$scenario" in
      watchdog | memory) run_one "$c" "$scenario" "${sizes[@]}" ;;
      many-waiters)
        # Each shape in a process of its own: threads and memory a run leaves behind (Go
        # keeps its threads) would hide the next one's.
        for n in "${waiter_counts[@]}"; do
          for locks in 1 100; do
            shape="{\"waiters\": $n, \"locks\": $locks}"
            run_one "$c" "$scenario" --waiters "$n" --locks "$locks"
            shape="{}"
          done
        done
        ;;
      *)
        run_one "$c" "$scenario"
        if [ "$c" = rlock-c ]; then
          for p in "${paired[@]}"; do
            [[ " $(scenarios_of "$p") " != *" $scenario "* ]] || run_one "$p" "$scenario"
          done
        fi
        ;;
    esac
  done
done

"$py" "$root/bench/report.py" "$raw" "$outdir"
echo "raw results: $raw" >&2
echo "report: $outdir/RESULTS.md" >&2

if [ "$smoke" -eq 1 ]; then
  for c in ping evalsha-ceiling "${contenders[@]}"; do
    grep -Eq "^\| (\*\*)?$c(\*\*)?( \([a-z0-9_]+\))? \| [0-9]" "$outdir/RESULTS.md" ||
      die "smoke: the report has no measured row for $c"
  done
  [ ${#failures[@]} -eq 0 ] || die "smoke: failed: ${failures[*]}"
  echo "smoke: ok" >&2
fi
for f in "${failures[@]}"; do
  # A failing C contender or baseline is a broken harness; a failing peer is only reported.
  is_peer "${f%%/*}" || die "failed: ${failures[*]}"
done
