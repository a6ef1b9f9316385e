#!/usr/bin/env bash
# Runs every static checker over the tree and fails if any finds something:
#   clang-format-14 (all C and C++), ruff check + ruff format --check, mypy (python/rlock strict,
#   tests/python, tests/faults and the scripts lighter), gofmt + go vet + staticcheck (bindings/go,
#   tests/faults/linearizability),
#   javac -Xlint:all -Werror (tests/redisson and bench/java; bindings/java compiles with it in the
#   java_junit test), clang-tidy-14 (.clang-tidy, over core/ and capi/), and function size
#   (lizard: no non-test function over 80 lines or cyclomatic complexity 25, except those listed
#   in scripts/lint-size-allowlist.txt), and that the Lua scripts touch only keys from KEYS
#   (scripts/check_script_keys.py, with its commented allowlist).
# Installs what it needs, only once: the Debian packages through scripts/install-deps.sh, ruff,
# mypy and lizard in build/venv-lint, staticcheck in build/go-tools. clang-tidy remembers the
# files it passed (build/lint-tidy), so a second run re-checks only what changed.
# Usage: scripts/lint.sh [build-dir]   (default build; configured here if it is not yet: clang-tidy
#                                       reads its compile_commands.json, cgo its pkgconfig/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=$(realpath -m "${1:-$root/build}")
jobs=${RLOCK_JOBS:-2}
venv=$root/build/venv-lint
tools=$root/build/go-tools
# The exporters' packages and Celery too: mypy checks rlock.prometheus, rlock.otel and rlock.celery
# against them.
python_tools=(ruff==0.17.6 mypy==2.4.1 lizard==1.24.3 prometheus-client==0.26.0 opentelemetry-api==1.45.2
  opentelemetry-sdk==1.45.2 celery==5.7.0)
staticcheck_version=v0.8.2

"$root/scripts/install-deps.sh" clang-format-14 clang-tidy-14 default-jdk-headless maven
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || { "$root/scripts/install-deps.sh" python3-venv && python3 -m venv "$venv"; }
fi
if [ "$(cat "$venv/.tools" 2>/dev/null)" != "${python_tools[*]}" ]; then
  "$venv/bin/python" -m pip install -q "${python_tools[@]}" redis pytest
  echo "${python_tools[*]}" >"$venv/.tools"
fi
if [ "$(cat "$tools/.staticcheck" 2>/dev/null)" != "$staticcheck_version" ]; then
  GOBIN=$tools GOTOOLCHAIN=local go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
  echo "$staticcheck_version" >"$tools/.staticcheck"
fi
if [ ! -f "$build/compile_commands.json" ] || [ ! -d "$build/pkgconfig" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DRLOCK_BUILD_TESTS=ON >/dev/null
fi
if ! grep -q '^CMAKE_EXPORT_COMPILE_COMMANDS:[A-Z]*=ON' "$build/CMakeCache.txt"; then
  cmake "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi

failed=()
check() {  # name, command...: runs one checker, notes its failure and goes on
  local name=$1; shift
  echo "-- $name"
  if ! "$@"; then
    echo "-- $name: FAILED"
    failed+=("$name")
  fi
}

# Tracked and new files (not the ignored build trees), by pattern.
files() { git ls-files --cached --others --exclude-standard -- "$@" | sort -u; }

clang_format() {
  files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' | xargs clang-format-14 --dry-run -Werror
}

# tests/python and tests/faults run separately: each has a conftest.py, which one mypy run
# would see as two modules of the same name.
mypy_all() {
  "$venv/bin/mypy" --strict python/rlock &&
    MYPYPATH=tests/python:tests/faults "$venv/bin/mypy" tests/python &&
    MYPYPATH=tests/faults "$venv/bin/mypy" tests/faults &&
    "$venv/bin/mypy" bench/python bench/report.py
}

go_checks() {
  local out
  out=$(gofmt -l bindings/go bench/go tests/faults/linearizability)
  [ -z "$out" ] || { echo "gofmt would change:"; echo "$out"; return 1; }
  (cd tests/faults/linearizability && GOTOOLCHAIN=local go vet ./... &&
    GOTOOLCHAIN=local "$tools/staticcheck" ./...) &&
  (cd bindings/go &&
    env PKG_CONFIG_PATH="$build/pkgconfig" GOTOOLCHAIN=local CGO_ENABLED=1 go vet -tags rlock_shared ./... &&
    env PKG_CONFIG_PATH="$build/pkgconfig" GOTOOLCHAIN=local CGO_ENABLED=1 \
      "$tools/staticcheck" -tags rlock_shared ./...)
}

# Maven, showing only javac's warnings and the errors (-q would hide which warning failed).
mvn_compile() {
  local log
  log=$(mvn -B -Dstyle.color=never "$@" 2>&1) && return 0
  grep -E '^\[(WARNING|ERROR)\] .*\.java' <<<"$log" || tail -n 20 <<<"$log"
  return 1
}

java_checks() {  # the poms pass -Xlint:all -Werror to javac
  local jar
  jar=$(ls "$build"/bindings/java/maven/rlock-[0-9]*.jar 2>/dev/null | head -n1 || true)
  mvn_compile -f tests/redisson/pom.xml test-compile -Drlock.build.dir="$build/lint-java/redisson" &&
    if [ -n "$jar" ]; then
      mvn_compile -f bench/java/pom.xml compile -Drlock.jar="$jar" \
        -Dbench.build.dir="$build/lint-java/bench"
    else
      echo "bench/java skipped: no binding jar in $build yet (the java CTest test makes it)"
    fi
}

# clang-tidy over our translation units in core/ and capi/. A file passed before is skipped while
# it, every header of ours, .clang-tidy and its compile command are unchanged.
clang_tidy() {
  local stamps=$build/lint-tidy headers todo=() f key
  mkdir -p "$stamps"
  headers=$(cat .clang-tidy $(files 'core/*.hpp' 'core/*.h' 'capi/*.h' 'capi/*.hpp') | sha256sum)
  for f in $(files 'core/*.cpp' 'capi/*.cpp'); do
    key=$( (echo "$headers"; cat "$f"; grep -F "/$f\"" "$build/compile_commands.json") | sha256sum)
    [ "$(cat "$stamps/${f//\//_}" 2>/dev/null)" = "$key" ] || todo+=("$f")
  done
  [ ${#todo[@]} -gt 0 ] || { echo "no file changed since the last clean run"; return 0; }
  echo "${#todo[@]} files"
  # Generated sources (scripts_data.cpp) must exist before clang-tidy reads the core's files.
  cmake --build "$build" --target rlock_core >/dev/null
  run-clang-tidy-14 -p "$build" -j "$jobs" -quiet "${todo[@]/#/$root/}" 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g' >"$stamps/log" || true
  if grep -E -A3 ': (warning|error):' "$stamps/log"; then
    return 1
  fi
  for f in "${todo[@]}"; do
    key=$( (echo "$headers"; cat "$f"; grep -F "/$f\"" "$build/compile_commands.json") | sha256sum)
    echo "$key" >"$stamps/${f//\//_}"
  done
}

# Function size over non-test code. Each offender must be listed in the allowlist as
# "<file> <function>"; lines starting with # are comments.
function_size() {
  local allow=scripts/lint-size-allowlist.txt report line file func bad=0 allowed=0
  report=$(files 'core/*.cpp' 'core/*.hpp' 'capi/*.cpp' 'capi/*.h' 'python/rlock/*.py' \
    'python/src/*.cpp' 'bindings/go/*.go' 'bindings/java/src/main/*.java' 'bench/*' |
    grep -E '\.(c|cpp|h|hpp|py|go|java)$' | grep -Ev '_test\.go$|^bindings/go/cmd/' |
    "$venv/bin/lizard" -C 25 -L 80 -w -f /dev/stdin 2>/dev/null || true)
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    file=${line%%:*}
    func=$(sed -E 's/^[^:]*:[0-9]+: warning: (.*) has [0-9]+ NLOC.*/\1/' <<<"$line")
    if grep -qxF "$file $func" <(sed -E 's/[[:space:]]*#.*//' "$allow"); then
      allowed=$((allowed + 1))
    else
      echo "$line"
      bad=1
    fi
  done <<<"$report"
  [ "$allowed" -eq 0 ] || echo "$allowed functions over the limit are listed in $allow"
  return $bad
}

check "clang-format" clang_format
check "ruff check" "$venv/bin/ruff" check .
check "ruff format" "$venv/bin/ruff" format --check .
check "mypy" mypy_all
check "go (gofmt, vet, staticcheck)" go_checks
check "java (javac -Xlint:all -Werror)" java_checks
check "clang-tidy" clang_tidy
check "function size (lizard -C 25 -L 80)" function_size
check "Lua keys from KEYS (scripts/check_script_keys.py)" "$venv/bin/python" scripts/check_script_keys.py

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]}"
  exit 1
fi
echo "lint: clean"
