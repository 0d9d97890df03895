#!/bin/bash
# collcheck health, this host alone (HealthCheckProgram, prolog, epilog):
# one line per finding and one that sums up; exit 0 when healthy, 0 with
# warnings (printed: a prolog's non-zero exit would drain the node), 1 with
# an ERROR, 2 on usage; --json; a baseline saved by collcheck env compared
# only on what health reads; --drain through a stand-in scontrol on PATH
# (its argv, the node from SLURMD_NODENAME), never for a warning, and
# scontrol's failure or absence is one line and exit 3.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
# A healthy host but for its kernel log: no RDMA ports, the GPU's link whole, no ACS.
rm -rf "$FIX/sys/class/infiniband"
d=$FIX/sys/devices/pci0000:00/0000:00:01.0
echo "32.0 GT/s PCIe" >"$d/0000:01:00.0/current_link_speed"
echo 16 >"$d/0000:01:00.0/current_link_width"
rm "$d/config"
health() { COLL_FS_ROOT=$FIX "$BIN/collcheck" health "$@"; }
xid() { printf '3,1,1000,-;NVRM: Xid (PCI:0000:%s:00): %s, pid=1, name=%s, %s\n' "$1" "$2" "$3" "$4"; }
: >"$TMP/k0"
xid 86 13 python3 "Graphics SM Warp Exception" >"$TMP/k13"
xid 01 79 "$(printf 'a"b\033[2J')" "GPU has fallen off the bus." >"$TMP/k79"

COLL_KMSG_FILE=$TMP/k0 health >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a healthy host"
check "one line that sums up" sh -c "[ \"\$(cat '$TMP/o')\" = 'collcheck health: fixhost OK: 0 errors, 0 warnings, 0 infos' ]"

COLL_KMSG_FILE=$TMP/k13 health >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a warning alone (Xid 13): exit 0"
check "... printed, one line" grep -q "^WARN   Xid 13 on 0000:86:00, 1 time: graphics engine exception" "$TMP/o"
check "... summed up" grep -qx "collcheck health: fixhost WARN: 0 errors, 1 warning, 0 infos" "$TMP/o"

COLL_KMSG_FILE=$TMP/k79 health >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "an ERROR (Xid 79): exit 1"
check "... one line naming the GPU" grep -q "^ERROR  Xid 79 on GPU 0 (0000:01:00), 1 time: GPU has fallen off the bus: drain the node" "$TMP/o"
check "... the log's escape bytes never reach the terminal" sh -c "! grep -q \$'\\033' '$TMP/o'"
COLL_KMSG_FILE=$TMP/k79 health --json >"$TMP/j" 2>"$TMP/e"
expect_code 1 $? "--json"
check "--json: one host, its ERROR finding, exit 1" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d['hosts']) == 1 and d['exit'] == 1, d
assert [f['severity'] for f in d['hosts'][0]['findings']] == ['ERROR'], d['hosts'][0]['findings']
assert 'drain' not in d" "$TMP/j"

collcheck health -H node01 >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "no host options: usage"
collcheck health extra >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "no operands: usage"

# A baseline of collcheck env holds variables health never reads: not named missing.
NCCL_IB_HCA=mlx5_0 COLL_KMSG_FILE=$TMP/k0 COLL_FS_ROOT=$FIX "$BIN/collcheck" env \
	--save-baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
COLL_KMSG_FILE=$TMP/k0 health --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--baseline from collcheck env"
check "... its NCCL_* not compared" sh -c "! grep -q NCCL_IB_HCA '$TMP/o'"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/scontrol" <<EOS
#!/bin/sh
for a; do printf '%s\n' "\$a"; done >>$TMP/args
[ -z "\$FAIL" ] || { echo "slurm_update error: Invalid user id" >&2; exit 1; }
EOS
chmod +x "$TMP/bin/scontrol"
drain() { PATH=$TMP/bin:$PATH SLURMD_NODENAME=nodex health --drain "$@"; }
COLL_KMSG_FILE=$TMP/k13 drain >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--drain with a warning alone"
check "... scontrol not run" test ! -e "$TMP/args"
check "... said so" grep -qx "drain: nodex not drained: warnings only" "$TMP/o"
COLL_KMSG_FILE=$TMP/k79 drain >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--drain with an ERROR"
check "scontrol's argv: the node, DRAIN, the finding as the reason" sh -c "[ \"\$(cat '$TMP/args')\" = \"\$(printf 'update\nNodeName=nodex\nState=DRAIN\nReason=collcheck: Xid 79 on GPU 0 (0000:01:00), 1 time')\" ]"
check "... said so" grep -qx "drain: nodex drained (collcheck: Xid 79 on GPU 0 (0000:01:00), 1 time)" "$TMP/o"
# The HealthCheckProgram wrapper (slurmd gives it no arguments): health --drain, and the baseline.
rm -f "$TMP/args"
COLL_KMSG_FILE=$TMP/k79 COLL_FS_ROOT=$FIX PATH=$BIN:$TMP/bin:$PATH SLURMD_NODENAME=nodex \
	COLLCHECK_HEALTH_BASELINE=$TMP/base.json "$COLL_SRC/tools/collcheck-health" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "tools/collcheck-health"
check "... drains the node" grep -qx "Reason=collcheck: Xid 79 on GPU 0 (0000:01:00), 1 time" "$TMP/args"
# After a GPU reset: the kernel log from the since file's time on, when that file is root's alone.
rm -f "$TMP/args"
date +%Y-%m-%dT%H:%M:%S >"$TMP/since"
chmod 644 "$TMP/since"
COLL_KMSG_FILE=$TMP/k79 COLL_FS_ROOT=$FIX PATH=$BIN:$TMP/bin:$PATH SLURMD_NODENAME=nodex \
	COLLCHECK_HEALTH_BASELINE=$TMP/nobase COLLCHECK_HEALTH_SINCE=$TMP/since \
	"$COLL_SRC/tools/collcheck-health" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "tools/collcheck-health after the since file's time"
check "... nothing drained" test ! -e "$TMP/args"
chmod 666 "$TMP/since"
COLL_KMSG_FILE=$TMP/k79 COLL_FS_ROOT=$FIX PATH=$BIN:$TMP/bin:$PATH SLURMD_NODENAME=nodex \
	COLLCHECK_HEALTH_BASELINE=$TMP/nobase COLLCHECK_HEALTH_SINCE=$TMP/since \
	"$COLL_SRC/tools/collcheck-health" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a since file anyone may write"
check "... is not used, and said" grep -q "^collcheck-health: $TMP/since is not root's alone" "$TMP/e"
FAIL=1 COLL_KMSG_FILE=$TMP/k79 drain >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "scontrol fails: exit 3"
check "... one line with its words" grep -qx "collcheck: --drain: scontrol could not drain nodex (slurm_update error: Invalid user id): run collcheck as root or SlurmUser where scontrol reaches slurmctld" "$TMP/e"
COLL_KMSG_FILE=$TMP/k79 PATH=/nonexistent SLURMD_NODENAME=nodex "$BIN/collcheck" health \
	--drain >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "no scontrol: exit 3"
check "... said in one line" grep -q "^collcheck: --drain: scontrol is not in PATH" "$TMP/e"
finish
