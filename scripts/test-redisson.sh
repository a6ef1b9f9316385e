#!/usr/bin/env bash
# Runs tests/redisson: JUnit 5 tests in which Redisson (from Maven Central) and rlock processes
# (the Python peer on the installed wheel, the Go worker, the CLI) share locks on a throwaway
# redis-server, and on a 3-master Redis Cluster (tests/fixtures/cluster.sh); TlsInteropTest starts
# a TLS redis-server of its own. Needs what scripts/test.sh builds first: build/ (CLI, Go worker)
# and build/venv.
# Usage: scripts/test-redisson.sh [extra mvn args, e.g. -Dtest=RLockInteropTest]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/build/redisson
fixture=$out/redis
mkdir -p "$out"
cluster=$out/cluster
bash "$root/tests/fixtures/redis.sh" start "$fixture" >/dev/null
trap 'bash "$root/tests/fixtures/redis.sh" stop "$fixture"; bash "$root/tests/fixtures/cluster.sh" stop "$cluster"' EXIT
bash "$root/tests/fixtures/cluster.sh" start "$cluster" >/dev/null

export RLOCK_TEST_REDIS_URL
RLOCK_TEST_REDIS_URL=$(cat "$fixture/url")
export RLOCK_TEST_CLUSTER_SEEDS  # a 3-master cluster, for the cluster interop tests
RLOCK_TEST_CLUSTER_SEEDS=$(cat "$cluster/seeds")
export RLOCK_REPO=$root
export RLOCK_PYTHON=${RLOCK_PYTHON:-$root/build/venv/bin/python}
export RLOCK_GO_WORKER=${RLOCK_GO_WORKER:-$root/build/bindings/go/rlock-contend}
export RLOCK_CLI=${RLOCK_CLI:-$root/build/capi/cli/rlock}
rm -rf "$out/maven/surefire-reports"
mvn -B -q -Dstyle.color=never -f "$root/tests/redisson/pom.xml" test "-Drlock.build.dir=$out/maven" "$@"
