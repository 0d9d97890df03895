#!/bin/bash
# Time to the verdict on a GPU machine (issue 35), one run, side by side: a
# 4-rank PyTorch job (torch_hang.py) started by torchrun, NCCL with coll's
# profiler plugin, NCCL_NVLS_ENABLE=0, hung with rank CULPRIT (default 2) in
# Python while the others wait in the all-reduce. Measured on the same hung
# job, one after another:
#   collstack --pid RANKS           the verdict
#   collstack --pid RANKS --cuda    the verdict and every rank's GPU kernels
#   collstack                       nothing given: finds the stalled job itself
#   collstack --pid P, per rank     a py-spy-style dump, one process at a time
#   gdb -p P ... 'thread apply all bt', per rank, one after another
#   cuda-gdb -p P ... 'info cuda kernels', per rank, one after another
#
#   bench/triage/gpu_time.sh BUILD LIBDIR [OUT]
# BUILD: a coll build (cmd/collstack, core/libnccl-profiler-coll.so); LIBDIR:
# put first in LD_LIBRARY_PATH (libssh2, libdw, ... the machine lacks); OUT
# (default $OUT): gets gpu_time.md and every tool's output. NPROC ranks
# (default 4, one GPU each), CULPRIT (default 2) the one in Python; under 6
# minutes: each tool is bounded (CUDA_GDB_T per cuda-gdb, default 40 s;
# CUDA_T for collstack --cuda's -T, default 80 s) and cut to what is left of
# BUDGET_S (340 s from the start; a cut tool's row says how far it got).
# GDB: the gdb for the dumps (default gdb, else cuda-gdb).
set -u
B=$(cd "${1:?usage: gpu_time.sh BUILD LIBDIR [OUT]}" && pwd)
LIB=${2:?usage: gpu_time.sh BUILD LIBDIR [OUT]}
O=${3:-${OUT:?give OUT}}
NPROC=${NPROC:-4} CULPRIT=${CULPRIT:-2} CUDA_GDB=${CUDA_GDB:-/usr/local/cuda/bin/cuda-gdb}
CUDA_GDB_T=${CUDA_GDB_T:-40} CUDA_T=${CUDA_T:-80} BUDGET_S=${BUDGET_S:-340}
# gdb for the stack dumps; where it is missing (the GPU machine has none), cuda-gdb, which is gdb.
GDB=${GDB:-$(command -v gdb || echo "$CUDA_GDB")}
DEADLINE=$(( $(date +%s) + BUDGET_S ))
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O/raw"
W=$(mktemp -d /tmp/coll-gpu-time.XXXXXX)
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 COLL_STATUS_DIR=$W/shm COLL_JOB_DIR=$W/jobs TRIAGE_PIDS=$W/pids \
	TRIAGE_CULPRIT=$CULPRIT COLL_CUDA_GDB=$CUDA_GDB NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so
mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR" "$TRIAGE_PIDS"
job=""
# However this ends: the job's whole session and every rank gone, nothing left stopped.
cleanup() {
	for f in "$TRIAGE_PIDS"/*; do
		[ -f "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null && kill -9 "$(cat "$f")" 2>/dev/null
	done
	[ -n "$job" ] && kill -9 -- "-$job" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
now() { date +%s%N; }
ms() { echo $(( ($(now) - $1) / 1000000 )); }
# cap S: S, or less where the whole run's budget has less left (at least 1: timeout 0 would mean none).
cap() { local l=$(( DEADLINE - $(date +%s) - 5 )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
row() { printf '| %s | %s | %s | %s |\n' "$1" "$(awk -v m="$2" 'BEGIN { printf "%.2f", m / 1000 }')" "$3" "$4" >>"$W/rows"; }

nvidia-smi -L >"$O/raw/gpus.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' \
	>"$O/raw/versions.txt" 2>&1
setsid python3 -m torch.distributed.run --nproc-per-node "$NPROC" "$HERE/torch_hang.py" >"$O/raw/job.txt" 2>&1 &
job=$!
for _ in $(seq 900); do
	[ "$(ls "$TRIAGE_PIDS" | wc -l)" -ge "$NPROC" ] && break
	kill -0 $job 2>/dev/null || { echo "gpu_time: the job ended: see $O/raw/job.txt" >&2; exit 1; }
	sleep 0.2
done
[ "$(ls "$TRIAGE_PIDS" | wc -l)" -ge "$NPROC" ] || { echo "gpu_time: the job did not reach its hang in 180 s" >&2; exit 1; }
sleep 3	# collstack calls a job stuck after 1 s without progress
pids=() && for r in $(seq 0 $((NPROC - 1))); do pids+=("$(cat "$TRIAGE_PIDS/$r")"); done
list=$(IFS=,; echo "${pids[*]}")
# headline FILE: collstack's culprit lines, else its first lines past the header and notes.
headline() {
	{ grep '^=> ' "$1" || awk '/^$/ { exit } 1' "$1" | grep -v '^collstack: [0-9]* \(ranks\|tasks\) on\|^note: '; } |
		head -2 | tr '\n' ' ' | sed 's/|/\\|/g'
}

t=$(now); "$B/cmd/collstack" --no-color --pid "$list" -T 60 >"$O/raw/collstack.txt" 2>&1; c=$?
row "collstack --pid ($NPROC ranks)" "$(ms "$t")" "exit $c" "$(headline "$O/raw/collstack.txt")"
t=$(now); "$B/cmd/collstack" --no-color --pid "$list" --cuda -T "$(cap "$CUDA_T")" >"$O/raw/collstack_cuda.txt" 2>&1; c=$?
row "collstack --pid ($NPROC ranks) --cuda -T $CUDA_T" "$(ms "$t")" "exit $c, kernels of $(grep -c 'GPU kernels: ' "$O/raw/collstack_cuda.txt") of $NPROC ranks listed" "$(headline "$O/raw/collstack_cuda.txt")"
t=$(now); "$B/cmd/collstack" --no-color -T 60 >"$O/raw/collstack_auto.txt" 2>&1; c=$?
row "collstack (nothing given)" "$(ms "$t")" "exit $c" "$(headline "$O/raw/collstack_auto.txt")"
t=$(now); for p in "${pids[@]}"; do "$B/cmd/collstack" --no-color --pid "$p" -T 60; done >"$O/raw/one_by_one.txt" 2>&1
row "collstack --pid P, per rank, one after another (py-spy dump style)" "$(ms "$t")" \
	"$(grep -c 'save_checkpoint' "$O/raw/one_by_one.txt") lines with save_checkpoint" "a person compares $NPROC dumps"
t=$(now); for p in "${pids[@]}"; do timeout "$(cap 60)" "$GDB" -nx -p "$p" -batch -ex 'thread apply all bt'; done >"$O/raw/gdb.txt" 2>&1
row "$(basename "$GDB") -p P -batch -ex 'thread apply all bt', per rank" "$(ms "$t")" \
	"$(grep -c '^Thread ' "$O/raw/gdb.txt") threads" "native frames only: Python's are eval loops"
t=$(now); n=0
for p in "${pids[@]}"; do
	timeout "$(cap "$CUDA_GDB_T")" "$CUDA_GDB" -nx -q -batch -p "$p" -ex 'info cuda kernels' >"$O/raw/cuda_gdb.$p.txt" 2>&1 &&
		grep -q 'Kernel\|No CUDA kernels' "$O/raw/cuda_gdb.$p.txt" && n=$((n + 1))
done
row "cuda-gdb -p P -batch -ex 'info cuda kernels', per rank (each ≤ ${CUDA_GDB_T} s)" "$(ms "$t")" "answered for $n of $NPROC" "kernels only: no verdict"
# Nothing left stopped by a tool that was cut short.
for p in "${pids[@]}"; do
	[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = t ] && echo "rank pid $p left in a trace stop" >>"$W/rows.note"
done
{
	echo "# Time to the verdict: $NPROC-rank torchrun job, rank $CULPRIT in Python"
	echo
	echo "$(cat "$O/raw/versions.txt"), $(grep -c '^GPU' "$O/raw/gpus.txt") GPUs ($(sed -n '1s/^GPU 0: \([^(]*\).*/\1/p' "$O/raw/gpus.txt")), NCCL_NVLS_ENABLE=0, coll's profiler plugin loaded; $(date -u +%F); one hung job, every tool on it in turn."
	echo
	echo "| tool | seconds | result | what it says |"
	echo "|---|---:|---|---|"
	cat "$W/rows"
	[ -f "$W/rows.note" ] && { echo; cat "$W/rows.note"; }
} >"$O/gpu_time.md"
cat "$O/gpu_time.md"
