#!/bin/bash
# Set up, build, and run the main job on this machine: the whole collcheck
# (this host's facts, the link between 2 local ranks, a short all-reduce), then
# an all-reduce sweep over 4 local ranks (8 B to 64 MiB), every result
# checked, nccl-tests columns.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
build/cmd/collcheck -N 2
echo
exec build/cmd/collrun -n 4 --no-label build/cmd/collcheck allreduce -b 8 -e 64M -f 4 -c 1 "$@"
