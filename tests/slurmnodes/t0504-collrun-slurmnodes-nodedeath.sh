#!/bin/bash
# A node that dies mid-job: its link goes down and everything on it is
# SIGKILLed, slurmd and slurmstepd included (slurmnodes.sh kill-node), so
# no FIN, RST or exit status comes from it, as when a machine loses power.
# collrun must end, non-zero, soon, and name what was lost: the dead node's
# ranks are "lost", never given a made-up end. In a collective the ranks'
# keep-alives find the death within seconds; ranks outside any collective
# leave it to Slurm (SlurmdTimeout=10 on the bed). The node comes back after.
. "$(dirname "$0")/lib.sh"
dead=
revive() { [ -z "$dead" ] || bash "$SLURMNODES" revive "$SN" "$dead" >"$TMP/revive" 2>&1; }
cleanup_death() { revive; cleanup; }
trap cleanup_death EXIT

# node_idle I: node I is idle again within 30 s (Slurm may take a moment after
# its slurmd is back to say so, more on a loaded machine)
node_idle() {
	for _ in $(seq 300); do
		[ "$(sinfo -h -n "$(node "$1")" -o %t)" = idle ] && return 0
		sleep 0.1
	done
	return 1
}

# ended_within S PID: PID is gone within S seconds
ended_within() {
	for _ in $(seq $(($1 * 10))); do kill -0 "$2" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}

# node_dies I S: node I dies under collrun ($job), which must end within S
# seconds; returns collrun's code (start is when the node died)
node_dies() {
	dead=$1
	bash "$SLURMNODES" kill-node "$SN" "$1"
	start=$SECONDS
	check "collrun ended within $2 s of the node's death" ended_within "$2" "$job"
	wait "$job"
}

# 1. In a collective: 8 ranks on 4 nodes in an endless all-reduce, node 3 (ranks 4, 5) dies.
COLL_KEEPALIVE_MS=200 COLL_KEEPALIVE_LIMIT=10 "$BIN/collrun" --launcher slurm -n 8 -N 2 --grace 1 \
	--no-label "$BIN/collcheck" allreduce -b 8 -e 8 -n 1000000 -w 1 >"$TMP/o" 2>"$TMP/e" &
job=$!
echo $job >>"$TMP/pids"
check "the all-reduce runs on 4 nodes" wait_for 1 '^# *(B)' "$TMP/o"
sleep 1
node_dies 3 30
expect_code 255 $? "collrun's code: a lost node ($((SECONDS - start)) s)"
check "the ranks name rank 4 or 5 on $(node 3) as the one that stopped answering" \
	grep -q "rank [45] (host $(node 3), pid [0-9]*) stopped answering" "$TMP/e"
for r in 4 5; do
	check "collrun names rank $r as lost" grep -q "^collrun: rank $r (pid [0-9]*) was lost: " "$TMP/e"
	check "... and gives it no made-up end" sh -c "! grep -q 'rank $r (pid [0-9]*) \(exited\|was killed\)' '$TMP/e'"
done
check "no job of ours still runs (squeue: $(paste -sd' ' "$TMP/squeue" 2>/dev/null))" \
	test "$(coll_jobs R)" = 0
revive
check "node 3 is back" node_idle 3
dead=

# 2. Outside any collective: only Slurm can tell; node 2 (rank 1) dies under 4 sleeping ranks.
"$BIN/collrun" --launcher slurm -n 4 -N 1 --grace 1 sh -c 'echo "ready $(hostname)"; exec sleep 300' \
	>"$TMP/o" 2>"$TMP/e" &
job=$!
echo $job >>"$TMP/pids"
check "4 ranks ready" wait_for 4 ready "$TMP/o"
node_dies 2 60
expect_code 255 $? "collrun's code: the lost rank's, not that of a rank Slurm stopped for it ($((SECONDS - start)) s)"
check "srun's words name $(node 2)" grep -q "Node failure on $(node 2)" "$TMP/e"
check "collrun names rank 1 as lost" grep -q "^collrun: rank 1 (pid [0-9]*) was lost: " "$TMP/e"
check "no job of ours still runs" test "$(coll_jobs R)" = 0
revive
check "node 2 is back" node_idle 2
dead=
check "a job runs on every node again" sh -c "[ \$(timeout 60 srun -N $K --ntasks-per-node=1 hostname | sort -u | wc -l) -eq $K ]"
finish
