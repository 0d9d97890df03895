#!/bin/bash
# collrun hands every rank its id and torchrun's variables, and labels output.
. "$(dirname "$0")/lib.sh"

collrun -n 4 --label sh -c 'echo "r=$COLL_RANK s=$COLL_SIZE lr=$COLL_LOCAL_RANK R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK LW=$LOCAL_WORLD_SIZE M=$MASTER_ADDR:$MASTER_PORT U=$COLL_UNIQUE_ID"' >"$TMP/out" 2>"$TMP/err"
expect_code 0 $? "four ranks run"
for r in 0 1 2 3; do
	check "rank $r labelled with its variables" grep -q "^\[$r\] r=$r s=4 lr=$r R=$r W=4 L=$r LW=4 M=127.0.0.1:[0-9]* U=coll1:" "$TMP/out"
done
check "every rank got the same unique id" test "$(sed 's/.*U=//' "$TMP/out" | sort -u | wc -l)" -eq 1
check "same master port for all" test "$(sed 's/.*M=\([^ ]*\).*/\1/' "$TMP/out" | sort -u | wc -l)" -eq 1

collrun -n 2 --no-label echo plain >"$TMP/out2"
expect_code 0 $? "--no-label"
check "--no-label prints bare lines" test "$(cat "$TMP/out2")" = "$(printf 'plain\nplain')"

collrun -n 2 --label sh -c 'echo to-err >&2' >"$TMP/o3" 2>"$TMP/e3"
expect_code 0 $? "ranks writing to stderr"
for r in 0 1; do
	check "rank $r's stderr stays on stderr, labelled" grep -q "^\\[$r\\] to-err\$" "$TMP/e3"
done
check "nothing of stderr on stdout" test ! -s "$TMP/o3"

collrun -n 2 --label -- sh -c 'echo "$1"' argv0 'a b;$(x)' >"$TMP/o4"
expect_code 0 $? "a program after --"
check "arguments pass through unchanged" grep -q '^\[0\] a b;$(x)$' "$TMP/o4"
finish
