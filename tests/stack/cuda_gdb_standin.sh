#!/bin/bash
# A stand-in for cuda-gdb in collstack's tests (t0117, t0730): it checks that
# it is asked as collstack asks (batch mode, attach to a live pid, list
# kernels) and answers with what cuda-gdb 13.0 printed for a hung NCCL
# all-reduce on an H200 (tests/stack/cuda/info_kernels.txt).
# STANDIN_CUDA: slow (never answers), refused (ptrace refused), none (no
# kernels), die (stops its target, as a killed debugger's pending SIGSTOP
# does, and is killed), pending (leaves a stop pending at its target, a
# SIGTSTP that it blocks, as a killed debugger's SIGSTOP stays pending until
# its target next runs, and is killed), flood (says a line, then writes
# without end, as a debugger gone wrong may), gone (ends at once, saying
# nothing, while what it started holds its output a second: the debuggers
# that collstack runs at once all end in one of its waits). STANDIN_CUDA_SLEEP=S: S seconds to attach (cuda-gdb
# takes about 10 on a PyTorch rank). Like cuda-gdb 13 it takes no lock file
# and knows no --cuda-use-lockfile option (it ends on it, as cuda-gdb 13.0 did
# on an H200).
want=0
for a in "$@"; do
	[ "$a" = "info cuda kernels" ] && want=1
	case "$a" in --cuda-use-lockfile*)
		echo "$0: unrecognized option '$a'"; exit 1 ;;
	esac
done
pid=""
while [ $# -gt 0 ]; do [ "$1" = -p ] && pid=$2; shift; done
[ "$want" = 1 ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { echo "standin: asked wrongly"; exit 2; }
sleep "${STANDIN_CUDA_SLEEP:-0}"
case "${STANDIN_CUDA:-}" in
slow) exec sleep 100 ;;
refused) echo "ptrace: Operation not permitted."; exit 1 ;;
none) echo "No CUDA kernels."; exit 0 ;;
die) kill -STOP "$pid"; kill -KILL $$ ;;
pending) kill -TSTP "$pid"; kill -KILL $$ ;;
gone) sleep 1 & exit 1 ;;
flood) echo "Attaching to process $pid"; sleep 0.5; exec yes "a line cuda-gdb would not write" ;;
esac
cat "$(dirname "$0")/cuda/info_kernels.txt"
