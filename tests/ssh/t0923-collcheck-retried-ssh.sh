#!/bin/bash
# A link closed mid-sweep on 4 hosts over SSH (COLL_FAULT on the command
# line, as collrun sets only its own variables remotely): the op is retried,
# the sweep stays right, and collcheck names the link by its ranks and their
# hosts, exit 1.
. "$(dirname "$0")/lib.sh"

"$BIN/collrun" -F "$CFG" -H "$HOSTS" --timeout 120 env COLL_FAULT=1@40:close \
	collcheck allreduce -b 1M -e 1M -n 100 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
wait $!
expect_code 1 $? "a retried op over SSH exits 1"
check "the line names rank 1 on node02 and its peer on its own host" grep -q -E \
	'^# retried: allreduce seq 40 between rank (1 \(node02\) and rank ([023]) \(node0[134]\)|[02] \(node0[13]\) and rank 1 \(node02\)), 1 time' \
	"$TMP/out"
check "each rank's host is its own" python3 -c '
import re, sys
m = re.search(r"between rank (\d) \((node\d\d)\) and rank (\d) \((node\d\d)\)", open(sys.argv[1]).read())
assert m and int(m[2][4:]) == int(m[1]) + 1 and int(m[4][4:]) == int(m[3]) + 1, m' "$TMP/out"
check "the sweep's results are right" grep -q '^# Out of bounds values : 0 OK' "$TMP/out"
[ "$fails" -eq 0 ] || cat "$TMP/out" "$TMP/err"
finish
