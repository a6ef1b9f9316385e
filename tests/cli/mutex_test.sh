#!/usr/bin/env bash
# Mutual exclusion: 4 processes x 10 runs of `rlock exec` on one name append enter/exit lines
# with timestamps to one file. The lines must strictly alternate (enter A, exit A, enter B, ...)
# and the timestamps never go back.
source "$(dirname "$0")/lib.sh"
name="$prefix:lock"
log="$work/log"
workers=4
runs=10

step "$workers workers x $runs runs contend for one lock"
critical='echo "enter $1 $EPOCHREALTIME" >> "$2"; sleep 0.01; echo "exit $1 $EPOCHREALTIME" >> "$2"'
pids=()
for w in $(seq 1 "$workers"); do
  (
    for r in $(seq 1 "$runs"); do
      "$RLOCK" exec --wait 30 "$name" -- bash -c "$critical" bash "w$w.$r" "$log" || exit 1
    done
  ) &
  pids+=("$!")
  background+=("$!")
done
for pid in "${pids[@]}"; do
  wait "$pid" || fail "a worker's rlock exec failed"
done

step "check strict alternation"
awk -v want=$((workers * runs)) '
  { if (NR % 2 == 1) {
      if ($1 != "enter") { print "line " NR ": expected enter, got: " $0; bad = 1; exit }
      who = $2
    } else if ($1 != "exit" || $2 != who) {
      print "line " NR ": expected exit " who ", got: " $0; bad = 1; exit
    }
    if ($3 < last) { print "line " NR ": time went back"; bad = 1; exit }
    last = $3
    if ($1 == "enter") enters[$2]++
  }
  END {
    if (bad) exit 1
    n = 0; for (k in enters) n++
    if (n != want || NR != 2 * want) { print "expected " want " runs, got " n " (" NR " lines)"; exit 1 }
  }' "$log" || { cat "$log" >&2; fail "critical sections overlapped or runs are missing"; }
[ "$(field "$name" locked)" = "no" ] || fail "the lock is still held"
echo "PASS $test_name"
