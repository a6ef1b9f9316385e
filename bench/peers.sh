#!/usr/bin/env bash
# The peer contenders of the benchmark: the Python, Go and Java programs in bench/python,
# bench/go and bench/java, for rlock's own bindings and the libraries they are compared with.
#   peers.sh setup                     installs and builds them into build/bench/ (idempotent)
#   peers.sh run CONTENDER ARGS...     runs one: PROGRAM --contender CONTENDER ARGS...
# Contenders: rlock-py redis-py python-redis-lock rlock-go redsync rlock-java redisson.
# setup needs the main build in build/ (librlock, pkg-config file, Java binding jar).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/build/bench
venv=$out/venv
go_bin=$out/go/bench
java_out=$out/java
classpath_file=$java_out/classpath.txt
# The binding jar of the main build (its name carries the project version; the newest, should
# an older version's jar still lie beside it).
rlock_jar=$(ls -t "$root"/build/bindings/java/maven/rlock-[0-9]*.jar 2>/dev/null | head -n 1 || true)
rlock_jar=${rlock_jar:-$root/build/bindings/java/maven/rlock-VERSION.jar}
# many-waiters runs the Java contenders on virtual threads (Java 21+): a newer JDK beside the
# default 17 (the programs are compiled for 17 and reach virtual threads by reflection).
java_virtual=${RLOCK_BENCH_JAVA21:-$(ls -d /usr/lib/jvm/temurin-2[5-9]*/bin/java /usr/lib/jvm/*-2[1-9]*/bin/java 2>/dev/null | head -n 1 || true)}
contenders="rlock-py redis-py python-redis-lock rlock-go redsync rlock-java redisson"

die() {
  echo "peers.sh: $*" >&2
  exit 1
}

setup_python() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  # Only what is missing: other tools (the report's plotting) share this venv.
  "$venv/bin/python" -c 'import redis, redis_lock' 2>/dev/null ||
    "$venv/bin/pip" install -q redis python-redis-lock
  local wheel stamp
  wheel=$(ls -t "$root"/build/wheelhouse/rlock_redis-*manylinux*.whl 2>/dev/null | head -n 1 || true)
  if [ -n "$wheel" ]; then
    # pip keeps an installed version even when the wheel was rebuilt, so reinstall on change.
    stamp="$wheel $(stat -c '%s %Y' "$wheel")"
    if [ "$(cat "$venv/.rlock-wheel" 2>/dev/null)" != "$stamp" ]; then
      # A venv from before the rename may hold the distribution "rlock": it shares the package.
      "$venv/bin/pip" uninstall -q -y rlock 2>/dev/null || true
      "$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
      echo "$stamp" > "$venv/.rlock-wheel"
    fi
  elif ! "$venv/bin/python" -c 'import rlock' 2>/dev/null; then
    "$venv/bin/pip" install -q "$root"
  fi
}

setup_go() {
  [ -f "$root/build/pkgconfig/rlock-uninstalled.pc" ] ||
    die "build/pkgconfig/rlock-uninstalled.pc is missing: build the main tree first (cmake --build build)"
  mkdir -p "$out/go"
  (cd "$root/bench/go" &&
    PKG_CONFIG_PATH=$root/build/pkgconfig GOTOOLCHAIN=local go build -tags rlock_shared -o "$go_bin" .)
}

setup_java() {
  [ -f "$rlock_jar" ] ||
    die "$rlock_jar is missing; build it with: cmake --build build && (cd build && ctest -L java)"
  # Maven takes seconds even with nothing to do, so skip it when nothing changed.
  if [ -f "$classpath_file" ] && [ -d "$java_out/classes" ] &&
    [ -z "$(find "$root/bench/java/pom.xml" "$root/bench/java/src" "$rlock_jar" -newer "$classpath_file")" ]; then
    return
  fi
  # Its output is shown only on failure (even -q prints stray colour codes).
  local log
  if ! log=$(mvn -B -q -f "$root/bench/java/pom.xml" \
    "-Dbench.build.dir=$java_out" "-Drlock.jar=$rlock_jar" \
    compile dependency:build-classpath "-Dmdep.outputFile=$classpath_file" 2>&1); then
    echo "$log" >&2
    die "building bench/java failed"
  fi
}

need() {
  [ -e "$1" ] || die "$1 is missing: run bench/peers.sh setup first"
}

case "${1:-}" in
  setup)
    [ $# -eq 1 ] || die "setup takes no arguments"
    setup_python
    setup_go
    setup_java
    ;;
  run)
    [ $# -ge 2 ] || die "usage: peers.sh run CONTENDER ARGS... (one of: $contenders)"
    contender=$2
    shift 2
    case "$contender" in
      rlock-py | redis-py | python-redis-lock)
        need "$venv/bin/python"
        exec "$venv/bin/python" "$root/bench/python/bench.py" --contender "$contender" "$@"
        ;;
      rlock-go | redsync)
        need "$go_bin"
        exec "$go_bin" --contender "$contender" "$@"
        ;;
      rlock-java | redisson)
        need "$classpath_file"
        java=java
        if [[ " $* " == *" many-waiters "* ]]; then
          [ -n "$java_virtual" ] ||
            die "many-waiters needs a Java 21+ JDK in /usr/lib/jvm (or RLOCK_BENCH_JAVA21=/path/to/java)"
          java=("$java_virtual" --enable-native-access=ALL-UNNAMED)
        fi
        exec "${java[@]}" -cp "$(cat "$classpath_file"):$java_out/classes" io.rlock.bench.Bench \
          --contender "$contender" "$@"
        ;;
      *)
        die "unknown contender '$contender' (one of: $contenders)"
        ;;
    esac
    ;;
  *)
    echo "usage: peers.sh setup | peers.sh run CONTENDER ARGS... (contenders: $contenders)" >&2
    exit 2
    ;;
esac
