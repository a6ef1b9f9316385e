#!/usr/bin/env bash
# The C side of the cross-language test: the same contract as crosslang_worker.py, with one
# `rlock exec` (the C CLI) per critical section.
#   crosslang_worker.sh RLOCK_CLI URL DIR ITERATIONS NAME [NAME...]
set -euo pipefail
cli=$1 url=$2 dir=$3 iterations=$4
shift 4
names=("$@")
# noclobber makes `: >` an O_EXCL create, so a second owner inside fails to enter.
body='set -C; dir=$1 name=$2
if ! { : > "$dir/$name.inside"; } 2>/dev/null; then echo "overlap on $name" >&2; exit 3; fi
v=$(cat "$dir/$name.count" 2>/dev/null || true)
echo $(( ${v:-0} + 1 )) >| "$dir/$name.count"
rm "$dir/$name.inside"'
# RLOCK_WORKER_KIND=leader: one `rlock elect` per iteration instead, whose command also appends
# "TERM cli" (the term from --term-env) to DIR/NAME.terms before it leaves.
if [ "${RLOCK_WORKER_KIND:-}" = leader ]; then
  body='set -C; dir=$1 name=$2
if ! { : > "$dir/$name.inside"; } 2>/dev/null; then echo "overlap on $name" >&2; exit 3; fi
v=$(cat "$dir/$name.count" 2>/dev/null || true)
echo $(( ${v:-0} + 1 )) >| "$dir/$name.count"
echo "$TERM_NO cli" >> "$dir/$name.terms"
rm "$dir/$name.inside"'
fi
for ((i = 0; i < iterations; i++)); do
  name=${names[i % ${#names[@]}]}
  if [ "${RLOCK_WORKER_KIND:-}" = leader ]; then
    "$cli" elect --url "$url" --term-env TERM_NO "$name" -- bash -c "$body" body "$dir" "$name"
  else
    "$cli" exec --url "$url" "$name" -- bash -c "$body" body "$dir" "$name"
  fi
done
echo "ok $iterations"
