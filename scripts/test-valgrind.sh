#!/usr/bin/env bash
# Runs the fault worker under valgrind memcheck against a throwaway redis-server: fenced
# watchdog locks on a few contended names, with their lost-update counters and a fenced
# resource, while every command and pub/sub connection is killed now and then, then a clean
# shutdown. Fails on any memcheck error or definitely lost block (criterion 13 of the fault
# catalog; ASan/LSan cover the rest of the suite).
# Usage: scripts/test-valgrind.sh [build-dir]   (default build; its rlock-fault-worker is used)
#        RLOCK_VALGRIND_CYCLES=N cycles per thread (default 150)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
cycles=${RLOCK_VALGRIND_CYCLES:-150}
worker=$build/tests/faults/rlock-fault-worker
[ -x "$worker" ] || { echo "no $worker: build the tests first" >&2; exit 1; }
"$root/scripts/install-deps.sh" valgrind

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Not in a $(...) subshell: the server's pid must reach this shell's list, or cleanup misses it.
start_redis() {  # dir port
  redis-server --port "$2" --bind 127.0.0.1 --save "" --appendonly no --dir "$1" \
    >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && break; sleep 0.05; done
}
mkdir -p "$work/locks" "$work/resource" "$work/counters"
locks=$(free_port)
start_redis "$work/locks" "$locks"
resource=$(free_port)
start_redis "$work/resource" "$resource"

# Connections are killed while the worker runs: reconnects and resubscribes are exercised too.
(
  while sleep 0.5; do
    redis-cli -p "$locks" client kill type normal skipme yes >/dev/null 2>&1 || true
    redis-cli -p "$locks" client kill type pubsub skipme yes >/dev/null 2>&1 || true
  done
) &
pids+=($!)

status=0
valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --track-fds=no --log-file="$work/valgrind.log" \
  "$worker" loop --url "redis://127.0.0.1:$locks" --names v1,v2,v3 --kind fenced --threads 3 \
  --cycles "$cycles" --wait-ms 20000 --hold-us 200 --watchdog-lease-ms 2000 \
  --resource-url "redis://127.0.0.1:$resource" --counter-dir "$work/counters" \
  --log "$work/history.log" >"$work/worker.out" || status=$?
summary=$(tail -n1 "$work/worker.out" || true)
if [ "$status" -ne 0 ]; then
  echo "valgrind memcheck: FAILED (exit $status)"
  cat "$work/valgrind.log"
  exit 1
fi
echo "valgrind memcheck: no errors, no definite leaks ($summary)"
