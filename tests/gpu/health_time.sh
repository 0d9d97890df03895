#!/bin/bash
# collcheck health on the GPU machine: how long it takes where NVML, the CUDA
# driver and NCCL are there to be loaded (the claim in docs/SLURM.md: well
# under a second or two on an idle host), and what it finds there.
#   bash tests/gpu/health_time.sh BUILD OUT
# It prints "health: exit E, N ms (best of 5), gpu.count G" and the summing-up
# line; OUT/health.json has the record. E is 0 on a healthy host (warnings
# leave it 0), 1 with an ERROR finding; N under 2000 proves the claim.
set -u
B=$(cd "$1" && pwd) OUT=$2
mkdir -p "$OUT"
best=
for _ in 1 2 3 4 5; do
	t0=$(date +%s%N)
	"$B/cmd/collcheck" health --json >"$OUT/health.json" 2>"$OUT/health.err"
	code=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
done
g=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['hosts'][0]['facts'].get('gpu.count'))" "$OUT/health.json")
echo "health: exit $code, $best ms (best of 5), gpu.count $g"
"$B/cmd/collcheck" health | tail -n 1
