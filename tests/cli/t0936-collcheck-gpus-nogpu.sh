#!/bin/bash
# collcheck gpus on a host without a GPU (or without the CUDA driver): one
# worker, nothing measured, said as info with the driver's reason, exit 0
# (nothing is wrong with a host that has no GPU; a driver that is there but
# does not start is an error, in the unit test); --json has the finding and
# an empty "gpus"; a malformed gpu_floor line in --config is a usage error.
. "$(dirname "$0")/lib.sh"
"$BIN/collcheck" gpus >"$TMP/o" 2>"$TMP/e"
check "exit 0" test $? -eq 0
check "says why nothing was measured" grep -Eq "INFO +GPUs not measured: skipped: no (CUDA driver|GPU visible)" "$TMP/o"
check "no matrix" bash -c "! grep -q 'gpus on' '$TMP/o'"
"$BIN/collcheck" gpus --json >"$TMP/j" 2>"$TMP/e"
check "--json: exit 0" test $? -eq 0
check "--json: the finding, no matrices" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); h = d["hosts"][0]
assert [f["key"] for f in h["findings"]] == ["gpubw"], h["findings"]
assert h["findings"][0]["severity"] == "INFO"
assert h["facts"]["gpubw"].startswith("skipped: ")
assert d["gpus"] == [] and d["exit"] == 0' "$TMP/j"
printf 'gpu_floor *H200* = 40 40\n' >"$TMP/c"
"$BIN/collcheck" gpus --config "$TMP/c" >"$TMP/o" 2>"$TMP/e"
check "bad gpu_floor: exit 2" test $? -eq 2
check "bad gpu_floor: says the form" grep -q "c:1: use 'gpu_floor MODEL_PATTERN = H2D D2H P2P'" "$TMP/e"
finish
