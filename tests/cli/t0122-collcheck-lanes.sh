#!/bin/bash
# Lanes: large ops striped over several connections per peer, driven by
# several threads (COLL_NTHREADS x COLL_NSOCKS). Every striped collective
# (the rings, and the chains of large broadcasts and reduces) stays exact
# with the lanes forced on, for every datatype (slices are cut on element
# boundaries; the ops are the reduction's, which lanes do not touch, and
# t0101's and t0120's); ranks that offer different counts agree on the
# fewest; a bad setting stops init with its name; a link closed mid-op is
# retried over fresh lanes; a hung rank is named, not waited for forever.
. "$(dirname "$0")/ftlib.sh"

export COLL_NTHREADS=2 COLL_NSOCKS=2 COLL_LANE_MIN_BYTES=4096
for k in allreduce reducescatter allgather broadcast reduce; do
	COLL_DEBUG=INFO collrun -n 4 --no-label collcheck $k --engine coll -b 1K -e 1M -f 32 -n 1 -w 0 \
		-d all -r 2 >"$TMP/$k" 2>"$TMP/$k.err"
	expect_code 0 $? "$k on 4 ranks over 4 lanes, every datatype"
	check "$k: no wrong element anywhere" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n == 0 }' "$TMP/$k"
	check "$k: every rank says 4 connections per peer, 2 threads" \
		test "$(grep -c '^# *Rank *[0-3] .*tcp, 4 connections per peer (2 threads)' "$TMP/$k")" -eq 4
	check "$k: every rank striped its first large op over the 4 lanes" \
		test "$(grep -c 'is the first op striped over 4 connections per peer, 2 threads' "$TMP/$k.err")" -eq 4
done

# Ranks offer 2, 2, 3 and 3 lanes and ask for different smallest slices: all use 2 lanes
# from the largest smallest slice on (40000 B: one lane, though rank 0 alone would cut it
# in two), so both ends of every link cut alike. Sizes that
# do not divide evenly test the remainders.
collrun -n 4 --no-label sh -c 'COLL_NSOCKS=$((RANK / 2 + 2)) COLL_NTHREADS=1 COLL_LANE_MIN_BYTES=$((RANK * 20000 + 1000)) exec "$0" "$@"' \
	"$BIN/collcheck" allreduce --engine coll -b 40000 -e 3000000 -i 999979 -n 2 -w 1 -d all \
	>"$TMP/mixed" 2>"$TMP/mixed.err"
expect_code 0 $? "ranks offering 2 or 3 lanes, odd sizes"
check "they agree on 2 connections per peer" \
	test "$(grep -c '^# *Rank *[0-3] .*tcp, 2 connections per peer (1 thread)' "$TMP/mixed")" -eq 4
check "... and get every element right" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n == 0 }' "$TMP/mixed"

for bad in COLL_NTHREADS=0 COLL_NSOCKS=17 COLL_NTHREADS=two COLL_LANE_MIN_BYTES=-5; do
	env "$bad" "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "$bad stops the job"
	check "$bad: named on one line with what to do" grep -q "${bad%%=*}=${bad#*=} is not a count in 1\.\.[0-9]*: set it to one in that range, or unset it" "$TMP/e"
done
COLL_NTHREADS=8 COLL_NSOCKS=16 "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "8 threads x 16 sockets stops the job"
check "... naming both and the most" grep -q "COLL_NTHREADS=8 x COLL_NSOCKS=16 is 128 connections per peer, over the most (64): lower one of them" "$TMP/e"

# A link closed in a striped op (seq 4, 1 MiB): retried over new connections, right after.
for i in $(seq "$REPS"); do
	COLL_DEBUG=WARN COLL_FAULT=2@4:close ft "$TMP/out" -n 4 "$FT" close 6
	expect_code 0 $? "run $i: a striped op survives a closed link"
	check "run $i: every rank finished right after one retry" \
		test "$(count "$TMP/out" 'ft: rank [0-3] done 6 iterations, retries 1$')" -eq 4
done

# Rank 1 hangs in a striped op: the others give up at COLL_TIMEOUT and name it.
COLL_TIMEOUT=3 COLL_FAULT=1@4:hang ft "$TMP/hang" -n 4 "$FT" close 6
expect_code 3 $? "a hung rank in a striped op fails the job"
# Whichever waiting rank's clock runs out first names the peer it waits on:
# rank 1 itself, or a rank further down the chain that waits on rank 1, whose
# own report then names rank 1 as the one it was waiting for.
check "a rank times out in seq 4 naming the peer it waits on" \
	grep -q 'no progress for 3 s in allreduce seq 4 waiting for data from rank [0-3] (host [^)]*): that rank is hung or slow' "$TMP/hang"
check "rank 1 is named: as hung or slow, or as the peer a rank waited on" \
	grep -qE 'rank 1 \(host [^)]*\): that rank is hung or slow|waiting for data from rank 1( |$)' "$TMP/hang"

finish
