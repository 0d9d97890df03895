#!/bin/bash
# A stand-in for cuda-gdb in collstack's tests (t0117, t0730): it checks that
# it is asked as collstack asks (batch mode, attach to a live pid, list
# kernels) and answers with what cuda-gdb 13.0 printed for a hung NCCL
# all-reduce on an H200 (tests/stack/cuda/info_kernels.txt).
# STANDIN_CUDA: slow (never answers), refused (ptrace refused), none (no
# kernels), die (stops its target, as a killed debugger's pending SIGSTOP
# does, and is killed). STANDIN_CUDA_SLEEP=S: S seconds to attach (cuda-gdb
# takes about 10 on a PyTorch rank). Without --cuda-use-lockfile=0 it takes
# the lock file cuda-gdb took by default before 12.0 ($TMPDIR/cuda-dbg/
# cuda-gdb.lock) for as long as it runs, and refuses, as cuda-gdb did, when
# another holds it.
want=0 lock=1
for a in "$@"; do
	[ "$a" = "info cuda kernels" ] && want=1
	[ "$a" = "--cuda-use-lockfile=0" ] && lock=0
done
pid=""
while [ $# -gt 0 ]; do [ "$1" = -p ] && pid=$2; shift; done
[ "$want" = 1 ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { echo "standin: asked wrongly"; exit 2; }
if [ "$lock" = 1 ]; then
	dir=${TMPDIR:-/tmp}/cuda-dbg
	mkdir -p "$dir"
	exec 9>>"$dir/cuda-gdb.lock"
	flock -n 9 || { echo "Another cuda-gdb instance is working with the lock file. Try again."; exit 1; }
fi
sleep "${STANDIN_CUDA_SLEEP:-0}" 9>&-	# the lock is this process's alone
case "${STANDIN_CUDA:-}" in
slow) exec sleep 100 ;;
refused) echo "ptrace: Operation not permitted."; exit 1 ;;
none) echo "No CUDA kernels."; exit 0 ;;
die) kill -STOP "$pid"; kill -KILL $$ ;;
esac
cat "$(dirname "$0")/cuda/info_kernels.txt"
