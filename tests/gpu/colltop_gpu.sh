#!/bin/bash
# colltop's GPU panel on the GPU machine, in batch mode (one call there):
#   1. idle GPUs: colltop --once --json and the text tables;
#   2. under load (tests/gpu/colltop_load.py, a 2-rank PyTorch NCCL job under
#      collrun with coll's NCCL profiler plugin): --iterations 4, GPUs busy,
#      power up, the job's status pages seen advancing;
#   3. the same job stalled (rank 1 stops calling collectives): colltop names
#      the job stalled and rank 1 behind.
#   bash tests/gpu/colltop_gpu.sh BUILD OUT
set -u
B=$(cd "$1" && pwd) OUT=$2
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_NVLS_ENABLE=0
export COLL_STATUS_DIR=$(mktemp -d) COLL_JOB_DIR=$(mktemp -d)
T=$B/cmd/colltop
HERE=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=index,name,utilization.gpu,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >"$OUT/smi_idle.csv" 2>&1
"$T" --once --json -n 2 >"$OUT/idle.json" 2>"$OUT/idle.err"; echo "idle json: exit $?"
"$T" --once -n 2 --by-host >"$OUT/idle.txt" 2>&1; echo "idle text: exit $?"
NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so "$B/cmd/collrun" -n 2 \
	python3 "$HERE/colltop_load.py" 20 stall 30 >"$OUT/load.out" 2>&1 &
job=$!
sleep 12
nvidia-smi --query-gpu=index,name,utilization.gpu,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv >"$OUT/smi_load.csv" 2>&1
"$T" --iterations 4 -n 2 >"$OUT/load.txt" 2>&1; echo "load text: exit $?"
"$T" --json --iterations 3 -n 2 >"$OUT/load.json" 2>"$OUT/load.err"; echo "load json: exit $?"
sleep 10
"$T" --json --iterations 8 -d 1 --stall 3 -n 2 >"$OUT/stall.json" 2>"$OUT/stall.err"; echo "stall json: exit $?"
"$T" --once --stall 0.1 -n 2 >"$OUT/stall.txt" 2>&1
kill $job 2>/dev/null; wait $job 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys, os
o = sys.argv[1]
def frames(n):
    return [json.loads(l) for l in open(os.path.join(o, n)) if l.startswith("{")]
for name in ("idle.json", "load.json", "stall.json"):
    fr = frames(name)
    if not fr:
        print(name, "no frames"); continue
    h = fr[-1]["hosts"][0]
    print(name, "gpu_why:", repr(h.get("gpu_why")))
    for g in h["gpu"]:
        print("  gpu", g["index"], g["name"], "util", g["util"], "mem", g["mem_used"] >> 20, "/", g["mem_total"] >> 20, "MiB",
              "power", g["power_mw"] / 1000, "W temp", g["temp_c"], "throttle", g["throttle"], "pcie tx/rx KB/s", g["pcie_tx_kbs"], g["pcie_rx_kbs"], "nvlink tx/rx KiB", g["nvlink_tx_kib"], g["nvlink_rx_kib"], "nvlink tx/rx MB/s", round(g["nvlink_tx_bps"] / 1e6, 1), round(g["nvlink_rx_bps"] / 1e6, 1))
    for j in fr[-1]["jobs"]:
        print("  job", j["job"], "stalled", j["stalled"], "behind", j["behind"], j.get("how"), "seqs", [(r["rank"], r["seq_queued"], r["seq_done"]) for r in j["ranks"]])
PY
sed -n 1,12p "$OUT/load.txt"
cat "$OUT/stall.txt" | head -8
