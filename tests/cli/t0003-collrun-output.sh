#!/bin/bash
# Output of every rank arrives whole: 1 MiB per rank, no interleaved partial
# lines, the last line without a newline, and what a dying rank wrote.
. "$(dirname "$0")/lib.sh"

# 16384 lines of 64 bytes per rank = 1 MiB each, written as fast as possible.
collrun -n 4 --label sh -c 'yes "$(printf "%063d" $COLL_RANK)" | head -c 1048576' >"$TMP/out"
expect_code 0 $? "four ranks write 1 MiB each"
for r in 0 1 2 3; do
	n=$(grep -c "^\[$r\] $(printf '%063d' $r)\$" "$TMP/out")
	check "rank $r: 16384 whole lines" test "$n" -eq 16384
done
check "no other lines at all" test "$(wc -l <"$TMP/out")" -eq 65536

collrun -n 2 --label printf 'no newline' >"$TMP/o2"
expect_code 0 $? "ranks ending without a newline"
check "a last line without newline is kept" test "$(grep -c 'no newline$' "$TMP/o2")" -eq 2

collrun -n 2 --label --grace 0.2 sh -c 'echo last words; kill -9 $$' >"$TMP/o3" 2>/dev/null
expect_code 137 $? "ranks that SIGKILL themselves"
check "output written just before SIGKILL is not lost" test "$(grep -c 'last words' "$TMP/o3")" -eq 2

# A line longer than the launcher's line buffer arrives in pieces, all bytes kept.
collrun -n 1 --no-label sh -c 'head -c 200000 /dev/zero | tr "\0" x; echo' >"$TMP/o4"
expect_code 0 $? "a rank writing one long line"
check "a 200 kB line keeps every byte" test "$(tr -d '\n' <"$TMP/o4" | wc -c)" -eq 200000
finish
