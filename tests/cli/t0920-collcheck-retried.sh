#!/bin/bash
# A link closed mid-sweep (COLL_FAULT close, retries on by default): the op is
# run again and the sweep stays right (#wrong 0), but collcheck reports the
# retried op once, naming the link's two ranks and hosts, and exits 1; --json
# carries it in "retries".
. "$(dirname "$0")/lib.sh"

link='between rank (1 \([^)]*\) and rank [023]|[02] \([^)]*\) and rank 1) \([^)]*\), 1 time: the link broke'
COLL_FAULT='1@40:close' "$BIN/collrun" -n 4 collcheck allreduce -b 1M -e 1M -n 100 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "a retried op makes the sweep exit 1"
check "one line names the retried op and its link" \
	test "$(grep -c -E "^# retried: allreduce seq 40 $link" "$TMP/out")" -eq 1
check "the sweep's results are right" grep -q '^# Out of bounds values : 0 OK' "$TMP/out"
check "its row is there, #wrong 0 out of place and in place" \
	test "$(awk '$1 == 1048576 && $9 == 0 && $13 == 0' "$TMP/out" | wc -l)" -eq 1

COLL_FAULT='1@40:close' "$BIN/collrun" -n 4 collcheck allreduce -b 1M -e 1M -n 100 --json >"$TMP/json" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "the same with --json"
check "--json carries the retried op: seq, op, ranks (rank 1 and its peer), hosts, count" \
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["retries"]
assert len(r) == 1, r
e = r[0]
assert e["seq"] == 40 and e["op"] == "allreduce" and e["count"] == 1, e
assert 1 in e["ranks"] and len(set(e["ranks"])) == 2 and all(0 <= k < 4 for k in e["ranks"]), e
assert len(e["hosts"]) == 2 and all(e["hosts"]), e
assert d["wrong"] == 0, d["wrong"]
' "$TMP/json"
check "the line goes to stderr with --json" grep -q -E "^# retried: allreduce seq 40 $link" "$TMP/err"

# The other sweeps too: an all-gather whose link broke (every rank needs every
# other's part, so none completes the op before the break and the retry holds;
# a broadcast's root may, and the retry is then refused, by design).
COLL_FAULT='1@20:close' "$BIN/collrun" -n 4 collcheck allgather -b 1M -e 1M -n 50 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "a retried all-gather exits 1"
check "... and is named" grep -q -E '^# retried: allgather seq 20 between rank [0-3] \([^)]*\) and rank [0-3] \([^)]*\), 1 time' "$TMP/out"
[ "$fails" -eq 0 ] && rm -f "$TMP/err"
[ -f "$TMP/err" ] && cat "$TMP/out" "$TMP/err"
finish
