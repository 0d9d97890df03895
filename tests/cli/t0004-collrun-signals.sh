#!/bin/bash
# SIGINT and SIGTERM reach every rank; a second one kills them.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/rank.sh" <<'EOS'
trap 'echo "rank $COLL_RANK got TERM"; exit 143' TERM
trap 'echo "rank $COLL_RANK got INT"; exit 130' INT
echo ready
while :; do sleep 0.1; done
EOS
for sig in INT TERM; do
	"$BIN/collrun" -n 3 bash "$TMP/rank.sh" >"$TMP/out" 2>"$TMP/err" &
	pid=$!
	echo $pid >>"$TMP/pids"
	for _ in $(seq 100); do [ "$(grep -c ready "$TMP/out")" -eq 3 ] && break; sleep 0.1; done
	kill -$sig $pid
	wait $pid
	code=$?
	for r in 0 1 2; do
		check "SIG$sig forwarded to rank $r" grep -q "rank $r got $sig" "$TMP/out"
	done
	want=130; [ $sig = TERM ] && want=143
	expect_code $want $code "collrun exits with the ranks' code after SIG$sig"
done

# Ranks that ignore the signal: the second one kills them.
"$BIN/collrun" -n 2 bash -c 'trap "" INT; echo ready; sleep 60' >"$TMP/out" 2>"$TMP/err" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c ready "$TMP/out")" -eq 2 ] && break; sleep 0.1; done
kill -INT $pid; sleep 0.3; kill -INT $pid
start=$(date +%s)
wait $pid
code=$?
check "a second SIGINT kills ranks that ignore the first" test $(($(date +%s) - start)) -lt 5
expect_code 137 $code "killed ranks give 128+9"
finish
