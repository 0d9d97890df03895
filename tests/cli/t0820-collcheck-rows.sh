#!/bin/bash
# collcheck's sweep shows each row as it is measured, and Ctrl-C ends the
# table with the rows so far: rank 1 hangs mid-sweep (COLL_FAULT), so the
# sweep never ends by itself; the rows before it must be out while it runs,
# and SIGINT (what a terminal's Ctrl-C sends collcheck) ends it with the
# footer, exit 130 and no line per rank (issue 37, item 2).
. "$(dirname "$0")/lib.sh"

wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds
	local until=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge "$until" ] && return 1; sleep 0.1; done
}
COLL_FAULT=1@60:hang "$BIN/collcheck" allreduce -N 2 -b 8 -e 1M -n 1 -w 0 >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
check "a row is out while the sweep runs" wait_for 30 grep -q '^ *8 ' "$TMP/o"
check "the sweep is still running (rank 1 hangs)" kill -0 $pid
kill -INT $pid
wait $pid
expect_code 130 $? "Ctrl-C ends the sweep"
check "the rows measured are there" grep -q '^ *8 ' "$TMP/o"
check "the table ends with the footer of the rows so far" grep -q '^# Avg bus bandwidth' "$TMP/o"
check "and says it was interrupted" grep -q '^# interrupted' "$TMP/o"
check "no line per rank on stderr" test "$(grep -c 'rank [0-9]' "$TMP/e")" = 0

# --json: one document of the rows so far, marked interrupted.
COLL_FAULT=1@60:hang "$BIN/collcheck" allreduce -N 2 -b 8 -e 1M -n 1 -w 0 --json >"$TMP/j" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
settled
kill -INT $pid
wait $pid
expect_code 130 $? "Ctrl-C ends a --json sweep"
check "stdout is one JSON document with the rows so far" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["interrupted"] is True and len(d["results"]) >= 1, d' "$TMP/j"
finish
