#!/usr/bin/env bash
# Builds the rlock wheel, makes it a manylinux wheel with auditwheel, installs it into a venv
# of its own and runs the pytest suite against that installation (not the source tree).
# Usage: scripts/test-python.sh [pytest args...]
#   RLOCK_CLI: the rlock command for the cross-language test (default build/capi/cli/rlock)
#   RLOCK_WARNINGS_AS_ERRORS=ON: compile the extension with -Werror (scripts/test.sh sets it)
#   PYTHON: the interpreter (default python3), e.g. a free-threaded python3.14t
#   RLOCK_TEST_VENV: the venv's directory (default build/venv); one per interpreter
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
python=${PYTHON:-python3}
venv=${RLOCK_TEST_VENV:-$root/build/venv}
dist=$root/build/dist
wheelhouse=$root/build/wheelhouse

if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  "$root/scripts/install-deps.sh" python3-venv python3-dev
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
"$venv/bin/python" -m pip install -q -r tests/python/requirements.txt
# gevent has no free-threaded wheel (and its source build needs the GIL): there the green tests
# skip what is missing, naming it; on a GIL build they are required (tests/python/helpers.py).
if [ "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("Py_GIL_DISABLED") or 0)')" = 1 ]; then
  grep -v '^#' tests/python/requirements-green.txt | while read -r req; do
    [ -z "$req" ] || "$venv/bin/python" -m pip install -q --only-binary=:all: "$req" 2>/dev/null ||
      echo "-- $req: no free-threaded wheel; its tests skip"
  done
else
  "$venv/bin/python" -m pip install -q -r tests/python/requirements-green.txt
fi

rm -rf "$dist" "$wheelhouse"
echo "-- building the wheel"
"$venv/bin/python" -m pip wheel -q --no-deps -w "$dist" \
  -C cmake.define.RLOCK_WARNINGS_AS_ERRORS="${RLOCK_WARNINGS_AS_ERRORS:-OFF}" "$root"
PATH="$venv/bin:$PATH" "$venv/bin/python" -m auditwheel repair -w "$wheelhouse" "$dist"/rlock_redis-*.whl \
  2>&1 | grep -E "Fixed-up wheel|Error|error" || true
wheel=$(ls "$wheelhouse"/rlock_redis-*manylinux*.whl)
echo "-- installing $(basename "$wheel")"
# A venv from before the rename to rlock-redis may hold the distribution "rlock", which shares
# the package directory (rlock warns on import; the tests make warnings errors).
"$venv/bin/python" -m pip uninstall -q -y rlock 2>/dev/null || true
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"

export RLOCK_TEST_WHEEL=$wheel
export RLOCK_CLI=${RLOCK_CLI:-$root/build/capi/cli/rlock}
export RLOCK_REQUIRE_CLI=${RLOCK_REQUIRE_CLI:-1}
"$venv/bin/python" -m pytest -p no:cacheprovider "$@"
