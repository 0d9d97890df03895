#!/bin/bash
# On a 4-GPU machine (device tool, nvidia-h100-x4 or nvidia-h200-x4), from
# the repository root, with PyTorch 2.11 and its NCCL 2.28:
#   tests/gpu/triage.sh BUILD OUT [LIBDIR]
# BUILD holds cmd/collstack and core/libnccl-profiler-coll.so; LIBDIR (default
# BUILD/lib) the libraries the machine lacks (libssh2, libjansson, libdw,
# libelf: see README.md). Scenarios one after the other, each a torchrun job
# of 4 ranks (triage.py) with coll's NCCL profiler plugin loaded, hung at
# step 8: stuck (rank 2 in save_checkpoint), groups (world and a {0,1}
# group, rank 1 in save_checkpoint), busy (rank 2's stream busy before the
# all-reduce), desync (rank 3 all-reduces half: hung inside the kernel on
# every rank); and cuda: collstack --cuda on the stuck job. Once every rank
# wrote its ready file (then 5 s), collstack runs with no arguments, with
# --match, with --pid of torchrun and with --pid of the ranks; each run's
# stdout, stderr, exit code and elapsed seconds go to OUT/<scenario>/<form>.*,
# with the pages, the GPUs' use and power, and the job's output. The job's
# process group is killed after, and what is left of it is said
# (OUT/<scenario>/leftover.txt, empty when nothing). All of it within 8
# minutes; OUT/summary.txt has a line per run.
set -u
B=$(cd "${1:?usage: triage.sh BUILD OUT [LIBDIR]}" && pwd)
OUT=${2:?usage: triage.sh BUILD OUT [LIBDIR]}
LIB=${3:-$B/lib}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CS=$B/cmd/collstack
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so
TORCHRUN=(torchrun)
command -v torchrun >/dev/null || TORCHRUN=(python3 -m torch.distributed.run)
T0=$(date +%s)
# 4 ranks, or as many GPUs as there are below that (groups needs 4)
NPROC=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NPROC" -le 4 ] 2>/dev/null || NPROC=4
[ "$NPROC" -ge 2 ] || NPROC=2
BUDGET_S=${TRIAGE_BUDGET_S:-450}	# the whole script stays under 8 minutes
nvidia-smi -L >"$OUT/gpus.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' \
	>>"$OUT/gpus.txt" 2>&1

# run DIR FORM ARGS...: collstack ARGS, timed; its output, code and seconds in DIR/FORM.*
run() {
	local d=$1 form=$2 s e code
	shift 2
	s=$(date +%s%N)
	timeout 120 "$CS" --no-color "$@" >"$d/$form.out" 2>"$d/$form.err"
	code=$?
	e=$(date +%s%N)
	echo "$code" >"$d/$form.code"
	awk -v n=$((e - s)) 'BEGIN { printf "%.3f\n", n / 1e9 }' >"$d/$form.time"
	printf '%-8s %-10s exit %-3s %7s s  collstack %s\n' "$(basename "$d")" "$form" "$code" \
		"$(cat "$d/$form.time")" "$*" >>"$OUT/summary.txt"
}

# start SCENARIO: the job in a process group of its own; sets job (its pid = pgid) and d
start() {
	d=$OUT/$1
	mkdir -p "$d/ready" "$d/shm" "$d/jobs"
	export COLL_STATUS_DIR=$d/shm COLL_JOB_DIR=$d/jobs TRIAGE_DIR=$d/ready TRIAGE_SCENARIO=$1
	setsid "${TORCHRUN[@]}" --standalone --nproc-per-node "$NPROC" tests/gpu/triage.py >"$d/job.txt" 2>&1 &
	job=$!
}

# established: every rank wrote its ready file (at most 150 s), then 5 s for the hang to settle
established() {
	for _ in $(seq 750); do
		[ "$(ls "$d/ready" | wc -l)" -ge "$NPROC" ] && break
		kill -0 "$job" 2>/dev/null || break
		sleep 0.2
	done
	if [ "$(ls "$d/ready" | wc -l)" -lt "$NPROC" ]; then
		echo "$(basename "$d"): the hang was not established (ready: $(ls "$d/ready" | tr '\n' ' '))" \
			>>"$OUT/summary.txt"
		return 1
	fi
	sleep 5
	ls -la "$d/shm" >"$d/pages.txt" 2>&1
	nvidia-smi --query-gpu=index,utilization.gpu,power.draw,memory.used --format=csv \
		>"$d/gpus.csv" 2>&1
}

ranks() { pgrep -d, -f 'tests/gpu/triage\.py' -P "$(pgrep -d, -f 'torch[.a-z]*run' -g "$job")" 2>/dev/null; }

# forms DIR: collstack's forms on the job
forms() {
	run "$1" plain
	run "$1" match --match triage.py
	run "$1" launcher --pid "$job"
	run "$1" ranks --pid "$(ranks)"
}

# stop: the whole group, TERM then KILL; what is left is said
stop() {
	kill -TERM -- -"$job" 2>/dev/null
	for _ in $(seq 50); do pgrep -g "$job" >/dev/null || break; sleep 0.1; done
	kill -KILL -- -"$job" 2>/dev/null
	wait "$job" 2>/dev/null
	pkill -KILL -f 'tests/gpu/triage\.py' 2>/dev/null
	for _ in $(seq 50); do pgrep -f 'tests/gpu/triage\.py' >/dev/null || break; sleep 0.1; done
	{ pgrep -a -g "$job"; pgrep -a -f 'tests/gpu/triage\.py'; pgrep -a -f '[c]ollstack --worker'; } \
		>"$d/leftover.txt" 2>&1
	[ -s "$d/leftover.txt" ] && echo "$(basename "$d"): LEFT BEHIND: $(tr '\n' ';' <"$d/leftover.txt")" \
		>>"$OUT/summary.txt"
}

scenarios="stuck groups busy desync"
[ "$NPROC" -ge 4 ] || scenarios="stuck busy desync"
for sc in $scenarios; do
	if [ $(($(date +%s) - T0)) -gt $((BUDGET_S - 60)) ]; then
		echo "$sc: skipped, the budget of $BUDGET_S s is nearly spent" >>"$OUT/summary.txt"
		continue
	fi
	start "$sc"
	if established; then
		forms "$d"
		if [ "$sc" = stuck ]; then
			# (5) --cuda on all four ranks of the same hang, with the default -T and --pid.
			c=$OUT/cuda
			mkdir -p "$c"
			cp "$d/pages.txt" "$c/"
			run "$c" cuda --cuda
			run "$c" cuda-ranks --cuda --pid "$(ranks)"
			grep -h 'GPU kernels' "$c"/cuda*.out >"$c/kernels.txt" 2>/dev/null
		fi
	fi
	stop
done
echo "total: $(($(date +%s) - T0)) s" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
