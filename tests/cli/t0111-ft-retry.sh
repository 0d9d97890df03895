#!/bin/bash
# Operator retry: a link closed mid-op (COLL_FAULT close) is retried and every
# result is right; an in-place op whose input was not kept is refused, with
# the reason, on every rank; with COLL_RETRY_MAX=0 the op fails naming the peer.
# The status pages name the retried link (retry_peer): rank 2 its other end.
. "$(dirname "$0")/ftlib.sh"

for i in $(seq "$REPS"); do
	COLL_DEBUG=WARN COLL_FAULT=2@4:close ft "$TMP/out" -n 8 "$FT" close 10
	expect_code 0 $? "run $i: the job survives a closed link"
	check "run $i: every rank finished with one retry" \
		test "$(count "$TMP/out" 'ft: rank [0-7] done 10 iterations, retries 1$')" -eq 8
	check "run $i: each rank logged the retry" \
		test "$(count "$TMP/out" 'retrying allreduce seq 4 \(retry 1 of at most 3\)')" -eq 8
	# The status pages name the link by one of its ends at least: each end names
	# the other or, asked to stop before it saw the break (rank 2 too, when the
	# root's question comes before its next use of the link), no one; every
	# other rank names no one.
	peer=$(sed -n 's/^\[2\] ft: rank 2 retry peer \(-\{0,1\}[0-9]*\)$/\1/p' "$TMP/out")
	named=$(count "$TMP/out" "ft: rank [013-7] retry peer 2\$")
	check "run $i: the closed link is named by one of its ends" \
		test -n "$peer" -a "$peer" != 2 -a \( "$peer" != -1 -o "$named" -eq 1 \)
	check "run $i: ... the other ranks' pages name rank 2 (one at most) or no one" \
		test "$(count "$TMP/out" "ft: rank [013-7] retry peer (-1|2)\$")" -eq 7 -a "$named" -le 1

	# Seq 2 is the first op on links not made yet: ranks are connecting when the round starts.
	COLL_FAULT=2@2:close ft "$TMP/out" -n 8 "$FT" close 10
	expect_code 0 $? "run $i: a link closed while others still connect"
	check "run $i: ... retried once on every rank" \
		test "$(count "$TMP/out" 'ft: rank [0-7] done 10 iterations, retries 1$')" -eq 8

	COLL_FAULT=2@4:close,2@4:close ft "$TMP/out" -n 8 "$FT" close 10
	expect_code 0 $? "run $i: the rerun's link breaks too"
	check "run $i: ... retried twice on every rank" \
		test "$(count "$TMP/out" 'ft: rank [0-7] done 10 iterations, retries 2$')" -eq 8

	COLL_FAULT=2@4:close,2@4:close,2@4:close,2@4:close ft "$TMP/out" -k -n 8 "$FT" close 10
	expect_code 3 $? "run $i: a link that keeps breaking"
	check "run $i: ... is given up after COLL_RETRY_MAX with the reason on every rank" \
		test "$(count "$TMP/out" 'ft: rank [0-7] allreduce failed: .*refused: its links broke 4 times, the limit \(COLL_RETRY_MAX\) is 3')" -eq 8

	COLL_FAULT=2@3:close ft "$TMP/out" -n 8 "$FT" inplace 4
	expect_code 0 $? "run $i: an in-place op with its input kept is retried"
	check "run $i: in place, every rank finished after a retry" \
		test "$(count "$TMP/out" 'ft: rank [0-7] done 4 iterations, retries 1$')" -eq 8

	# Rank 2 comes late, so the others have reduced into their buffers when it closes.
	COLL_RETRY_SAVE_BYTES=0 COLL_FAULT=2@3:delay=300,2@3:close ft "$TMP/out" -k -n 8 "$FT" inplace 4
	expect_code 3 $? "run $i: an in-place op partly written is not retried"
	check "run $i: every rank says why" \
		test "$(count "$TMP/out" 'ft: rank [0-7] allreduce failed: .*allreduce seq 3 .*retry of seq 3 refused: rank [0-7] \(host [^)]*\): its in-place buffer was already partly overwritten')" -eq 8
	check "run $i: no rank finished" test "$(count "$TMP/out" 'done 4 iterations')" -eq 0

	COLL_RETRY_MAX=0 COLL_FAULT=2@4:close ft "$TMP/out" -k -n 8 "$FT" close 10
	expect_code 3 $? "run $i: without retries the op fails"
	check "run $i: without retries the closed link is named" \
		grep -q -E 'ft: rank [23] allreduce failed: .*allreduce seq 4 .*rank [23] \(host' "$TMP/out"
	check "run $i: no wrong result" test "$(count "$TMP/out" WRONG)" -eq 0
	[ "$fails" -eq 0 ] || break
done
finish
