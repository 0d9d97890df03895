#!/bin/bash
# collcheck env and the error counters of a fixture sysfs tree: PCIe AER
# totals (fatal an error, non-fatal a warning, correctable info without a
# baseline and a warning when it grew since one), RDMA port counters
# (link_downed info without a baseline; any error counter that grew a
# warning, with its rate), RoCE congestion counters (info), the GID table
# changed; nothing when nothing changed. The counters are each host's own:
# never compared across hosts.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
S=$FIX/sys
GPU=$S/devices/pci0000:00/0000:00:01.0/0000:01:00.0
NIC=$S/devices/pci0000:00/0000:00:02.0/0000:02:00.0
P0=$S/class/infiniband/mlx5_0/ports/1
aer() { # dir correctable nonfatal fatal
	printf 'RxErr %s\nBadTLP 0\nTOTAL_ERR_COR %s\n' "$2" "$2" >"$1/aer_dev_correctable"
	printf 'Undefined 0\nDLP 0\nTOTAL_ERR_NONFATAL %s\n' "$3" >"$1/aer_dev_nonfatal"
	printf 'Undefined 0\nDLP %s\nTOTAL_ERR_FATAL %s\n' "$4" "$4" >"$1/aer_dev_fatal"
}
ctr() { # file value
	mkdir -p "$(dirname "$P0/$1")"
	echo "$2" >"$P0/$1.new" && mv "$P0/$1.new" "$P0/$1"
}
aer "$GPU" 5 0 0
aer "$NIC" 0 0 0
for c in link_downed link_error_recovery symbol_error port_rcv_errors; do ctr counters/$c 0; done
ctr counters/link_downed 2
for c in np_cnp_sent np_ecn_marked_roce_packets rp_cnp_handled; do ctr hw_counters/$c 100; done
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" "$@"; }
ours() { grep -o 'PCIe AER counter[^;]*\|RDMA mlx5_0 port 1: [a-z_]*[^;]*\|GID table[^;]*' "$1"; }

fx env >"$TMP/o" 2>"$TMP/e"
check "no baseline: correctable AER errors are info" grep -q "PCIe AER counter of GPU 0 (0000:01:00.0): 5 correctable errors since boot (save a baseline to see new ones)" "$TMP/o"
check "no baseline: link_downed is info" grep -q "RDMA mlx5_0 port 1: link_downed is 2 since the counters were cleared (save a baseline to see new ones)" "$TMP/o"
fx env --json >"$TMP/j" 2>"$TMP/e"
check "--json: both info, the counters facts" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); h = d["hosts"][0]
sev = {f["key"]: f["severity"] for f in h["findings"]}
assert sev["ctr.aer.0000:01:00.0.correctable"] == "INFO", sev
assert sev["ctr.rdma.mlx5_0.1.link_downed"] == "INFO", sev
assert h["facts"]["ctr.rdma.mlx5_0.1.np_cnp_sent"] == "100"
assert h["facts"]["ctr.gids.mlx5_0.1"].startswith("1 set, digest ")
assert "ctr.aer.0000:02:00.0.correctable" not in h["facts"]' "$TMP/j"

fx env --save-baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "the baseline holds the host's own counters" grep -q '"ctr.rdma.mlx5_0.1.link_downed@fixhost": "2"' "$TMP/base.json"
fx env --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
ours "$TMP/o" >"$TMP/ours"
check "unchanged since the baseline: no counter finding" test ! -s "$TMP/ours"

# Two hours on: counters grew, a GID came, a non-fatal and a fatal AER error.
python3 - "$TMP/base.json" <<'EOPY'
import json, sys, time
d = json.load(open(sys.argv[1]))
d["facts"]["ctr.time@fixhost"] = str(int(time.time()) - 7200)
json.dump(d, open(sys.argv[1], "w"))
EOPY
aer "$GPU" 9 0 0
ctr counters/link_downed 3
ctr counters/symbol_error 40
ctr hw_counters/rp_cnp_handled 1900
echo "fe80:0000:0000:0000:0000:0000:0000:0002" >"$P0/gids/1"
fx env --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "counters grew since the baseline"
check "correctable AER errors grew: a warning, with the rate" grep -q "PCIe AER counter of GPU 0 (0000:01:00.0): 9 correctable errors, 4 more than the baseline in 2.0 h ([0-9.]*/h): a marginal link" "$TMP/o"
check "link_downed grew" grep -q "RDMA mlx5_0 port 1: link_downed grew by 1 since the baseline in 2.0 h (0.5/h): the link is unstable" "$TMP/o"
check "symbol errors grew" grep -q "RDMA mlx5_0 port 1: symbol_error grew by 40 since the baseline" "$TMP/o"
check "CNPs handled: congestion, info" grep -q "RDMA mlx5_0 port 1: rp_cnp_handled grew by 1800 since the baseline in 2.0 h ([0-9.]*/h): congestion control acted" "$TMP/o"
check "the GID table changed" grep -q "RDMA mlx5_0 port 1: GID table changed since the baseline (2 set, digest [0-9a-f]*, was 1 set, digest [0-9a-f]*)" "$TMP/o"
check "the unchanged counters are not named" sh -c "! grep -q 'port_rcv_errors\|np_cnp_sent' '$TMP/o'"
aer "$NIC" 0 1 0
aer "$GPU" 9 0 1
fx env --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "a non-fatal AER error is a warning" grep -q "PCIe AER counter of 0000:02:00.0: 1 non-fatal errors since boot: transactions were lost" "$TMP/o"
check "a fatal AER error is an error" grep -q "^fixhost  ERROR .*PCIe AER counter of GPU 0 (0000:01:00.0): 1 fatal errors since boot: drain the node" "$TMP/o"
fx env --baseline "$TMP/base.json" --json >"$TMP/j" 2>"$TMP/e"
check "--json: the severities" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sev = {f["key"]: f["severity"] for f in d["hosts"][0]["findings"]}
assert sev["ctr.aer.0000:01:00.0.fatal"] == "ERROR", sev
assert sev["ctr.aer.0000:02:00.0.nonfatal"] == "WARN", sev
assert sev["ctr.rdma.mlx5_0.1.link_downed"] == "WARN", sev
assert sev["ctr.gids.mlx5_0.1"] == "WARN", sev
assert sev["ctr.aer.0000:01:00.0.correctable"] == "WARN", sev
assert sev["ctr.rdma.mlx5_0.1.rp_cnp_handled"] == "INFO", sev
assert not [k for k in sev if "differs from the baseline" in k], sev' "$TMP/j"
check "counters never differ from the baseline as facts do" sh -c "! grep -q 'ctr.*differs from the baseline\|ctr.*not in the baseline' '$TMP/o'"
finish
