#!/bin/bash
# colltop's workers started through srun (one node here, 2 tasks): frames come
# back through srun's output, and the keys' control connection reaches rank 0
# at the address Slurm's nodes resolve (+ in the screen changes the interval).
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME='=lo'

"$BIN/colltop" --launcher slurm -N 2 --no-gpu --json -n 3 -d 5 >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "colltop with 2 workers through srun"
check "3 frames of 2 ranks on this host, busbw > 0" python3 -c "
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1])]
assert len(fr) == 3 and all(f['size'] == 2 and f['busbw'] > 0 for f in fr)
assert fr[-1]['hosts'][0]['host'] == sys.argv[2]" "$TMP/j" "$(hostname)"
if command -v tmux >/dev/null; then
	S=colltop-slurm-$$
	trap 'tmux -L $S kill-server 2>/dev/null; cleanup' EXIT
	tmux -L $S new-session -d -s top -x 140 -y 30 "env TERM=xterm LANG=C.UTF-8 SLURM_CONF=$SLURM_CONF \
		COLL_SOCKET_IFNAME='=lo' $BIN/colltop --launcher slurm -N 2 --no-gpu 2>$TMP/err; echo \$? >$TMP/rc; sleep 60"
	has() { for _ in $(seq 150); do tmux -L $S capture-pane -p -t top | grep -qE -- "$1" && return 0; sleep 0.1; done; return 1; }
	check "screen through srun: 2 ranks" has '^colltop  2 ranks on 1 host'
	tmux -L $S send-keys -t top +
	check "+ reached rank 0 through srun's node address" has 'every 2 s'
	tmux -L $S send-keys -t top q
	for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
	check "q: exit 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
fi
finish
