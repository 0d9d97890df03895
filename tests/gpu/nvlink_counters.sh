#!/bin/bash
# NVLink's state and error counters through NVML (collcheck env's
# "ctr.nvlink.<gpu>.<link>.<counter>" facts) on the GPU machine, one call:
#   1. collcheck env --json: every GPU's links with a state ("up"/"down") and
#      the error counters that are not zero (replay, recovery, crc_flit,
#      crc_data), beside nvidia-smi nvlink -s / -e for the same links;
#   2. --save-baseline then --baseline at once: nothing grew, so no NVLink
#      finding (the judge's rules are unit-tested: tests/unit/test_health_ctr.c);
#   3. a baseline edited to say one link was up that is down now, if one is
#      down, else one counter lower than now, if one is not zero: the finding.
#   bash tests/gpu/nvlink_counters.sh BUILD OUT
set -u
B=$(cd "${1:?usage: nvlink_counters.sh BUILD OUT}" && pwd)
OUT=${2:?usage}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CC=$B/cmd/collcheck
nvidia-smi -L >"$OUT/gpus.txt" 2>&1
nvidia-smi nvlink -s >"$OUT/smi_nvlink_s.txt" 2>&1
nvidia-smi nvlink -e >"$OUT/smi_nvlink_e.txt" 2>&1
"$CC" env --json >"$OUT/env.json" 2>"$OUT/env.err"; echo "env: exit $?"
python3 - "$OUT/env.json" <<'EOPY'
import json, sys
h = json.load(open(sys.argv[1]))["hosts"][0]; f = h["facts"]
print("gpu.count:", f.get("gpu.count"), "| nvidia.driver:", f.get("nvidia.driver"))
for k in sorted(k for k in f if k.startswith("gpu.") and k.endswith(".nvlink")):
    print(k, "=", f[k])
nv = {k: v for k, v in f.items() if k.startswith("ctr.nvlink.")}
st = [v for k, v in nv.items() if k.endswith(".state")]
print("ctr.nvlink facts: %d; states: %d up, %d down; counters not zero: %d" % (
    len(nv), st.count("up"), st.count("down"), len(nv) - len(st)))
for k in sorted(k for k in nv if not k.endswith(".state")):
    print("  ", k, "=", nv[k])
print("nvlink findings:", [x["message"] for x in h["findings"] if x["key"].startswith("ctr.nvlink")])
EOPY
"$CC" env --save-baseline "$OUT/base.json" >"$OUT/save.txt" 2>&1; echo "save-baseline: exit $?"
"$CC" env --baseline "$OUT/base.json" >"$OUT/again.txt" 2>&1; echo "against its own baseline: exit $?"
echo "NVLink findings against its own baseline: $(grep -c 'NVLink' "$OUT/again.txt")"
python3 - "$OUT/base.json" "$OUT/base2.json" <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1])); fa = d["facts"]
down = [k for k, v in fa.items() if k.startswith("ctr.nvlink.") and ".state@" in k and v == "down"]
cnt = [k for k in fa if k.startswith("ctr.nvlink.") and ".state@" not in k]
if down:
    fa[down[0]] = "up"; print("edited:", down[0], "= up (now down): expect an ERROR")
elif cnt:
    fa[cnt[0]] = str(int(fa[cnt[0]]) - 1); print("edited:", cnt[0], "one lower: expect its finding")
else:
    print("edited: nothing (every link up, every counter zero): no finding expected")
json.dump(d, open(sys.argv[2], "w"))
EOPY
"$CC" env --baseline "$OUT/base2.json" >"$OUT/edited.txt" 2>&1; echo "against the edited baseline: exit $?"
tr ';' '\n' <"$OUT/edited.txt" | grep 'NVLink' || echo "(no NVLink finding)"
