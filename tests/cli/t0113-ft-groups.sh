#!/bin/bash
# Split, grow, and the death of the rank that hosts a communicator's root:
# split orders by key and sums right; six ranks grow to eight while the six
# keep serving ops; when rank 0 (holding the root) is killed, every other
# rank fails at once naming the lost root service instead of hanging.
. "$(dirname "$0")/ftlib.sh"

for i in $(seq "$REPS"); do
	ft "$TMP/out" -n 8 "$FT" split
	expect_code 0 $? "run $i: split"
	check "run $i: split: 8 ranks placed by key" test "$(count "$TMP/out" 'split ok: rank [0-3] of 4$')" -eq 8
	check "run $i: split: rank 7 is first of the odd ones" grep -q 'ft: rank 7 split ok: rank 0 of 4' "$TMP/out"

	ft "$TMP/out" -n 8 "$FT" grow
	expect_code 0 $? "run $i: grow"
	check "run $i: grow: 8 ranks in the grown communicator" \
		test "$(count "$TMP/out" 'grow ok: rank [0-7] of 8')" -eq 8
	check "run $i: grow: the old communicator served ops meanwhile" \
		test "$(count "$TMP/out" 'grow ok: .*, [1-9][0-9]* ops on the old one')" -eq 6

	start=$(date +%s)
	COLL_FAULT=0@5:kill ft "$TMP/out" -k -n 8 "$FT" rootkill 10
	code=$?
	# Rank 0 dies first, but its death and the others' exits reach collrun together.
	check "run $i: rootkill: the job failed (exit $code)" test "$code" -eq 137 -o "$code" -eq 3
	check "run $i: rootkill: rank 0 was killed" grep -q 'rank 0 (pid [0-9]*) was killed by signal 9' "$TMP/out"
	check "run $i: rootkill: the seven others name the lost root" \
		test "$(count "$TMP/out" 'ft: rank [1-7] op failed .*lost the root service')" -eq 7
	check "run $i: rootkill: nobody waited for a timeout" test $(($(date +%s) - start)) -lt 30
	[ "$fails" -eq 0 ] || break
done
finish
