#!/bin/bash
# collstack --slurm JOBID from outside the job: squeue names its nodes, the
# workers run as a step of it (srun --jobid --overlap), every task is read and
# the rank behind is named; an interrupt ends collstack's step, never the job;
# a job that is not running, an unknown id and a missing squeue are said.
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME='=lo'
unset SLURM_JOB_ID SLURM_JOBID SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE
NAME=hung-t0404-$$	# not coll-*: that is how collstack's own step is named
PAGER=${COLL_BUILD:?}/tests/stack_pager
cleanup_slurm() { scancel --name="$NAME" 2>/dev/null; scancel --name="$NAME-held" 2>/dev/null; cleanup; }
trap cleanup_slurm EXIT

# Shims that log how srun and squeue were called, then run the real ones.
mkdir -p "$TMP/shim" "$TMP/empty"
for t in srun squeue; do
	printf '#!/bin/sh\necho "$*" >>"%s/%s.args"\nexec "%s" "$@"\n' "$TMP" "$t" "$(command -v $t)" >"$TMP/shim/$t"
	chmod +x "$TMP/shim/$t"
done

# A job of two tasks hung in an all-reduce: task 1 computes at seq 8, task 0 waits in seq 9.
srun -n 2 --job-name="$NAME" bash -c \
	'COLL_RANK=$SLURM_PROCID COLL_SIZE=2 COLL_JOBID=000000000000a404 exec "$0" 9 1' "$PAGER" \
	>"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 200); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 2 ] && break; sleep 0.1; done
check "the job's two tasks published their pages" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 2
id=$(squeue -h -n "$NAME" -o %i)
check "the job runs (id '$id')" test -n "$id"
sleep 1.5

PATH=$TMP/shim:$PATH "$BIN/collstack" --slurm "$id" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--slurm $id from outside the job: a culprit"
check "squeue was asked for the job" grep -q -- "--jobs $id" "$TMP/squeue.args"
check "the workers ran as a step of job $id, beside its tasks" \
	sh -c "grep -q -- '--jobid=$id --overlap' '$TMP/srun.args'"
check "one worker on the job's node" grep -q -- "--ntasks=1 .*--nodelist=$(hostname -s)" "$TMP/srun.args"
check "both tasks read, by their ranks" grep -q '^collstack: 2 ranks on 1 host' "$TMP/o"
check "rank 1 is named behind, in train_step" grep -q "^rank 1 ($(hostname -s)\|$(hostname)), pid [0-9]*) is at seq 8 outside any collective, in train_step (stack_pager.c:[0-9]*); 1 rank waits in allreduce seq 9" "$TMP/o"
check "the tree parts at rank 1" sh -c "grep -q '\[1\] (1) train_step' '$TMP/o' && grep -q '\[0\] (1) wait_allreduce' '$TMP/o'"
check "nothing on stderr" test ! -s "$TMP/e"
check "the job still runs" test "$(squeue -h -j "$id" -o %T)" = RUNNING
# A user's squeue filters (SQUEUE_USERS here) do not hide the job from collstack.
SQUEUE_USERS=nobody SQUEUE_STATES=PENDING "$BIN/collstack" --slurm "$id" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "with SQUEUE_USERS=nobody SQUEUE_STATES=PENDING set"
check "... the job is found all the same" grep -q '^rank 1 (' "$TMP/o"

# Inside the allocation the nodes are in the environment: no squeue, still a step of it.
: >"$TMP/squeue.args"; : >"$TMP/srun.args"
SLURM_JOB_ID=$id SLURM_JOB_NODELIST=$(hostname -s) PATH=$TMP/shim:$PATH \
	"$BIN/collstack" --slurm "$id" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--slurm $id inside its allocation"
check "... asks squeue nothing" test ! -s "$TMP/squeue.args"
check "... runs its worker as a step of the job" grep -q -- "--jobid=$id --overlap" "$TMP/srun.args"
check "... and names rank 1" grep -q '^rank 1 (' "$TMP/o"
: >"$TMP/srun.args"
SLURM_JOB_ID=$id SLURM_JOB_NODELIST=$(hostname -s) PATH=$TMP/shim:$PATH \
	"$BIN/collstack" --slurm "$id" --launcher slurm --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--launcher slurm, inside the allocation"
check "... a step of the job all the same (never scancel's reach)" grep -q -- "--jobid=$id --overlap" "$TMP/srun.args"

# An interrupt ends collstack's step; the job's own step and tasks live on.
COLL_TEST_STACK_HOLD_MS=20000 "$BIN/collstack" --slurm "$id" >"$TMP/o" 2>"$TMP/e" &
cs=$!
echo $cs >>"$TMP/pids"
for _ in $(seq 100); do squeue -h -s -j "$id" -o %j | grep -q '^coll-' && break; sleep 0.1; done
check "collstack's step is there" sh -c "squeue -h -s -j '$id' -o %j | grep -q '^coll-'"
kill -INT $cs
for _ in $(seq 100); do kill -0 $cs 2>/dev/null || break; sleep 0.1; done
check "collstack ended on SIGINT" sh -c "! kill -0 $cs 2>/dev/null"
wait $cs 2>/dev/null
for _ in $(seq 300); do squeue -h -s -j "$id" -o %j | grep -q '^coll-' || break; sleep 0.1; done
check "its step is gone" sh -c "! squeue -h -s -j '$id' -o %j | grep -q '^coll-'"
check "the job runs on" test "$(squeue -h -j "$id" -o %T)" = RUNNING
check "with its step" sh -c "squeue -h -s -j '$id' -o %j | grep -qx '$NAME'"
check "and both tasks" test "$(pgrep -c -f "^$PAGER 9 1\$")" -eq 2

# What cannot be read is said in one line.
held=$(sbatch --parsable --hold --job-name="$NAME-held" --wrap 'sleep 100' 2>"$TMP/e")
"$BIN/collstack" --slurm "$held" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a held job"
check "... is not running, and the state is said" grep -qx "collstack: --slurm $held: the job is PENDING, not running: it has no stacks to read" "$TMP/e"
"$BIN/collstack" --slurm 987654 >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "an unknown job id"
check "... squeue's reason, on one line" sh -c "test \$(wc -l <'$TMP/e') -eq 1 && grep -q '^collstack: --slurm 987654: squeue failed: .*[Ii]nvalid job id' '$TMP/e'"
PATH=$TMP/empty "$BIN/collstack" --slurm "$id" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "no squeue"
check "... says to install it or give -H" grep -q '^collstack: --slurm [0-9]*: squeue is not in PATH (install slurm-client), or give the job.s nodes with -H$' "$TMP/e"
finish
