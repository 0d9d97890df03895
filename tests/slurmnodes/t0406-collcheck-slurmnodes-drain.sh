#!/bin/bash
# collcheck --drain on the multi-node Slurm bed: a node whose kernel log has
# Xid 79 (an ERROR) is drained with a Reason naming it and the others stay
# idle (the whole check's rank 0 under collrun, each node given its own log);
# an Xid 13 (a WARN) on every node drains none (the front end, through
# srun); collcheck health --drain, run on a node as slurmd runs its
# HealthCheckProgram, drains that node by its host name. Every node is
# resumed at the end, whatever happened.
. "$(dirname "$0")/lib.sh"
resume_all() {
	for i in $(seq 1 "$K"); do
		scontrol update NodeName="$(node "$i")" State=RESUME 2>/dev/null
	done
}
cleanup_drain() { resume_all; cleanup; }
trap cleanup_drain EXIT

xid() { printf '3,1,1000,-;NVRM: Xid (PCI:0000:01:00): %s, pid=1, name=a, %s\n' "$1" "$2"; }
xid 79 "GPU has fallen off the bus." >"$TMP/k79"
xid 13 "Graphics SM Warp Exception" >"$TMP/k13"
: >"$TMP/kempty"
# Each node reads the log named after it, the others an empty one (never this machine's).
cp "$TMP/k79" "$TMP/kmsg.$(node 2)"
cat >"$TMP/w.sh" <<EOW
#!/bin/sh
f=$TMP/kmsg.\$(hostname)
[ -f "\$f" ] || f=$TMP/kempty
COLL_KMSG_FILE=\$f exec "\$@"
EOW
chmod +x "$TMP/w.sh"
# state N: node N's state and reason as sinfo says them
state() { sinfo -h -n "$(node "$1")" -o '%t %E' 2>/dev/null; }
# wait_state N STATE: up to 10 s for it (a drained node with a job is "drng" until it ends)
wait_state() {
	for _ in $(seq 100); do [ "$(state "$1" | cut -d' ' -f1)" = "$2" ] && return 0; sleep 0.1; done
	return 1
}

timeout 60 "$BIN/collrun" --launcher slurm -H "$NODES" "$TMP/w.sh" "$BIN/collcheck" env --drain \
	>"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "Xid 79 on $(node 2): the whole check under collrun, --drain"
check "it says $(node 2) was drained, with the reason" \
	grep -qx "drain: $(node 2) drained (collcheck: Xid 79 on 0000:01:00, 1 time)" "$TMP/o"
check "... and the others not, and why" \
	grep -qx "drain: node\[01,03-04\] not drained: no ERROR finding" "$TMP/o"
check "$(node 2) is drained in Slurm" wait_state 2 drain
check "... with the finding as its reason" \
	sh -c "[ \"\$(sinfo -h -n $(node 2) -o '%E')\" = 'collcheck: Xid 79 on 0000:01:00, 1 time' ]"
for i in 1 3 4; do check "$(node $i) stays idle" wait_state "$i" idle; done
resume_all
check "$(node 2) resumed" wait_state 2 idle

COLL_KMSG_FILE=$TMP/k13 timeout 60 "$BIN/collcheck" env --launcher slurm -H "$NODES" --drain \
	--json >"$TMP/j" 2>"$TMP/e"
expect_code 1 $? "Xid 13 (a warning) on every node: collcheck env --drain through srun"
check "--json: no node drained, each for warnings only, by its Slurm name" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert [(x['node'], x['drained'], x['why']) for x in d['drain']] == \
	[('node%02d' % i, False, 'warnings only') for i in range(1, 5)], d['drain']" "$TMP/j"
for i in 1 2 3 4; do check "$(node $i) idle" wait_state "$i" idle; done

# As slurmd runs HealthCheckProgram: on the node, in no job, no SLURMD_NODENAME.
env -u SLURMD_NODENAME COLL_KMSG_FILE="$TMP/k79" SLURM_CONF="$SLURM_CONF" \
	bash "$SLURMNODES" exec "$SN" 3 "$BIN/collcheck" health --drain >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "collcheck health --drain on $(node 3)"
check "one line for the finding" grep -q "^ERROR  Xid 79 on 0000:01:00, 1 time: GPU has fallen off the bus" "$TMP/o"
check "$(node 3) drained by its host name" wait_state 3 drain
check "... with the reason" sh -c "sinfo -h -n $(node 3) -o '%E' | grep -qx 'collcheck: Xid 79 on 0000:01:00, 1 time'"
finish
