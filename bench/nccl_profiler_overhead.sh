#!/bin/bash
# The NCCL profiler plugin's cost: all-reduce bus bandwidth of a 2-rank
# torch.distributed job (bench/nccl_allreduce.py) without the plugin and
# with it (NCCL_PROFILER_PLUGIN=libnccl-profiler-coll.so) three ways: kernel
# events on (the default), enqueue events only, and loaded with no page (so
# asking nothing of NCCL's events); runs alternated, REPS each (default 3),
# the best of each size kept; a table side by side with the ratios, then the
# plugin's CPU time per collective (bench_ncclprof_calls). Needs two GPUs (the device tool's
# nvidia-h200-x2), from the repository root:
#   bench/nccl_profiler_overhead.sh BUILD [REPS]
# BUILD holds cmd/collrun and core/libnccl-profiler-coll.so (tests/gpu/README.md).
set -u
B=$(cd "$1" && pwd); REPS=${2:-3}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_NVLS_ENABLE=0
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export COLL_STATUS_DIR=$W/shm COLL_JOB_DIR=$W/jobs; mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
PY=${PYTHON:-python3}
for rep in $(seq "$REPS"); do
	"$B/cmd/collrun" -n 2 "$PY" bench/nccl_allreduce.py >"$W/off.$rep" 2>&1 ||
		{ echo "run without the plugin failed:"; tail -5 "$W/off.$rep"; exit 1; }
	NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so \
		"$B/cmd/collrun" -n 2 "$PY" bench/nccl_allreduce.py >"$W/on.$rep" 2>&1 ||
		{ echo "run with the plugin failed:"; tail -5 "$W/on.$rep"; exit 1; }
	NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so COLL_NCCL_KERNEL_EVENTS=0 \
		"$B/cmd/collrun" -n 2 "$PY" bench/nccl_allreduce.py >"$W/enq.$rep" 2>&1 ||
		{ echo "run with the plugin, enqueue events only, failed:"; tail -5 "$W/enq.$rep"; exit 1; }
	# The plugin loaded but asking for no event (it can make no page): NCCL's cost of a plugin.
	NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so COLL_STATUS_DIR=/nonexistent \
		"$B/cmd/collrun" -n 2 "$PY" bench/nccl_allreduce.py >"$W/null.$rep" 2>&1 ||
		{ echo "run with the plugin, no events, failed:"; tail -5 "$W/null.$rep"; exit 1; }
done
best() { cat "$W/$1".* | awk '$(NF-1) ~ /^[0-9]+$/ && $NF ~ /^[0-9.]+$/ { n=$(NF-1); v=$NF; if (v > b[n]) b[n] = v } END { for (n in b) print n, b[n] }' | sort -n; }
best off >"$W/off"; best on >"$W/on"; best enq >"$W/enq"; best null >"$W/null"
echo "busbw GB/s, best of $REPS runs of ${BENCH_ITERS:-40} all-reduces each; on: kernel events too (the default),"
echo "enq: enqueue events only, null: the plugin loaded but asking for no event"
printf '%10s %9s %9s %9s %9s %8s %8s %8s\n' bytes off on enq null on/off enq/off null/off
join "$W/off" "$W/on" | join - "$W/enq" | join - "$W/null" |
	awk '{ printf "%10d %9.2f %9.2f %9.2f %9.2f %8.4f %8.4f %8.4f\n", $1, $2, $3, $4, $5, $3 / $2, $4 / $2, $5 / $2 }'
echo
COLL_STATUS_DIR=$W/shm "$B/bench/bench_ncclprof_calls" "$B/core/libnccl-profiler-coll.so" 24
