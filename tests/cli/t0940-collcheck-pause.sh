#!/bin/bash
# collcheck env and a NIC's pause, PFC, ECN and CNP statistics (`ethtool -S`
# text under a fixture root, ROOT/ethtool/<if>: the ioctl cannot be faked):
# only those names are kept, as each host's own counters; nothing without a
# baseline but the NIC's storm guard, nothing when nothing grew; grown pause
# frames are info (flow control at work), a pause storm (>= 1000 frames/s
# since the baseline, a tenth of the time paused, the storm guard acting) a
# warning naming the interface and the statistic; ECN marks and CNPs info.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
N=$FIX/sys/class/net/ens1f0
mkdir -p "$N" "$FIX/ethtool"
echo 9000 >"$N/mtu"; echo up >"$N/operstate"; echo 200000 >"$N/speed"
stats() { # rx_prio3_pause tx_prio3_pause rx_prio3_pause_duration storm_events ecn
	cat >"$FIX/ethtool/ens1f0.new" <<EOS
NIC statistics:
     rx_packets: 123456789
     rx_vport_unicast_packets: 42
     rx_prio3_pause: $1
     rx_prio3_pause_transition: $1
     tx_prio3_pause: $2
     rx_prio3_pause_duration: $3
     tx_pause_storm_warning_events: $4
     rx_ecn_mark: $5
EOS
	mv "$FIX/ethtool/ens1f0.new" "$FIX/ethtool/ens1f0"
}
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" env "$@"; }
ours() { grep 'NIC ens1f0' "$1"; }

stats 10 0 500 0 7
fx --json >"$TMP/j" 2>"$TMP/e"
check "only pause, PFC, ECN, CNP names are kept, as counters" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); f = d["hosts"][0]["facts"]
eth = {k: v for k, v in f.items() if k.startswith("ctr.eth.")}
assert eth == {"ctr.eth.ens1f0.rx_prio3_pause": "10", "ctr.eth.ens1f0.rx_prio3_pause_transition": "10",
    "ctr.eth.ens1f0.tx_prio3_pause": "0", "ctr.eth.ens1f0.rx_prio3_pause_duration": "500",
    "ctr.eth.ens1f0.tx_pause_storm_warning_events": "0", "ctr.eth.ens1f0.rx_ecn_mark": "7"}, eth
assert not [x for x in d["hosts"][0]["findings"] if x["key"].startswith("ctr.eth")]' "$TMP/j"
fx --save-baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "the baseline holds them under the host" grep -q '"ctr.eth.ens1f0.rx_prio3_pause@fixhost": "10"' "$TMP/base.json"
fx --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "unchanged since the baseline: nothing said" sh -c "! grep -q 'NIC ens1f0' '$TMP/o'"

# An hour on (3600 s): a few pauses received and ECN marks: flow and congestion control at work.
python3 - "$TMP/base.json" <<'EOPY'
import json, sys, time
d = json.load(open(sys.argv[1]))
d["facts"]["ctr.time@fixhost"] = str(int(time.time()) - 3600)
json.dump(d, open(sys.argv[1], "w"))
EOPY
stats 5000 0 900 0 9000
fx --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "received pauses: the switch asked" grep -q "NIC ens1f0: rx_prio3_pause grew by 4990 since the baseline: the switch asked this host to pause" "$TMP/o"
check "ECN marks: congestion" grep -q "NIC ens1f0: rx_ecn_mark grew by 8993 since the baseline: congestion control acted" "$TMP/o"
check "transitions and a short time paused: not named" sh -c "! grep -q 'transition\|duration' '$TMP/o'"
fx --baseline "$TMP/base.json" --json >"$TMP/j" 2>"$TMP/e"
check "--json: flow and congestion control at work are info" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sev = {f["key"]: f["severity"] for f in d["hosts"][0]["findings"] if f["key"].startswith("ctr.eth")}
assert sev == {"ctr.eth.ens1f0.rx_prio3_pause": "INFO", "ctr.eth.ens1f0.rx_ecn_mark": "INFO"}, sev' "$TMP/j"

# A storm: this host sent 18M pause frames in the hour (5000/s), sat paused 20%, its guard acted.
stats 5000 18000000 720000500 2 9000
fx --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "sent pauses at 5000/s: a storm, named" grep -q "NIC ens1f0: tx_prio3_pause: a pause storm, 18000000 frames in 1.0 h ([0-9]*/s); this host asked the switch to pause" "$TMP/o"
check "paused a fifth of the time: a storm" grep -q "NIC ens1f0: rx_prio3_pause_duration: a pause storm, paused 20% of the 1.0 h since the baseline" "$TMP/o"
check "the storm guard acted: a storm" grep -q "NIC ens1f0: tx_pause_storm_warning_events: a pause storm, the NIC's pause storm guard acted 2 times" "$TMP/o"
fx --baseline "$TMP/base.json" --json >"$TMP/j" 2>"$TMP/e"
check "--json: the severities" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sev = {f["key"]: f["severity"] for f in d["hosts"][0]["findings"] if f["key"].startswith("ctr.eth")}
assert sev == {"ctr.eth.ens1f0.rx_prio3_pause": "INFO", "ctr.eth.ens1f0.tx_prio3_pause": "WARN",
    "ctr.eth.ens1f0.rx_prio3_pause_duration": "WARN", "ctr.eth.ens1f0.tx_pause_storm_warning_events": "WARN",
    "ctr.eth.ens1f0.rx_ecn_mark": "INFO"}, sev' "$TMP/j"
finish
