#!/bin/bash
# No fault, no retry: the sweep exits 0, says nothing of retries, and --json
# has an empty "retries"; links and the whole check report none either.
. "$(dirname "$0")/lib.sh"

"$BIN/collrun" -n 4 collcheck allreduce -b 1M -e 1M -n 100 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 0 $? "a clean sweep"
check "no retried line" test "$(grep -c retried "$TMP/out" "$TMP/err" | awk -F: '{s += $2} END {print s}')" -eq 0
check "the footer as before" grep -q '^# Out of bounds values : 0 OK' "$TMP/out"

"$BIN/collrun" -n 4 collcheck allreduce -b 1M -e 1M -n 100 --json >"$TMP/json" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 0 $? "a clean sweep with --json"
check "--json: retries is empty" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["retries"] == []' "$TMP/json"

"$BIN/collcheck" links -N 4 --json >"$TMP/json" 2>"$TMP/err"
code=$?
check "links ran (exit $code: oversubscribed timings may warn)" test "$code" -le 1
check "links --json: no retries, no retried finding" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["retries"] == [], d["retries"]
assert not [f for f in d["findings"] if f["key"] == "retried"], d["findings"]' "$TMP/json"
finish
