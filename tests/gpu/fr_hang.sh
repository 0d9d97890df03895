#!/bin/bash
# On the GPU machine (device tool, nvidia-h200-x2), from the repository root:
#   tests/gpu/fr_hang.sh BUILD OUT
# BUILD holds collrun and collstack (cmd/) and the libraries the machine lacks
# (lib/). A 2-rank PyTorch NCCL job (fr_hang.py) hangs with rank 1 outside
# any collective; collstack reads it live (each rank's Python and native
# frames, and NCCL's RAS service, which names the rank behind), then the
# flight recorder's dumps written on the watchdog timeout are read with
# collstack --fr, beside PyTorch's own analyzer where it runs. The ranks load
# coll's NCCL profiler plugin and make PyTorch's dump pipe, so the live
# verdict has every source; collstack --cuda lists their GPU kernels. Everything
# lands in OUT; summary.txt says what each source named.
set -u
B=$(cd "$1" && pwd); OUT=$2
mkdir -p "$OUT/fr"
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 COLL_STATUS_DIR=$OUT/shm COLL_JOB_DIR=$OUT/jobs
mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
	TORCH_FR_DUMP_TEMP_FILE=$OUT/fr/x_ FR_HANG_TIMEOUT_S=${FR_HANG_TIMEOUT_S:-100} \
	TORCH_NCCL_DEBUG_INFO_PIPE_FILE=$OUT/fr/pipe_ \
	NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so
nvidia-smi -L >"$OUT/gpus.txt" 2>&1
"$B/cmd/collrun" -n 2 python3 tests/gpu/fr_hang.py >"$OUT/job.txt" 2>&1 &
job=$!
for _ in $(seq 300); do
	[ "$(grep -c 'in \(train\|eval\)_step' "$OUT/job.txt")" -ge 2 ] && break
	kill -0 $job 2>/dev/null || break
	sleep 0.2
done
sleep 3
ls -la "$COLL_STATUS_DIR" >"$OUT/pages.txt" 2>&1
start=$(date +%s%N)
"$B/cmd/collstack" --no-color -T 120 >"$OUT/live.txt" 2>"$OUT/live.err"
echo "collstack live: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms" >>"$OUT/summary.txt"
"$B/cmd/collstack" --json -T 120 >"$OUT/live.json" 2>>"$OUT/live.err"
{
	echo "live verdict:"; sed -n '/^collstack:/,/^$/p' "$OUT/live.txt"
	echo "Python frames in the live tree:"; grep -E '\((fr_hang|__init__|distributed_c10d)\.py:' "$OUT/live.txt"
} >>"$OUT/summary.txt"
# The GPU kernels, through cuda-gdb: collstack --cuda, and cuda-gdb by hand on rank 0.
start=$(date +%s%N)
"$B/cmd/collstack" --no-color --cuda --no-fr-dump -T 120 >"$OUT/cuda.txt" 2>&1
echo "collstack --cuda: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms" >>"$OUT/summary.txt"
grep 'GPU kernels' "$OUT/cuda.txt" >>"$OUT/summary.txt"
pid0=$(pgrep -f '^python3 tests/gpu/fr_hang.py' | head -1)
start=$(date +%s%N)
timeout 100 "${CUDA_GDB:-/usr/local/cuda/bin/cuda-gdb}" -nx -q -batch -p "$pid0" \
	-ex "info cuda devices" -ex "info cuda kernels" >"$OUT/cuda_raw.txt" 2>&1
echo "cuda-gdb by hand: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms" >>"$OUT/summary.txt"
# The watchdog fires at the timeout and dumps; give it time to write both files.
for _ in $(seq 900); do
	grep -q -i 'timeout\|timed out' "$OUT/job.txt" && sleep 8 && break
	kill -0 $job 2>/dev/null || break
	sleep 0.2
done
kill $job 2>/dev/null; sleep 1; kill -9 $job 2>/dev/null
pkill -9 -f tests/gpu/fr_hang.py 2>/dev/null
wait 2>/dev/null
ls -la "$OUT/fr" >>"$OUT/summary.txt"
"$B/cmd/collstack" --fr "$OUT/fr/x_" >"$OUT/fr.txt" 2>&1
echo "collstack --fr: exit $?" >>"$OUT/summary.txt"
"$B/cmd/collstack" --fr "$OUT/fr/x_" --json >"$OUT/fr.json" 2>&1
python3 -m torch.distributed.flight_recorder.fr_trace "$OUT/fr" -p x_ >"$OUT/fr_trace.txt" 2>&1
echo "torch fr_trace: exit $?" >>"$OUT/summary.txt"
python3 - "$OUT/fr/x_0" >"$OUT/fr_keys.txt" 2>&1 <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
print(sorted(d.keys()))
e = d.get("entries", [])
print(len(e), "entries; keys of the last:", sorted(e[-1].keys()) if e else None)
print({k: e[-1][k] for k in ("collective_seq_id", "profiling_name", "state", "process_group")} if e else None)
PY
cat "$OUT/summary.txt"
