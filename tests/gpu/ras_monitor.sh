#!/bin/bash
# On the GPU machine (device tool, nvidia-h200-x2), from the repository root:
#   tests/gpu/ras_monitor.sh BUILD OUT [LIBDIR] [NCCL_HOME]
# BUILD holds cmd/colltop and core/libnccl-profiler-coll.so; LIBDIR (default
# BUILD/lib) the libraries the machine lacks (README.md); NCCL_HOME an NCCL
# build (NCCL_HOME/lib/libnccl.so.2, NCCL_HOME/bin/ncclras: 2.30 built from
# source), preloaded under PyTorch; without it, PyTorch's own NCCL (2.28).
#
# A 2-rank torchrun job all-reduces with coll's profiler plugin loaded and
# NCCL_DEBUG=INFO, then:
#   OUT/abi.txt         NCCL's "PROFILER/Plugin: Loaded coll (vN)" lines: v6
#                       under 2.29+, v5 under 2.27-2.28 (the newest each knows)
#   OUT/monitor.raw     the MONITOR stream as the wire gives it (a client of
#                       this script's: CLIENT PROTOCOL 2, SET FORMAT json,
#                       MONITOR), to replace tests/stack/ras/monitor.json
#   OUT/ncclras.txt     `ncclras -m` (text) beside it, when NCCL_HOME has it:
#                       to replace tests/stack/ras/monitor.txt
#   OUT/colltop.txt     colltop -b --ras, whose alerts should name the death
# Rank 1 (its RAS service on 28029; rank 0 serves 28028) is killed with
# SIGKILL once the followers are up; RAS declares it dead within
# NCCL_RAS_TIMEOUT_FACTOR x 60 s at most. OUT/summary.txt says what was seen.
# Under 5 minutes; under NCCL 2.28 there is no MONITOR (said, not a failure).
set -u
B=$(cd "${1:?usage: ras_monitor.sh BUILD OUT [LIBDIR] [NCCL_HOME]}" && pwd)
OUT=${2:?usage: ras_monitor.sh BUILD OUT [LIBDIR] [NCCL_HOME]}
LIB=${3:-$B/lib}
NH=${4:-}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 NCCL_PROFILER_PLUGIN=$B/core/libnccl-profiler-coll.so
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV COLL_STATUS_DIR=$OUT/shm
mkdir -p "$OUT/shm"
PRE=()
[ -n "$NH" ] && PRE=(env "LD_PRELOAD=$NH/lib/libnccl.so.2")
cat >"$OUT/job.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
r = dist.get_rank()
torch.cuda.set_device(r)
x = torch.ones(1 << 20, device="cuda")
for i in range(100000):
    dist.all_reduce(x)
    torch.cuda.synchronize()
    if i == 5:
        open(os.environ["READY"] + ".%d" % r, "w").write(str(os.getpid()))
    time.sleep(0.05)
PY
# Two ranks started directly, not by torchrun: its agent would stop the
# survivor as soon as one rank dies, and RAS would have no one left to tell.
# Each rank's RAS service listens on its own port (NCCL_RAS_ADDR): rank 0 on
# 28028, which colltop and this script follow, rank 1 on 28029; rank 1 is
# the one killed.
JOBS=()
for r in 0 1; do
	READY=$OUT/ready MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 WORLD_SIZE=2 RANK=$r \
		LOCAL_RANK=$r NCCL_RAS_ADDR=127.0.0.1:$((28028 + r)) "${PRE[@]}" \
		setsid python3 "$OUT/job.py" >"$OUT/job.$r.log" 2>&1 &
	JOBS+=($!)
done
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for j in "${JOBS[@]}"; do kill -- -"$j" 2>/dev/null; done
	sleep 1
	for j in "${JOBS[@]}"; do kill -9 -- -"$j" 2>/dev/null; done
}
trap cleanup EXIT
waitfor() {	# SECONDS CMD...: until CMD succeeds; 1 if it never did
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.5; done
}
waitfor 120 test -s "$OUT/ready.0" -a -s "$OUT/ready.1" || { echo "job did not start" >"$OUT/summary.txt"; exit 1; }
grep -h "PROFILER/Plugin" "$OUT"/job.[01].log >"$OUT/abi.txt"
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' \
	>"$OUT/versions.txt" 2>&1
grep -m1 -o "NCCL version [0-9.a-z+]*" "$OUT"/job.0.log >>"$OUT/versions.txt"
victim=$(cat "$OUT/ready.1")
python3 - "$OUT/monitor.raw" >"$OUT/monitor.err" 2>&1 <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", 28028), 10)
out = open(sys.argv[1], "wb")
for cmd in (b"CLIENT PROTOCOL 2\n", b"SET FORMAT json\n", b"MONITOR\n"):
    s.sendall(cmd)
    out.write(s.recv(4096)); out.flush()
s.settimeout(None)
while True:
    b = s.recv(4096)
    if not b:
        break
    out.write(b); out.flush()
PY
pids+=($!)
if [ -n "$NH" ] && [ -x "$NH/bin/ncclras" ]; then
	"$NH/bin/ncclras" -m >"$OUT/ncclras.txt" 2>"$OUT/ncclras.err" &
	pids+=($!)
fi
"$B/cmd/colltop" -b --ras --interval 1 -n 150 >"$OUT/colltop.txt" 2>"$OUT/colltop.err" &
CT=$!
pids+=($CT)
waitfor 30 grep -q "following MONITOR" "$OUT/colltop.txt"
waitfor 10 test -s "$OUT/monitor.raw"
echo "killing rank 1, pid $victim (rank 0 serves MONITOR at 28028)" >"$OUT/summary.txt"
kill -9 "$victim"
waitfor 150 grep -q PEER_DEAD "$OUT/monitor.raw"
waitfor 10 grep -q "PEER_DEAD" "$OUT/colltop.txt"
{
	echo "versions: $(tr '\n' ' ' <"$OUT/versions.txt")"
	echo "abi: $(tr '\n' ' ' <"$OUT/abi.txt")"
	echo "monitor.raw: $(grep -c '"event"' "$OUT/monitor.raw" 2>/dev/null) events," \
		"PEER_DEAD $(grep -c PEER_DEAD "$OUT/monitor.raw" 2>/dev/null)"
	echo "ncclras -m: PEER_DEAD $(grep -c PEER_DEAD "$OUT/ncclras.txt" 2>/dev/null)"
	echo "colltop: $(grep -m1 'NCCL RAS: PEER_DEAD' "$OUT/colltop.txt" || grep -m1 'NCCL RAS' "$OUT/colltop.txt")"
} >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
