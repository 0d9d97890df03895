#!/bin/bash
# collstack --slurm JOBID on torchrun under srun (issue 35): srun starts one
# task, a torchrun-shaped launcher (tests/stack/torchrun), which starts 4
# workers with RANK 0-3 while srun's SLURM_PROCID (0, the node's) is in every
# environment; rank 2 sits in save_checkpoint() while the others wait in
# allreduce seq 6 through coll's NCCL profiler plugin. The workers are ranks
# 0-3 by RANK (torchrun's agent, which carries SLURM_PROCID 0, used to be a
# rank too, so no rank kept its number), torchrun is shown once as the
# launcher, and rank 2 is named: by --slurm JOBID, and with nothing named
# (the stalled job here is found by its tasks' SLURM_JOB_ID).
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME='=lo'
unset SLURM_JOB_ID SLURM_JOBID SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
# A sanitized plugin needs the sanitizers' runtimes loaded first, in the job's tasks only
# (the Slurm bed's tests are not told COLL_TEST_CFLAGS: the plugin's libraries say it).
preload=()
if ldd "$COLL_NCCLPROF" 2>/dev/null | grep -q libasan; then
	preload=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
		ASAN_OPTIONS=detect_leaks=0)
fi
NAME=hung-t0703-$$	# not coll-*: that is how collstack's own step is named
cleanup_slurm() { scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_slurm EXIT
cp -r "$COLL_SRC/tests/stack/torchrun" "$TMP/tr"
chmod -R a+rX "$TMP"

srun -n 1 --job-name="$NAME" env "${preload[@]}" "$TMP/tr/torchrun" --nproc-per-node 4 "$TMP/tr/rank.py" \
	>"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do [ "$(grep -c '^ready' "$TMP/job.out")" -ge 4 ] && break; sleep 0.1; done
check "torchrun under srun started 4 workers" test "$(grep -c '^ready' "$TMP/job.out")" -ge 4
id=$(squeue -h -n "$NAME" -o %i)
p2=$(awk '$1 == "ready" && $2 == 2 {print $3}' "$TMP/job.out")
agent=$(pgrep -f "^[^ ]*python3[^ ]* $TMP/tr/torchrun" | head -1)

# The workers say "ready" once they are where they stay; the pages of one
# may still be a moment behind on a busy machine: read until the verdict holds.
for _ in $(seq 60); do
	"$BIN/collstack" --slurm "$id" --no-color >"$TMP/o" 2>"$TMP/e"
	code=$?
	[ $code = 1 ] && grep -q '^=> rank 2 ' "$TMP/o" && break
	sleep 0.2
done
expect_code 1 $code "--slurm $id: a culprit"
check "4 ranks, the agent is none of them" grep -q '^collstack: 4 ranks on 1 host' "$TMP/o"
check "torchrun shown once as the launcher" test "$(grep -c "^launcher: torchrun (pid $agent, host " "$TMP/o")" = 1
check "ranks carry their numbers" sh -c "! grep -q 'do not all carry a distinct rank' '$TMP/o'"
check "rank 2 named" grep -qE "^=> rank 2 \([^,]*, pid $p2\) holds the others up, behind in allreduce seq 6 .*\(NCCL profiler plugin, stacks\)\$" "$TMP/o"
check "the tree holds ranks 0-3" grep -q '^\[0-3\] (4) ' "$TMP/o"
# Nothing named: the job is found here, and read as --slurm reads it.
for _ in $(seq 60); do
	"$BIN/collstack" --no-color >"$TMP/o" 2>"$TMP/e"
	code=$?
	[ $code = 1 ] && grep -q '^=> rank 2 ' "$TMP/o" && break
	sleep 0.2
done
expect_code 1 $code "nothing named: a culprit"
check "nothing named: Slurm job $id found by its tasks" grep -q "^job: Slurm job $id, found by its tasks here (SLURM_JOB_ID) (4 ranks here, [^;]*; pick it again with --slurm $id)\$" "$TMP/o"
check "nothing named: 4 ranks, rank 2 named" sh -c "grep -q '^collstack: 4 ranks on 1 host' '$TMP/o' && grep -q '^=> rank 2 ([^,]*, pid $p2) holds the others up' '$TMP/o'"
finish
