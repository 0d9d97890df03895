#!/bin/bash
# The NCCL engine's deadline: rank 1 is stopped (SIGSTOP) in the middle of a
# long NCCL all-reduce sweep; rank 0 must give up after -T seconds, abort its
# NCCL communicator and say so, instead of waiting forever in the kernel.
#   tests/gpu/nccl_abort.sh BUILD OUT
set -u
BUILD=$1 OUT=$2
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$BUILD/cmd/collcheck" allreduce -N 2 --engine nccl -b 256M -e 256M -n 100000 -w 0 -c 0 -T 5 \
	>"$OUT/abort.out" 2>"$OUT/abort.err" &
front=$!
sleep 8
r1=$(pgrep -P "$front" | sort -n | tail -1)
t0=$(date +%s%N)
kill -STOP "$r1"
wait "$front"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$r1" 2>/dev/null
kill -9 "$r1" 2>/dev/null
echo "collcheck exit $rc, $ms ms after rank 1 (pid $r1) was stopped" | tee "$OUT/abort.txt"
cat "$OUT/abort.err" | tee -a "$OUT/abort.txt"
grep -q 'did not finish in 5000 ms: the NCCL communicator was aborted' "$OUT/abort.err" && [ "$rc" -ne 0 ]
