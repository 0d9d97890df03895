#!/bin/bash
# colltop on a salloc allocation of 3 nodes: one worker per node through
# srun, --once and --json frames naming each node; on the screen the keys'
# control connection from rank 0 (on the first node) reaches colltop here
# at the root's address, the one srun reached the nodes from (+ changes
# the interval).
. "$(dirname "$0")/lib.sh"
NAME=t0507-$$
S=colltop-nodes-$$
cleanup_top() { tmux -L "$S" kill-server 2>/dev/null; scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_top EXIT

salloc -J "$NAME" -N 3 "$BIN/colltop" --launcher slurm --no-gpu --once >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "salloc -N 3 colltop --once"
check "3 ranks on 3 hosts" grep -q '^colltop: 3 ranks on 3 hosts' "$TMP/o"
for n in 1 2 3; do
	check "rank $((n - 1)) on $(node $n), ok" grep -qE "^ +$((n - 1)) +$(node $n) +ok " "$TMP/o"
	check "host row of $(node $n)" grep -qE "^$(node $n) +1 +ok " "$TMP/o"
done

salloc -J "$NAME" -N 3 "$BIN/colltop" --launcher slurm --no-gpu --json -n 2 -d 5 >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "--json --iterations 2"
check "2 frames of 3 ranks on the 3 nodes, busbw > 0" python3 -c "
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1])]
assert len(fr) == 2 and all(f['size'] == 3 and f['busbw'] > 0 for f in fr), fr
assert [r['host'] for r in fr[-1]['ranks']] == sys.argv[2:], fr[-1]['ranks']" "$TMP/j" "$(node 1)" "$(node 2)" "$(node 3)"

if command -v tmux >/dev/null; then
	tmux -L "$S" new-session -d -s top -x 160 -y 30 "env TERM=xterm LANG=C.UTF-8 SLURM_CONF=$SLURM_CONF \
		salloc -J $NAME -N 3 $BIN/colltop --launcher slurm --no-gpu 2>$TMP/err; echo \$? >$TMP/rc; sleep 60"
	has() { for _ in $(seq 150); do tmux -L "$S" capture-pane -p -t top | grep -qE -- "$1" && return 0; sleep 0.1; done; return 1; }
	check "screen: 3 ranks on 3 hosts" has '^colltop  3 ranks on 3 hosts'
	check "... every 1 s" has 'every 1 s'
	tmux -L "$S" send-keys -t top +
	check "+ reached rank 0 on $(node 1) through the root's address" has 'every 2 s'
	tmux -L "$S" send-keys -t top q
	for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
	check "q: exit 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
else
	echo "# tmux missing: the screen's part is skipped"
fi
finish
