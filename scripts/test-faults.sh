#!/usr/bin/env bash
# Runs the fault-injection catalog (tests/faults, ids from FAULTS.md groups A-H): worker
# processes under injected faults, judged by the overlap, lost-update, fencing and history
# checkers. Needs the build tree's fault worker (or $RLOCK_FAULT_WORKER) and the venv with the
# installed wheel that scripts/test-python.sh makes (built here if missing).
# Usage: scripts/test-faults.sh [pytest args...]     e.g. -k A2, -m sanitized
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# C3 partitions network namespaces with nftables rules; gdb prints a hung worker's stacks.
"$root/scripts/install-deps.sh" nftables iproute2 gdb
venv=$root/build/venv
if ! "$venv/bin/python" -c "import rlock, redis, pytest_timeout" 2>/dev/null; then
  "$root/scripts/test-python.sh" -q tests/python/test_wheel.py
fi
# The linearizability checker (checker 6): its model's own tests, then the binary the suite
# runs (checkers.linearizability_binary would build it too, at the first case that needs it).
(cd tests/faults/linearizability && go test -count=1 ./... &&
  go build -o "${RLOCK_LIN_CHECKER:-$root/build/faults/linearizability}" .)
"$venv/bin/python" -m pytest -p no:cacheprovider --timeout 300 tests/faults "$@"
