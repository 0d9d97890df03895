#!/bin/bash
# collstack's words and exit code on whether the job moves: a job with every
# rank in the same op and no progress is a problem (exit 1) though no rank is
# late; a job that advances (coll's all-reduce running) names nobody and
# says "no rank is behind" (exit 0), however its ranks' ops look at the
# instant they are read.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }

# 1. Every rank in allreduce seq 9, each waiting on its left neighbour (stack_pager, no rank behind).
"$BIN/collrun" -n 4 "$COLL_BUILD/tests/stack_pager" 9 -1 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
for _ in $(seq 200); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 4 ] && break; sleep 0.05; done
# Until the op has stood still long enough to be called stuck (at most 10 s).
for _ in $(seq 40); do
	collstack --no-color >"$TMP/o" 2>&1
	code=$?
	[ $code -ne 0 ] && break
	sleep 0.25
done
expect_code 1 $code "all in one op, no progress: a problem"
check "... said: no rank is late, the hang is inside the op" grep -qE "^comm [0-9a-f]+: all 4 ranks seen are in allreduce seq 9 and none has progressed for [0-9.]+ s: no rank is late; the hang is inside the collective \(its library, the device or the network\)$" "$TMP/o"
check "... nobody blamed, nothing said behind" sh -c "! grep -q '^=> \\|no rank is behind' '$TMP/o'"
kill $JOB; wait $JOB 2>/dev/null

# 2. A job that advances: read three times, never a culprit.
rm -f "$COLL_STATUS_DIR"/coll.* "$COLL_JOB_DIR"/*.json
"$BIN/collrun" -n 4 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
for _ in $(seq 200); do
	[ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 4 ] && [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break
	sleep 0.05
done
for i in 1 2 3; do
	collstack --no-color >"$TMP/o" 2>&1
	expect_code 0 $? "advancing, look $i: no problem"
	check "... 'no rank is behind', it advances" grep -qE "^no rank is behind: the job advances \(its last progress [0-9.]+ s ago\)$" "$TMP/o"
	check "... nobody named" sh -c "! grep -q '^=> \\|^rank ' '$TMP/o'" || cat "$TMP/o"
done
kill $JOB; wait $JOB 2>/dev/null
finish
