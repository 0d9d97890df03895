#!/bin/bash
# collstack --slurm JOBID on a job hung across 4 nodes, from outside it:
# squeue names the nodes, one worker per node runs as a step of the job
# (srun --jobid --overlap), every task on every node is read and the rank
# behind is named with its node; SIGINT ends collstack's step on all nodes,
# never the job's.
. "$(dirname "$0")/lib.sh"
NAME=hung-t0506-$$	# not coll-*: that is how collstack's own step is named
PAGER=${COLL_BUILD:?}/tests/stack_pager
cleanup_stack() { scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_stack EXIT

mkdir -p "$TMP/shim"
for t in srun squeue; do
	printf '#!/bin/sh\necho "$*" >>"%s/%s.args"\nexec "%s" "$@"\n' "$TMP" "$t" "$(command -v $t)" >"$TMP/shim/$t"
	chmod +x "$TMP/shim/$t"
done

# 8 tasks, 2 per node, hung in an all-reduce: task 5 (on node 3) computes at seq 8, the others wait in seq 9.
srun -N 4 --ntasks-per-node=2 --job-name="$NAME" bash -c \
	'COLL_RANK=$SLURM_PROCID COLL_SIZE=8 COLL_JOBID=000000000000a506 exec "$0" 9 5' "$PAGER" \
	>"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 200); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 8 ] && break; sleep 0.1; done
check "the job's 8 tasks published their pages" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 8
id=$(squeue -h -n "$NAME" -o %i)
check "the job runs (id '$id') on the 4 nodes" test "$(squeue -h -j "$id" -o %N)" = "$NODES"
sleep 1.5

PATH=$TMP/shim:$PATH "$BIN/collstack" --slurm "$id" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--slurm $id from outside the job: a culprit"
check "squeue was asked for the job" grep -q -- "--jobs $id" "$TMP/squeue.args"
check "one worker per node, a step of job $id beside its tasks" \
	grep -qF -- "--jobid=$id --overlap --ntasks=4 --ntasks-per-node=1 --nodelist=$NODES " "$TMP/srun.args"
check "8 ranks on 4 hosts read" grep -q '^collstack: 8 ranks on 4 hosts' "$TMP/o"
check "rank 5 is named behind, on $(node 3), in train_step" grep -q \
	"^rank 5 ($(node 3), pid [0-9]*) is at seq 8 outside any collective, in train_step (stack_pager.c:[0-9]*); 7 ranks wait in allreduce seq 9" "$TMP/o"
check "the tree parts at rank 5" sh -c "grep -q '\[5\] (1) train_step' '$TMP/o' &&
	grep -q '\[0-4,6-7\] (7) wait_allreduce' '$TMP/o'"
check "nothing on stderr" test ! -s "$TMP/e"
check "the job still runs" test "$(squeue -h -j "$id" -o %T)" = RUNNING

# An interrupt ends collstack's step on every node, its workers with it,
# and the job's own step and tasks live on, running. Twice: as soon as the
# step is known (the workers may not have started yet: a step kill that
# sweeps the agents before they forked their worker once left a worker
# behind, orphaned, holding its ranks), and once every task is held stopped
# by a worker. Each wait is on a condition, with a deadline.
workers() { pgrep -f -- "[-]-worker --slurm $id"; }
# held: the job's 8 tasks are in a ptrace stop (a worker holds them)
held() { [ "$(for p in $(pgrep -f "^$PAGER 9 5\$"); do awk '{ print $3 }' "/proc/$p/stat"; done | grep -c t)" -ge 8 ]; }
interrupt() { # interrupt WHEN: SIGINT to a collstack --slurm once WHEN holds, then check all is gone
	COLL_TEST_STACK_HOLD_MS=20000 "$BIN/collstack" --slurm "$id" >"$TMP/o" 2>"$TMP/e" &
	cs=$!
	echo $cs >>"$TMP/pids"
	for _ in $(seq 100); do "$1" && break; sleep 0.1; done
	check "$1: the condition came" "$1"
	kill -INT $cs
	for _ in $(seq 100); do kill -0 $cs 2>/dev/null || break; sleep 0.1; done
	check "$1: collstack ended on SIGINT" sh -c "! kill -0 $cs 2>/dev/null"
	wait $cs 2>/dev/null
	for _ in $(seq 100); do squeue -h -s -j "$id" -o %j | grep -q '^coll-' || break; sleep 0.1; done
	check "$1: its step is gone" sh -c "q=\$(squeue -h -s -j '$id' -o %j) && ! printf '%s\\n' \"\$q\" | grep -q '^coll-'"
	for _ in $(seq 100); do workers >/dev/null || break; sleep 0.1; done
	check "$1: no worker of it is left on any node" sh -c "! pgrep -f -- '[-]-worker --slurm $id' >/dev/null"
	for _ in $(seq 50); do held || break; sleep 0.1; done
	check "$1: no task is left stopped" sh -c "! ps -o stat= -p \"\$(pgrep -d, -f '^$PAGER 9 5\$')\" | grep -q '^[tT]'"
	check "$1: the job runs on" test "$(squeue -h -j "$id" -o %T)" = RUNNING
	check "$1: with all 8 tasks" test "$(pgrep -c -f "^$PAGER 9 5\$")" -eq 8
}
step_known() { squeue -h -s -j "$id" -o %j | grep -q '^coll-'; }
interrupt step_known
interrupt held
finish
