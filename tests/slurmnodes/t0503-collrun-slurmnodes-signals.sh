#!/bin/bash
# Signals across nodes: SIGINT to collrun reaches every task on every node
# through scancel, both for a job srun makes and inside a salloc allocation
# (there to our step alone, not the allocation's others), and each task decides what it means: a task that ends on it first does not
# get the others killed by srun's --kill-on-bad-exit before the signal has
# reached their nodes. Then nothing of ours is left in the queue.
. "$(dirname "$0")/lib.sh"
NAME=t0503-$$
cleanup_sig() { scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_sig EXIT

task='trap "echo got INT on \$(hostname); exit 130" INT; echo "ready $(hostname)"; while :; do sleep 0.1; done'

# interrupt N: wait for N tasks to be ready, then SIGINT collrun (its pid is in $TMP/crpid)
interrupt() {
	check "$1 tasks started" wait_for "$1" ready "$TMP/o"
	kill -INT "$(cat "$TMP/crpid")"
}

for n in 1 2; do
	: >"$TMP/o"
	rm -f "$TMP/crpid"
	sh -c 'echo $$ >"$0/crpid"; exec "$1" --launcher slurm --label -n "$2" -N "$3" bash -c "$4"' "$TMP" "$BIN/collrun" \
		$((4 * n)) $n "$task" >"$TMP/o" 2>"$TMP/e" &
	job=$!
	echo $job >>"$TMP/pids"
	interrupt $((4 * n))
	timeout 60 tail --pid=$job -f /dev/null || kill -9 $job	# a hung collrun fails the check below
	wait $job
	expect_code 130 $? "-N $n: SIGINT to collrun, $((4 * n)) tasks on 4 nodes"
	check "-N $n: all $((4 * n)) tasks got SIGINT ($(grep -c 'got INT' "$TMP/o"))" \
		test "$(grep -c 'got INT' "$TMP/o")" -eq $((4 * n))
	for k in 1 2 3 4; do
		check "-N $n: on $(node $k) $n" test "$(grep -c "got INT on $(node $k)\$" "$TMP/o")" -eq $n
	done
	check "-N $n: none was SIGTERMed or SIGKILLed by srun first, none lost" \
		sh -c "! grep -qE 'was lost|killed by signal|exited with code 1[34]3' '$TMP/e'"
	check "-N $n: no job of ours is left (squeue: $(paste -sd' ' "$TMP/squeue" 2>/dev/null))" no_coll_jobs
done

# The race above, made certain: the user's SIGINT reaches rank 0's node (its
# agent) first and rank 0 ends on it; srun must not SIGTERM the others for
# that (--kill-on-bad-exit): they are left collrun's grace (3 s) to get it too.
collrun --label --launcher slurm -n 4 -N 1 --grace 3 bash -c 'if [ $COLL_RANK = 0 ]; then
		sleep 0.5; kill -INT $PPID; exit 130; fi
	trap "echo TERM after \$SECONDS s; exit 143" TERM; while :; do sleep 0.1; done' >"$TMP/o" 2>"$TMP/e"
expect_code 130 $? "rank 0 ends on the SIGINT its node got first"
check "the 3 others were stopped by collrun after its grace, not at once by srun ($(grep -o 'after [0-9]*' "$TMP/o" | paste -sd' '))" \
	test "$(grep -c '^\[[123]\] TERM after [3-9] s$' "$TMP/o")" -eq 3

# Tasks that ignore SIGTERM, past --timeout: collrun's SIGKILL stage is a
# second SIGTERM through scancel, on which each agent SIGKILLs its program
# and says so: every rank ends killed by signal 9, none lost with its agent.
collrun --label --launcher slurm -n 4 -N 2 --timeout 2 bash -c 'trap "" TERM INT; echo ready
	while :; do sleep 0.1; done' >"$TMP/o" 2>"$TMP/e"
expect_code 124 $? "tasks deaf to SIGTERM: the timeout's code"
check "all 4 were SIGKILLed by their agents ($(grep -c 'killed by signal 9' "$TMP/e"))" \
	test "$(grep -c 'was killed by signal 9' "$TMP/e")" -eq 4
check "none was lost" sh -c "! grep -q 'was lost' '$TMP/e'"

# Inside an allocation scancel signals our step alone (JOBID.STEP, as the
# agents said it): every node's task hears it, and another step of the
# allocation, the user's, does not.
: >"$TMP/o"
: >"$TMP/other"
rm -f "$TMP/crpid"
salloc -J "$NAME" -N 4 sh -c 'srun -N 1 -n 1 --overlap bash -c "trap \"echo other step got INT\" INT
	echo other ready; while :; do sleep 0.1; done" >"$0/other" 2>&1 &
	echo $$ >"$0/crpid"; exec "$1" --launcher slurm --label bash -c "$2"' "$TMP" "$BIN/collrun" "$task" \
	>"$TMP/o" 2>"$TMP/e" &
job=$!
echo $job >>"$TMP/pids"
check "the other step started" wait_for 1 "other ready" "$TMP/other"
interrupt 4
timeout 60 tail --pid=$job -f /dev/null || kill -9 $job
wait $job
expect_code 130 $? "salloc -N 4 collrun: SIGINT, collrun's code through salloc"
check "the allocation's other step did not get collrun's SIGINT" \
	sh -c "! grep -q 'other step got INT' '$TMP/other'"
check "all 4 tasks got SIGINT" test "$(grep -c 'got INT' "$TMP/o")" -eq 4
for n in 1 2 3 4; do
	check "... on $(node $n)" grep -q "got INT on $(node $n)\$" "$TMP/o"
done
# released: squeue answers, and lists nothing of that name
released() { local q; q=$(squeue -h -n "$NAME") && [ -z "$q" ]; }
for _ in $(seq 100); do released && break; sleep 0.1; done
check "the allocation is released" released
finish
