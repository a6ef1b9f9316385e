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
for ((i = 0; i < iterations; i++)); do
  name=${names[i % ${#names[@]}]}
  "$cli" exec --url "$url" "$name" -- bash -c "$body" body "$dir" "$name"
done
echo "ok $iterations"
