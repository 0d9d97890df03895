#!/bin/bash
# collrun --launcher slurm against a real slurmctld + slurmd + munge: ranks and
# variables from srun, a collective across its tasks, exit codes, SIGINT.
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME='=lo'

collrun --label --launcher slurm -n 4 sh -c 'echo "r=$COLL_RANK R=$RANK lr=$LOCAL_RANK/$LOCAL_WORLD_SIZE s=$COLL_SIZE/$WORLD_SIZE p=$SLURM_PROCID"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "4 ranks through srun"
for r in 0 1 2 3; do
	check "rank $r labelled, with Slurm's task id as its rank" grep -q "^\[$r\] r=$r R=$r lr=$r/4 s=4/4 p=$r\$" "$TMP/o"
done

collrun --launcher slurm -n 4 --no-label collcheck allreduce -b 8 -e 1M -f 8 -n 2 -w 1 >"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "collcheck allreduce under srun"
check "6 sizes, every #wrong 0" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 6 }' "$TMP/ar"

collrun --label --launcher slurm -n 4 --grace 1 bash -c '[ $COLL_RANK = 2 ] && exit 3; exec sleep 30' >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "the failing task's exit code"
check "the failing rank is named" grep -q 'collrun: rank 2 (pid [0-9]*) exited with code 3' "$TMP/e"

# --keep-going: srun leaves the other tasks running (--kill-on-bad-exit=0).
collrun --label --launcher slurm -n 4 --grace 0.2 -k bash -c '[ $COLL_RANK = 2 ] && exit 3; sleep 2; echo "rank $COLL_RANK finished"' >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "-k: the failing task's exit code"
check "-k: the failing rank is named" grep -q 'collrun: rank 2 (pid [0-9]*) exited with code 3' "$TMP/e"
check "-k: the other tasks ran to their end" test "$(grep -c 'finished$' "$TMP/o")" -eq 3

collrun --label --launcher slurm -n 2 --grace 1 bash -c '[ $COLL_RANK = 1 ] && kill -9 $$; exec sleep 30' >"$TMP/o" 2>"$TMP/e"
expect_code 137 $? "a task killed by SIGKILL gives 137"

# Each rank prints its job id: srun runs the job as coll-<COLL_JOBID>.
"$BIN/collrun" --label --launcher slurm -n 2 bash -c 'trap "echo got INT; exit 130" INT; echo "ready $COLL_JOBID"; while :; do sleep 0.1; done' >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c ready "$TMP/o")" -eq 2 ] && break; sleep 0.1; done
job=coll-$(sed -n 's/^\[0\] ready \([0-9a-f]\{16\}\)$/\1/p' "$TMP/o")
# jobs PATTERN: how many jobs squeue lists whose whole name matches PATTERN
# (squeue's failure is a failure, not an empty queue).
jobs() { squeue -h -o '%j' >"$TMP/squeue" && grep -cx -- "$1" "$TMP/squeue"; }
check "squeue shows our running job as $job" test "$(jobs "$job")" -eq 1
kill -INT $pid
wait $pid
expect_code 130 $? "SIGINT reaches the tasks (through scancel)"
check "both tasks saw SIGINT" test "$(grep -c 'got INT' "$TMP/o")" -eq 2
# A job may show as completing for a moment; none of this test's may stay.
for _ in $(seq 100); do [ "$(jobs 'coll-[0-9a-f]*')" = 0 ] && break; sleep 0.1; done
check "no job of ours is left in squeue ($(paste -sd' ' "$TMP/squeue"))" test "$(jobs 'coll-[0-9a-f]*')" = 0
# -x: the user's variables reach every task, given a value or taken from
# here, and neither srun's nor anyone's command line holds them (ps).
secret=tok-$RANDOM$RANDOM-$$
T_SECRET=$secret COLL_X_T_OWN=mine "$BIN/collrun" --label --launcher slurm -n 2 -x T_SECRET -x T_GIVEN=given-value \
	sh -c 'echo "got $T_SECRET $T_GIVEN ${T_OWN:-none} $COLL_X_T_OWN"; echo up; sleep 3' >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 150); do [ "$(grep -c ' up$' "$TMP/o")" -ge 2 ] && break; sleep 0.1; done
check "-x: 2 tasks up" test "$(grep -c ' up$' "$TMP/o")" -eq 2
check "-x: no process's arguments hold the value" test "$(pgrep -fc -- "$secret")" -eq 0
# srun runs with the environment it had: the variables are the tasks' only.
srun_pid=$(pgrep -P $pid -x srun | head -1)
check "-x: srun itself does not have them" sh -c "[ -n '$srun_pid' ] && ! tr '\\0' '\\n' </proc/$srun_pid/environ | grep -q '^T_GIVEN='"
wait $pid
expect_code 0 $? "-x: the job"
# A COLL_X_ variable of the user's own (srun passes the environment on) stays as it is.
check "-x: both tasks have the variables, and only those" test "$(grep -c "] got $secret given-value none mine\$" "$TMP/o")" -eq 2
finish
