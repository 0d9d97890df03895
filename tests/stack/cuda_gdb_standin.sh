#!/bin/bash
# A stand-in for cuda-gdb in collstack's tests (t0117): it checks that it is
# asked as collstack asks (batch mode, attach to a live pid, list kernels) and
# answers with what cuda-gdb 13.0 printed for a hung NCCL all-reduce on an
# H200 (tests/stack/cuda/info_kernels.txt). STANDIN_CUDA: slow (never
# answers), refused (ptrace refused), none (no kernels).
want=0
for a in "$@"; do [ "$a" = "info cuda kernels" ] && want=1; done
pid=""
while [ $# -gt 0 ]; do [ "$1" = -p ] && pid=$2; shift; done
[ "$want" = 1 ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { echo "standin: asked wrongly"; exit 2; }
case "${STANDIN_CUDA:-}" in
slow) exec sleep 100 ;;
refused) echo "ptrace: Operation not permitted."; exit 1 ;;
none) echo "No CUDA kernels."; exit 0 ;;
esac
cat "$(dirname "$0")/cuda/info_kernels.txt"
