#!/bin/bash
# A link closed in collcheck links' barriers (COLL_FAULT close; retries on by
# default) and in the whole check's all-reduce: the op is retried, and the
# check reports it as an error naming the link's two ranks and hosts, exit 1,
# in text and in --json, alone (-N, through the front end's record) and
# under collrun.
. "$(dirname "$0")/lib.sh"

link='between rank [01] \([^)]*\) and rank [1-3] \([^)]*\), 1 time: the link broke'

COLL_FAULT='1@2:close' "$BIN/collcheck" links -N 4 --no-color >"$TMP/out" 2>"$TMP/err"
expect_code 1 $? "links alone: a retried barrier exits 1"
check "... one ERROR names the link" \
	test "$(grep -c -E "^  ERROR  retried: barrier seq 2 $link" "$TMP/out")" -eq 1
check "... its links matrix is there" grep -q '^links: GB/s each way' "$TMP/out"

COLL_FAULT='1@2:close' "$BIN/collcheck" links -N 4 --json >"$TMP/json" 2>"$TMP/err"
expect_code 1 $? "links --json alone"
check "--json: the finding and the retries entry, rank 1 and its peer" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["retries"]
assert len(r) == 1 and r[0]["seq"] == 2 and r[0]["op"] == "barrier" and r[0]["count"] == 1, r
assert 1 in r[0]["ranks"] and len(set(r[0]["ranks"])) == 2, r
f = [f for f in d["findings"] if f["key"] == "retried"]
assert len(f) == 1 and f[0]["severity"] == "ERROR" and "barrier seq 2 between rank" in f[0]["message"], f
assert d["exit"] == 1' "$TMP/json"

COLL_FAULT='1@4:close' "$BIN/collrun" -n 4 collcheck links --no-color >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "links under collrun"
check "... names the link" grep -q -E "^  ERROR  retried: barrier seq 4 $link" "$TMP/out"

# The whole check: its short all-reduce sweep runs seq 40.
COLL_FAULT='1@40:close' "$BIN/collrun" -n 4 collcheck --no-color >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "the whole check"
check "... names the retried all-reduce and its link" \
	grep -q -E "^  ERROR  retried: allreduce seq 40 $link" "$TMP/out"
[ "$fails" -eq 0 ] || cat "$TMP/out" "$TMP/err"
finish
