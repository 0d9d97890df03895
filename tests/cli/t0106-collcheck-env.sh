#!/bin/bash
# collcheck env on this machine: facts of real files, then of fixture sysfs and
# proc trees (RDMA ports DOWN and at half rate, a degraded PCIe link with ACS
# on the bridge above, the NVIDIA driver without NVML, the NCCL_IB_HCA prefix
# pitfall, memlock), a baseline saved and compared, the config file, JSON,
# and bad input.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"

collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "env on this machine"
check "no RDMA ports: memlock below unlimited is no finding" sh -c "! grep -q memlock '$TMP/o'"
check "one line for this host, OK" grep -q "^$(hostname) *OK\$" "$TMP/o"
check "no error output" test ! -s "$TMP/e"
collcheck env -N 3 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "env with 3 local ranks"
check "3 ranks, one host: one line" grep -q '^collcheck: 1 host, 3 ranks' "$TMP/o"

collcheck env -v >"$TMP/o" 2>&1
check "-v: the kernel is among the facts" grep -q "^  host.kernel  *$(uname -r)\$" "$TMP/o"
check "-v: memlock as ulimit says" grep -q "^  limits.memlock  *$(ulimit -l | sed 's/^\([0-9]*\)$/\1 KiB/')\$" "$TMP/o"
NCCL_DEBUG=WARN collcheck env -v >"$TMP/o" 2>&1
check "-v: an NCCL_* variable is a fact" grep -q '^  env.NCCL_DEBUG  *WARN$' "$TMP/o"
check "-v: absent hardware is skipped, never made up" grep -q '^  rdma  *skipped: no RDMA devices' "$TMP/o"

# Fixture trees through the fixture root.
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" "$@"; }
(ulimit -l 1024; NCCL_IB_HCA=mlx5_1 fx env -v) >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "fixture: problems found"
check "the host's name from the proc root" grep -q '^fixhost  ERROR' "$TMP/o"
check "a DOWN port is an error" grep -q 'RDMA mlx5_1 port 1 is 1: DOWN (3: Disabled), not ACTIVE' "$TMP/o"
check "a port at half rate is named" grep -q "RDMA mlx5_10 port 1 runs at 100 Gb/sec (4X EDR), below the others' 200 Gb/sec" "$TMP/o"
check "the ACTIVE full-rate port is not" sh -c "! grep -q 'mlx5_0 port' '$TMP/o'"
check "a degraded PCIe width" grep -q 'PCIe link of 0000:01:00.0 degraded: x8 of x16' "$TMP/o"
check "ACS on the bridge above the GPU" grep -q 'PCIe ACS on at 0000:00:01.0 (control 0x001d) above 0000:01:00.0' "$TMP/o"
check "ACS present but off is no finding" sh -c "! grep -q 'above 0000:02:00.0' '$TMP/o'"
check "the NCCL_IB_HCA prefix pitfall" grep -q "'mlx5_1' matches by prefix, so it also takes mlx5_10: write '=mlx5_1'" "$TMP/o"
check "memlock below unlimited with RDMA ports" grep -q 'memlock is 1024 KiB: RDMA needs it unlimited' "$TMP/o"
check "the driver version without NVML" grep -q '^  nvidia.driver  *550.54.15$' "$TMP/o"
check "GPU facts say why they are skipped" grep -q '^  gpu.count  *skipped: ' "$TMP/o"
check "the PCIe facts" grep -q '^  pci.0000:01:00.0.link  *gen4 x8$' "$TMP/o"
check "the network facts" grep -q '^  net.ib0.mtu  *4092$' "$TMP/o"
(NCCL_IB_HCA==mlx5_1 fx env) >"$TMP/o" 2>"$TMP/e"
check "'=mlx5_1' is exact: no pitfall" sh -c "! grep -q 'NCCL_IB_HCA' '$TMP/o'"
# Raising a hard limit needs CAP_SYS_RESOURCE, which a container may lack.
if (ulimit -l unlimited) 2>/dev/null; then
	(ulimit -l unlimited; fx env) >"$TMP/o" 2>"$TMP/e"
	check "memlock unlimited: no finding" sh -c "! grep -q 'memlock' '$TMP/o'"
fi
(ulimit -l unlimited; NCCL_IB_HCA=mlx5_7 fx env) >"$TMP/o" 2>"$TMP/e"
check "a device the host does not have" grep -q 'NCCL_IB_HCA=mlx5_7 names mlx5_7, which this host does not have' "$TMP/o"
fx env --json >"$TMP/j" 2>"$TMP/e"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["hosts"][0]
assert h["host"] == "fixhost" and h["status"] == "ERROR", h["status"]
assert h["facts"]["rdma.mlx5_1.1.state"] == "1: DOWN"
sev = {f["key"]: f["severity"] for f in h["findings"]}
assert sev["rdma.mlx5_1.1.state"] == "ERROR", sev
assert sev["rdma.mlx5_10.1.rate"] == "WARN", sev
assert d["exit"] == 1
print("json ok")
EOPY
check "--json: facts, findings and severities" grep -q 'json ok' "$TMP/py"

# Baseline: saved on a good node, compared later.
collcheck env --save-baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--save-baseline"
check "the baseline holds the kernel" grep -q "\"host.kernel\": \"$(uname -r)\"" "$TMP/base.json"
collcheck env --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "the same node against its baseline"
NCCL_ALGO=Tree collcheck env --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a new NCCL_* variable against the baseline"
check "... is named as an error" grep -q 'ERROR  *NCCL_ALGO=Tree is not in the baseline' "$TMP/o"
sed "s/\"host.kernel\": \"[^\"]*\"/\"host.kernel\": \"5.4.0-old\"/" "$TMP/base.json" >"$TMP/old.json"
collcheck env --baseline "$TMP/old.json" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a kernel that differs from the baseline"
check "... is named with both values" grep -q "host.kernel=$(uname -r) differs from the baseline (5.4.0-old)" "$TMP/o"

# The config: ignore a key, change a severity, thresholds; bad lines are named.
printf '# mine\nignore = env.NCCL_ALGO\n' >"$TMP/c1"
NCCL_ALGO=Tree collcheck env --baseline "$TMP/base.json" --config "$TMP/c1" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "config: an ignored key"
printf 'severity env.NCCL_ALGO = info\n' >"$TMP/c2"
NCCL_ALGO=Tree collcheck env --baseline "$TMP/base.json" --config "$TMP/c2" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "config: a finding made info"
check "... still shown" grep -q 'INFO  *NCCL_ALGO=Tree is not in the baseline' "$TMP/o"
printf 'clock_offset_ms = 10\nlink_bw_factor = 2\n' >"$TMP/c3"
collcheck env --config "$TMP/c3" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "config: a value out of range"
check "... names the file, line and setting" grep -q "^collcheck: $TMP/c3:2: link_bw_factor must be between 0 and 1\$" "$TMP/e"
printf 'colour = red\n' >"$TMP/c4"
collcheck env --config "$TMP/c4" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "config: an unknown setting"
check "... named" grep -q "c4:1: unknown setting 'colour'" "$TMP/e"

# Bad input.
collcheck env --baseline "$TMP/nope.json" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a baseline that does not exist"
check "... named" grep -q "cannot open baseline '$TMP/nope.json': No such file" "$TMP/e"
echo '{"x": 1}' >"$TMP/notbase.json"
collcheck env --baseline "$TMP/notbase.json" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a JSON file that is not a baseline"
check "... named" grep -q "is not a collcheck baseline" "$TMP/e"
collcheck env --bogus >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "an unknown option"
collcheck env --baseline a --save-baseline b >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "--baseline with --save-baseline"
collcheck env extra >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "an operand"
check "... named" grep -q "unexpected argument 'extra'" "$TMP/e"
collcheck links -s 0 >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "links -s 0"
collcheck env -H 'node[3-1]' >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a bad host range"
finish
