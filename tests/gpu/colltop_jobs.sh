#!/bin/bash
# colltop names a job's own straggler on the GPU machine (issue 39), one call:
# a torchrun job of 4 ranks (one per GPU, tests/gpu/colltop_slow.py) with
# coll's NCCL profiler plugin, beside colltop -b --json with its own 2-rank
# probe (colltop never joins the job):
#   1. slow: rank 2 (rank 1 with 2 GPUs) sleeps 40 ms before each all-reduce:
#      colltop names it;
#   2. even: no rank slowed: colltop names none;
# each while colltop --listen serves /metrics, scraped once a second.
#   bash tests/gpu/colltop_jobs.sh BUILD OUT [LIBDIR]
set -u
B=$(cd "${1:?usage: colltop_jobs.sh BUILD OUT [LIBDIR]}" && pwd)
OUT=${2:?usage}
LIB=${3:-$B/lib}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_NVLS_ENABLE=0
export NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so
export COLL_STATUS_DIR=$(mktemp -d) COLL_JOB_DIR=$(mktemp -d)
T=$B/cmd/colltop
TORCHRUN=(torchrun)
command -v torchrun >/dev/null || TORCHRUN=(python3 -m torch.distributed.run)
NPROC=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NPROC" -le 4 ] 2>/dev/null || NPROC=4
nvidia-smi -L >"$OUT/gpus.txt" 2>&1
nvidia-smi --query-gpu=index,pci.bus_id --format=csv >>"$OUT/gpus.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' \
	>>"$OUT/gpus.txt" 2>&1
for sc in slow even; do
	d=$OUT/$sc
	mkdir -p "$d"
	slow=-1
	# rank 2, or rank 1 on a machine of 2 GPUs
	[ $sc = slow ] && slow=$((NPROC > 2 ? 2 : 1))
	SLOW_RANK=$slow SLOW_MS=40 setsid "${TORCHRUN[@]}" --nproc-per-node "$NPROC" \
		"$HERE/colltop_slow.py" 45 >"$d/job.out" 2>&1 &
	job=$!
	# the job's pages, once its ranks run
	for _ in $(seq 120); do
		[ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge "$NPROC" ] && break
		sleep 0.5
	done
	ls -l "$COLL_STATUS_DIR" >"$d/pages.txt"
	port=$((19100 + RANDOM % 500))
	"$T" -b --json -n 12 --np 2 --listen 127.0.0.1:$port >"$d/top.json" 2>"$d/top.err" &
	top=$!
	for i in $(seq 12); do
		sleep 1
		curl -s "http://127.0.0.1:$port/metrics" >"$d/metrics.$i.txt" 2>/dev/null
	done
	wait $top
	echo "colltop: exit $?" >"$d/top.code"
	"$T" -b -n 6 --np 2 >"$d/top.txt" 2>&1
	kill -- -$job 2>/dev/null
	wait $job 2>/dev/null
	pkill -f colltop_slow.py 2>/dev/null
	# A job killed by a signal leaves its plugin's pages (NCCL never finalizes): the next starts clean.
	rm -f "$COLL_STATUS_DIR"/coll.*
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
o = sys.argv[1]
for sc in ("slow", "even"):
    d = os.path.join(o, sc)
    fr = [json.loads(l) for l in open(os.path.join(d, "top.json")) if l.startswith("{")]
    print(sc, "frames", len(fr), open(os.path.join(d, "top.code")).read().strip())
    for f in fr[-3:]:
        for j in f.get("jobs", []):
            print("  job", j.get("job"), "comm", j.get("comm"), "straggler", j.get("straggler"),
                  "late_ms", [(r.get("rank"), r.get("late_ms"), r.get("straggler"), r.get("gpu"), r.get("gpu_bus")) for r in j.get("ranks", [])])
    print("  text:")
    for l in open(os.path.join(d, "top.txt")):
        if "late" in l or "straggl" in l or "holds" in l:
            print("   ", l.rstrip())
    m = sorted(x for x in os.listdir(d) if x.startswith("metrics."))
    last = [l for l in open(os.path.join(d, m[-1])) if l.startswith("coll_job") and "late" in l] if m else []
    print("  metrics:", "".join(last[:8]))
PY
