#!/bin/bash
# comm_abort from another thread unblocks a rank waiting in init, in split, in
# shrink and in a non-blocking all-reduce (rank 7 never joins the call): the call returns "aborted" at once,
# not after the timeout. The delays are printed for the soak's table; this
# test only bounds them loosely (a hang, not a speed target).
. "$(dirname "$0")/ftlib.sh"

for i in $(seq "$REPS"); do
	for what in abort-init abort-split abort-shrink abort-op; do
		ft "$TMP/out" -k -n 8 "$FT" "$what"
		code=$?
		expect_code 0 $code "run $i: $what: every rank returned 'aborted'"
		check "run $i: $what: seven waiters unblocked" \
			test "$(count "$TMP/out" "ft: rank [0-6] $what returned communicator aborted [0-9]+ ms after")" -eq 7
		slow=$(grep -E -o 'aborted [0-9]+ ms' "$TMP/out" | awk '$2 > 2000' | wc -l)
		check "run $i: $what: none took seconds" test "$slow" -eq 0
		grep -E -o "$what returned communicator aborted [0-9]+ ms" "$TMP/out" >>"$TMP/delays"
		[ "$fails" -eq 0 ] || break 2
	done
	ft "$TMP/out" -n 8 "$FT" nb
	expect_code 0 $? "run $i: non-blocking init, ops and finalize"
	check "run $i: non-blocking: 8 ranks right" test "$(count "$TMP/out" 'ft: rank [0-7] nb ok')" -eq 8
done
echo "# abort-to-return delays (ms): $(awk '{print $5}' "$TMP/delays" | sort -n | uniq -c | tr '\n' ' ')"
finish
