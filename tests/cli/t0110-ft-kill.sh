#!/bin/bash
# SIGKILL of one rank mid-all-reduce: every survivor names it, shrinks and
# goes on with 7 ranks, with correct results; collrun -k reports 137.
. "$(dirname "$0")/ftlib.sh"

for i in $(seq "$REPS"); do
	COLL_FAULT=3@7:kill ft "$TMP/out" -k -n 8 "$FT" kill 10
	code=$?
	expect_code 137 $code "run $i: collrun reports the killed rank's signal"
	check "run $i: every survivor names rank 3 as dead" \
		test "$(count "$TMP/out" '^\[[0-7]\] ft: rank [0-7] op failed .*rank 3 \(host [^,]*, pid [0-9]*\) died')" -eq 7
	check "run $i: every survivor finished on 7 ranks" \
		test "$(count "$TMP/out" 'ft: rank [0-7] done 10 iterations on 7 ranks')" -eq 7
	check "run $i: no wrong result" test "$(count "$TMP/out" WRONG)" -eq 0
	check "run $i: rank 3 is the only casualty" test "$(count "$TMP/out" 'killed by signal|exited with code')" -eq 1
	[ "$fails" -eq 0 ] || break
done
check "status pages removed" test -z "$(ls "$COLL_STATUS_DIR")"
finish
