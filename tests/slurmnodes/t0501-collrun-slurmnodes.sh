#!/bin/bash
# collrun --launcher slurm across the nodes of a real multi-node cluster (one
# slurmd per network namespace): ranks on the nodes and with the local ranks
# asked for (-n, -N, --place, -H, -x), each with its node's hostname; the
# root address they are handed is the one srun reached them from (this
# machine's on the bed, not its host name's loopback), and a collective
# across the nodes meets there; a failing rank on a remote node is named.
. "$(dirname "$0")/lib.sh"

show='echo "r=$COLL_RANK h=$(hostname) lr=$LOCAL_RANK/$LOCAL_WORLD_SIZE g=$GROUP_RANK s=$COLL_SIZE m=$MASTER_ADDR u=${COLL_UNIQUE_ID##*@}"'
# placed R HOST LR LS G SIZE: rank R's line says so, MASTER_ADDR is rank 0's node
# ($M) and the root is at the bed's address
M=$(node 1)
placed() {
	grep -qx "\[$1\] r=$1 h=$2 lr=$3/$4 g=$5 s=$6 m=$M u=$ADDR:[0-9]*" "$TMP/o"
}

collrun --label --launcher slurm -n 8 -N 2 sh -c "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-n 8 -N 2: 8 ranks, 2 per node"
for r in 0 1 2 3 4 5 6 7; do
	check "block: rank $r on $(node $((r / 2 + 1))), local rank $((r % 2)) of 2, root at $ADDR" \
		placed $r "$(node $((r / 2 + 1)))" $((r % 2)) 2 $((r / 2)) 8
done
check "no warning about the root's address on stderr" sh -c "! grep -qiE 'warning|rendezvous' '$TMP/e'"

collrun --label --launcher slurm -n 8 -N 2 --place roundrobin sh -c "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--place roundrobin"
for r in 0 1 2 3 4 5 6 7; do
	check "roundrobin: rank $r on $(node $((r % 4 + 1))), local rank $((r / 4))" \
		placed $r "$(node $((r % 4 + 1)))" $((r / 4)) 2 $((r % 4)) 8
done

collrun --label --launcher slurm -H "$(node 2),$(node 3)" -N 3 sh -c "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-H two nodes -N 3: their 6 slots"
M=$(node 2)
for r in 0 1 2 3 4 5; do
	check "-H: rank $r on $(node $((r / 3 + 2)))" placed $r "$(node $((r / 3 + 2)))" $((r % 3)) 3 $((r / 3)) 6
done
collrun --label --launcher slurm -H "$NODES" --exclude "$(node 2)" sh -c "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-H $NODES --exclude $(node 2)"
check "-x: one rank on each node left, none on $(node 2)" sh -c "
	[ \$(grep -c . '$TMP/o') -eq 3 ] && grep -q 'h=$(node 1)' '$TMP/o' &&
	grep -q 'h=$(node 3)' '$TMP/o' && grep -q 'h=$(node 4)' '$TMP/o'"

# The rendezvous and a collective across the nodes: every rank reached the root.
collrun --launcher slurm -n 8 -N 2 --timeout 60 --no-label collcheck allreduce -b 8 -e 1M -f 8 -n 2 -w 1 \
	>"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "collcheck allreduce, 8 ranks on 4 nodes"
check "6 sizes, every #wrong 0" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 6 }' "$TMP/ar"
for n in 1 2 3 4; do
	check "two ranks on $(node $n)" test "$(grep -c "^#  Rank  *[0-9]* Pid  *[0-9]* on  *$(node $n) " "$TMP/ar")" -eq 2
done

# A rank that fails on a remote node: its code, its rank, the others stopped.
start=$SECONDS
collrun --label --launcher slurm -n 8 -N 2 --grace 1 bash -c '[ $COLL_RANK = 5 ] && exit 3; exec sleep 60' \
	>"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "rank 5 (on $(node 3)) exits 3"
check "it is named" grep -q 'collrun: rank 5 (pid [0-9]*) exited with code 3' "$TMP/e"
check "the others were stopped within 20 s ($((SECONDS - start)) s)" test $((SECONDS - start)) -lt 20
check "no job of ours is left (squeue: $(paste -sd' ' "$TMP/squeue" 2>/dev/null))" no_coll_jobs
finish
