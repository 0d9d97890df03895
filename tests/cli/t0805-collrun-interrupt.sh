#!/bin/bash
# Ctrl-C stops many ranks in one line, not one per rank (issue 37, item 15).
. "$(dirname "$0")/lib.sh"
N=30

"$BIN/collrun" -n $N sh -c 'echo ready; exec sleep 600' >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 600); do [ "$(grep -c ready "$TMP/o")" -eq $N ] && break; sleep 0.1; done
check "$N ranks ready" test "$(grep -c ready "$TMP/o")" -eq $N
kill -INT $pid
wait $pid
expect_code 130 $? "Ctrl-C"
check "one line for the stop ($(wc -l <"$TMP/e") lines in all)" \
	grep -qx "collrun: interrupted by SIGINT; $N ranks stopped" "$TMP/e"
check "no line per rank" sh -c "! grep -q 'rank [0-9]* (pid' '$TMP/e'"
check "two lines in all: the signal passed on, then the stop" \
	test "$(grep -vc '^collrun: warning: ' "$TMP/e")" -eq 2

# Ranks that end 0 on the signal: still an interrupted job (130), not a success.
"$BIN/collrun" -n 2 sh -c 'trap "exit 0" INT; echo ready; while :; do sleep 0.1; done' \
	>"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 600); do [ "$(grep -c ready "$TMP/o")" -eq 2 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
expect_code 130 $? "Ctrl-C, ranks ending 0 on it"
finish
