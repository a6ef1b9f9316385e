#!/usr/bin/env bash
# The server matrix: the server-facing tests against each server our users run besides the
# default one (Redis 7.0, which the whole suite runs on): Redis 6.0 and 8.0, Valkey 8.1 and 9.1
# (scripts/servers.sh makes them runnable here). Per server: the C ABI and integration cases that
# talk to Redis (ctest), pytest's lock, semaphore, TLS, cluster, restricted-server and script-keys
# (every script touches only its KEYS) cases, the Redisson wake-up tests; on Redis 8.0 and
# Valkey 9.1 also a Cluster and a Sentinel failover case of the fault catalog. Every run goes on
# after a failure; the table at the end says which server failed what.
# Needs what scripts/test.sh builds first (build/, build/venv, the Go worker).
# Usage: scripts/test-servers.sh [NAME...]   (default: redis-6.0 redis-8.0 valkey-8.1 valkey-9.1)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(redis-6.0 redis-8.0 valkey-8.1 valkey-9.1)
servers=$(scripts/servers.sh "${names[@]}") || exit 1

# The ctest cases that exercise the server: every lock kind's scripts, renewal, expiry, errors
# and refusals, ACL and AUTH, restricted servers, TLS, pub/sub wake-ups, inspection and the
# cluster CLI.
ctest_cases='^(capi_bad_input\.H(5|10_UseAfterFree|12|17|23)|capi_bad_input\.ReplicaSync|integration_(scripts|transport|reentrancy|lease_expiry|watchdog|extend_by|extend_atomic|killed_holder|non_owner_release|script_flush|pubsub_kill|auth|auth_at_creation|force_unlock|names|fenced|spin|lock_kinds|non_reentrant|read_write|semaphore|latch|election|inspect|key_prefix|events|tls|tls_mutual|tls_verify|restricted)|cli_list_cluster)$'
pytest_files=(tests/python/test_locks.py tests/python/test_semaphore.py tests/python/test_tls.py
  tests/python/test_cluster.py tests/python/test_restricted.py tests/python/test_script_keys.py)
export RLOCK_GO_WORKER=${RLOCK_GO_WORKER:-$root/build/bindings/go/rlock-contend}

logs=$root/build/server-matrix
mkdir -p "$logs"
results=()
parts=()
start_part() {  # SERVER PART COMMAND...: runs one part in the background, its output in a log
  local server=$1 part=$2
  shift 2
  ( start=$SECONDS; "$@" >"$logs/$server-$part.log" 2>&1; rc=$?
    echo "$rc $((SECONDS - start))" >"$logs/$server-$part.rc" ) &
  parts+=("$server $part $!")
}
finish_parts() {  # waits for the parts started, records each, shows a failed part's output
  local p server part pid rc took
  for p in "${parts[@]}"; do
    read -r server part pid <<<"$p"
    wait "$pid"
    read -r rc took <"$logs/$server-$part.rc"
    if [ "$rc" -ne 0 ]; then
      echo "-- $server: $part FAILED (exit $rc); the end of $logs/$server-$part.log:"
      tail -n 150 "$logs/$server-$part.log"
    fi
    results+=("$(printf '%-11s %-17s %-5s %4ss' "$server" "$part" "$([ "$rc" -eq 0 ] && echo pass || echo FAIL)" "$took")")
  done
  parts=()
}

# The parts of one server run side by side: each starts servers of its own on free ports, and
# they mostly wait on the network.
while read -r name dir version; do
  echo "== $name ($version): $dir/redis-server"
  export PATH=$dir:$PATH
  start_part "$name" ctest ctest --test-dir build -j2 --timeout 120 --output-on-failure -R "$ctest_cases"
  start_part "$name" pytest build/venv/bin/python -m pytest -q -p no:cacheprovider --timeout 300 \
    "${pytest_files[@]}"
  start_part "$name" redisson scripts/test-redisson.sh -Dtest='WakeUpInteropTest'
  finish_parts
  case $name in
    # The failover cases run alone: C2 bounds the resumption at 5 s after the kill, and with
    # the other parts beside it the sentinels' promotion came late enough to miss it.
    redis-8.* | valkey-9.*)
      start_part "$name" failover scripts/test-faults.sh -q -k 'test_cluster_locks_in_many_slots or (C2 and stop)'
      finish_parts ;;
  esac
  PATH=${PATH#"$dir:"}
done <<<"$servers"

echo "== server matrix (logs in $logs)"
printf '%s\n' "${results[@]}"
! printf '%s\n' "${results[@]}" | grep -q ' FAIL '
