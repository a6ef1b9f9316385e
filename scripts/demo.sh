#!/usr/bin/env bash
# The rlock demo: builds the `rlock` command, starts a throwaway redis-server (unless $RLOCK_URL
# is set), then shows
#   1. four processes contending for one lock through `rlock exec`, never overlapping;
#   2. a holder killed with SIGKILL: its lock outlives it until its lease runs out.
# Runs on a fresh Debian 12 as root (installs what is missing); a second run only rebuilds
# what changed. Works from any directory. RLOCK_BUILD_DIR overrides the build directory.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${RLOCK_BUILD_DIR:-$root/build}
rlock=$build/capi/cli/rlock

if [ -t 1 ]; then bold=$'\033[1m' dim=$'\033[2m' reset=$'\033[0m'; else bold="" dim="" reset=""; fi
heading() { printf '\n%s== %s%s\n' "$bold" "$*" "$reset"; }
note() { printf '%s%s%s\n' "$dim" "$*" "$reset"; }
die() { echo "demo: $*" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-demo.XXXXXX")
pids=()  # background processes this script started, killed on exit
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- setup ------------------------------------------------------------------------------------
heading "Setup"
"$root/scripts/install-deps.sh"
echo "packages: all present"

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; die "cmake failed"; }
fi
echo "building rlock in $build"
cmake --build "$build" --target rlock_cli -j "$(nproc)" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; die "build failed"; }

if [ -z "${RLOCK_URL:-}" ]; then
  # A throwaway server on a free loopback port, gone when the demo ends.
  for _ in $(seq 1 20); do
    port=$(( 20000 + RANDOM % 40000 ))
    redis-cli -p "$port" ping >/dev/null 2>&1 && continue  # somebody else's server
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" \
      --logfile "$tmp/redis.log" >/dev/null 2>&1 &
    redis_pid=$!
    pids+=("$redis_pid")
    for _ in $(seq 1 100); do
      kill -0 "$redis_pid" 2>/dev/null || break
      grep -q "Ready to accept connections" "$tmp/redis.log" 2>/dev/null && break
      sleep 0.02
    done
    if kill -0 "$redis_pid" 2>/dev/null && grep -q "Ready to accept" "$tmp/redis.log"; then
      export RLOCK_URL="redis://127.0.0.1:$port"
      break
    fi
    kill -KILL "$redis_pid" 2>/dev/null || true
  done
  [ -n "${RLOCK_URL:-}" ] || { cat "$tmp/redis.log" >&2 || true; die "could not start redis-server"; }
  echo "redis-server: throwaway instance at $RLOCK_URL"
else
  echo "redis: \$RLOCK_URL = $RLOCK_URL"
fi
"$rlock" status "rlock-demo:probe" >/dev/null || die "cannot reach Redis at $RLOCK_URL"

# Names unique to this run, in case $RLOCK_URL is a shared server.
lock1="rlock-demo:$$:report"
lock2="rlock-demo:$$:crash"

# ---- 1. contention ----------------------------------------------------------------------------
heading "1. Four processes contend for one lock"
note "each runs 3 times:  rlock exec $lock1 -- <print enter; sleep 0.3; print leave>"
log=$tmp/contend.log
# $1 worker number, $2 machine log. Prints for people, appends "enter/leave W time" for the check.
critical='
  printf "  %s  worker %s  enter\n" "$(date +%T.%3N)" "$1"; echo "enter $1 $EPOCHREALTIME" >> "$2"
  sleep 0.3
  printf "  %s  worker %s  leave\n" "$(date +%T.%3N)" "$1"; echo "leave $1 $EPOCHREALTIME" >> "$2"'
workers=()
for w in 1 2 3 4; do
  (
    for _ in 1 2 3; do
      "$rlock" exec --wait 30 "$lock1" -- bash -c "$critical" bash "$w" "$log" || exit 1
    done
  ) &
  workers+=("$!")
  pids+=("$!")
done
for pid in "${workers[@]}"; do wait "$pid" || die "a worker failed"; done

# Strict alternation enter W / leave W, times never going back: nobody was ever inside together.
if awk '{ if (NR % 2 == 1) { if ($1 != "enter") exit 1; who = $2 }
          else if ($1 != "leave" || $2 != who) exit 1
          if ($3 < last) exit 1; last = $3 }
        END { if (NR != 24) exit 1 }' "$log"; then
  echo "${bold}OK${reset}: 12 critical sections, one at a time, never overlapping"
else
  cat "$log"
  die "critical sections overlapped"
fi

# ---- 2. a crashed holder ----------------------------------------------------------------------
heading "2. A holder with --lease 3 is killed with SIGKILL"
note "rlock exec --lease 3 $lock2 -- sleep 60"
"$rlock" exec --lease 3 "$lock2" -- sh -c 'echo $$ > "$1"; exec sleep 60' sh "$tmp/child" &
holder=$!
pids+=("$holder")
for _ in $(seq 1 100); do [ -s "$tmp/child" ] && break; sleep 0.02; done
[ -s "$tmp/child" ] || die "the holder did not start"
pids+=("$(cat "$tmp/child")")
"$rlock" status "$lock2" | sed 's/^/  /'

kill -KILL "$holder"
wait "$holder" 2>/dev/null || true
kill -KILL "$(cat "$tmp/child")" 2>/dev/null || true  # its command, orphaned
killed_at=$EPOCHREALTIME
echo "killed the holder (pid $holder): it never got to unlock"
note "another process waits:  rlock exec --wait 10 $lock2 -- ..."
"$rlock" exec --wait 10 "$lock2" -- bash -c 'echo "$EPOCHREALTIME" > "$1"' bash "$tmp/got" &
waiter=$!
pids+=("$waiter")

since() { awk -v a="$killed_at" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
while kill -0 "$waiter" 2>/dev/null; do
  state=$("$rlock" status "$lock2" | awk -F': ' '$1 == "locked" { l = $2 } $1 == "ttl" { t = $2 }
                                               END { printf "locked: %s%s", l, t ? ", ttl: " t : "" }')
  printf '  t+%s s  %s\n' "$(since)" "$state"
  sleep 0.5
done
wait "$waiter" || die "the waiter did not get the lock"
took=$(awk -v a="$killed_at" -v b="$(cat "$tmp/got")" 'BEGIN { printf "%.2f", b - a }')
echo "${bold}OK${reset}: the waiter got the lock ${took} s after the holder died (lease: 3 s)"
note "without --lease, a watchdog renews a 30 s lease while the command runs: a dead holder's"
note "lock frees itself within 30 s. 'rlock --help' has the rest."
