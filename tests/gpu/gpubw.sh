#!/bin/bash
# collcheck gpus on this machine's GPUs (2 or more): the matrix measured on
# idle GPUs, then again while tests/gpu/gpubw_load.py copies from GPU 0 to
# GPU 1 without pause (torch). Prints both matrices and their findings, and
# PASS when the idle run has no WARN or ERROR on a pair and the loaded run
# names the pair 0 -> 1 (a WARN below 0.7 x the host's upper quartile, or an
# ERROR below its model's floor). The values measured idle are what the
# floors table in cmd/collcheck/gpubw.c is set from (0.7 x measured).
#   tests/gpu/gpubw.sh BUILD OUT
set -u
BUILD=$1 OUT=$2
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CC="$BUILD/cmd/collcheck"
HERE=$(dirname "$0")
fail=0

nvidia-smi -L | tee "$OUT/gpus.txt"
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
"$CC" gpus --no-color >"$OUT/idle.txt" 2>&1; echo "exit $?" >>"$OUT/idle.txt"
"$CC" gpus --json >"$OUT/idle.json" 2>"$OUT/idle.err"
echo "== idle"; cat "$OUT/idle.txt"
if grep -Eq "(WARN|ERROR).*GPU [0-9]+ -> GPU" "$OUT/idle.txt"; then
	echo "FAIL: idle GPUs have a pair named"; fail=1
fi

python3 "$HERE/gpubw_load.py" >"$OUT/load.out" 2>&1 &
lp=$!
for _ in $(seq 600); do grep -q loading "$OUT/load.out" && break; kill -0 $lp || break; sleep 0.1; done
if ! grep -q loading "$OUT/load.out"; then
	echo "FAIL: the copy load did not start:"; cat "$OUT/load.out"; fail=1
fi
"$CC" gpus --no-color >"$OUT/loaded.txt" 2>&1; echo "exit $?" >>"$OUT/loaded.txt"
"$CC" gpus --json >"$OUT/loaded.json" 2>"$OUT/loaded.err"
kill $lp; wait $lp 2>/dev/null
echo "== loaded (copies from GPU 0 to GPU 1 running)"; cat "$OUT/loaded.txt"
if grep -Eq "(WARN|ERROR).*GPU 0 -> GPU 1:" "$OUT/loaded.txt"; then
	echo "loaded pair named: yes"
else
	echo "loaded pair named: no"; fail=1
fi
[ $fail = 0 ] && echo PASS || echo FAIL
exit $fail
