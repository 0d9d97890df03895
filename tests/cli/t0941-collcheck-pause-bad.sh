#!/bin/bash
# collcheck env and `ethtool -S` text that is not that (a fixture root's
# ROOT/ethtool/<if>): binary bytes, a number past 64 bits, a name longer
# than a driver's, a line with no number are refused whole, said once as
# info naming the file and line, and no counter of it is kept; an interface
# without a file has no statistics and nothing is said. On this host's own
# interfaces (the ioctl) no statistic without a baseline is a problem.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
for i in ens1f0 ens1f1; do
	mkdir -p "$FIX/sys/class/net/$i"
	echo 9000 >"$FIX/sys/class/net/$i/mtu"
done
mkdir -p "$FIX/ethtool"
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" env --json >"$TMP/j" 2>"$TMP/e"; }
refused() { # description line
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); h = d["hosts"][0]
assert not [k for k in h["facts"] if k.startswith("ctr.eth.")], h["facts"]
f = [x for x in h["findings"] if x["key"].startswith("ctr.eth")]
assert len(f) == 1 and f[0]["key"] == "ctr.ethtool.ens1f0" and f[0]["severity"] == "INFO", f
want = "NIC ens1f0: pause and congestion statistics not checked: /ethtool/ens1f0 is not `ethtool -S` text (line %s)" % sys.argv[2]
assert f[0]["message"] == want, f[0]["message"]' "$TMP/j" "$2" && ok "$1" || not_ok "$1"
}
printf 'NIC statistics:\n     rx_prio3_pause: 1\x01\x80\n' >"$FIX/ethtool/ens1f0"
fx; refused "binary bytes: refused" 2
printf 'NIC statistics:\n     rx_pause_ctrl_phy: 18446744073709551616\n' >"$FIX/ethtool/ens1f0"
fx; refused "a number past 64 bits: refused" 2
printf 'NIC statistics:\n  rx_pause: 1\n  %s_pause: 2\n' "$(printf 'x%.0s' $(seq 40))" >"$FIX/ethtool/ens1f0"
fx; refused "a name longer than ethtool's: refused" 3
printf 'NIC statistics:\n  rx_pause: 1\n  tx_pause 2\n' >"$FIX/ethtool/ens1f0"
fx; refused "a line with no number: refused" 3
check "--json is whole" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/j"

printf 'NIC statistics:\n\trx_pause_ctrl_phy: 18446744073709551615\r\n\n' >"$FIX/ethtool/ens1f0"
fx
check "the largest number and blank lines read" python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))["hosts"][0]
assert h["facts"]["ctr.eth.ens1f0.rx_pause_ctrl_phy"] == "18446744073709551615", h["facts"]
assert not [k for k in h["facts"] if "ens1f1" in k and k.startswith("ctr.")]
assert not [x for x in h["findings"] if x["key"].startswith("ctr.eth")]' "$TMP/j"

"$BIN/collcheck" env --json >"$TMP/j" 2>"$TMP/e"
check "this host's own interfaces: no pause statistic is a problem without a baseline" python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))["hosts"][0]
bad = [x for x in h["findings"] if x["key"].startswith("ctr.eth") and
    (x["severity"] != "INFO" or "storm" not in x["key"])]
assert not bad, bad' "$TMP/j"
finish
