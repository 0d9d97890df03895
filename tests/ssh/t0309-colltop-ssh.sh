#!/bin/bash
# colltop on 4 hosts over SSH (a worker per host): frames name the 4 hosts by
# their own names with their interfaces' counters growing; the screen in tmux
# shows them and quits cleanly; and a host whose link is cut while the
# dashboard runs is shown lost within two intervals of the keep-alive's
# verdict while the other three stay live.
. "$(dirname "$0")/lib.sh"
NETBED="$COLL_SRC/tests/netbed/netbed.sh"
SOCK=colltop-ssh-$$
relink() { bash "$NETBED" exec "$BED" 3 ip link set eth0 up 2>/dev/null; }
trap 'relink; tmux -L $SOCK kill-server 2>/dev/null; cleanup' EXIT
colltop() { "$BIN/colltop" -F "$CFG" -H "$HOSTS" --no-gpu "$@"; }

# 1. Batch: 4 hosts, their eth0 counters.
colltop --json -n 4 -d 5 >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "--json on 4 hosts"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
say(len(fr) == 4, "4 frames")
say(all(sorted(h["host"] for h in f["hosts"]) == ["node01", "node02", "node03", "node04"] for f in fr), "the hosts by their own names")
say(all(f["size"] == 4 and f["busbw"] > 0 for f in fr), "4 ranks, busbw > 0")
for h in ("node01", "node03"):
    rx = [[n["rx_bytes"] for x in f["hosts"] if x["host"] == h for n in x["net"] if n["name"] == "eth0"][0] for f in fr]
    say(all(a < b for a, b in zip(rx, rx[1:])), "%s eth0 rx_bytes grows: %s" % (h, rx))
say(all(r["lost"] is False for f in fr for r in f["ranks"]), "none lost")
EOF
check "frames from 4 hosts make sense" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"

# A host that cannot be reached ends the start at once, named, with what to do.
"$BIN/colltop" -F "$CFG" -H 'node01,node99' --no-gpu --once >"$TMP/o" 2>&1
expect_code 3 $? "an unreachable host"
check "it is named, with -x to leave it out" grep -q '^colltop: cannot start the workers: node99: .*leave it out with -x node99' "$TMP/o"

# 2. The screen, over SSH.
tmux -L $SOCK new-session -d -s top -x 150 -y 30 "env TERM=xterm-256color LANG=C.UTF-8 \
	$BIN/colltop -F $CFG -H '$HOSTS' --no-gpu 2>$TMP/err.tty; echo \$? >$TMP/rc; sleep 60"
screen_has() { for _ in $(seq 150); do tmux -L $SOCK capture-pane -p -t top | grep -qE -- "$1" && return 0; sleep 0.1; done; return 1; }
check "screen: 4 ranks on 4 hosts" screen_has '^colltop  4 ranks on 4 hosts'
tmux -L $SOCK send-keys -t top t
check "screen: a row per host" screen_has '^node04 +1 +ok '
tmux -L $SOCK send-keys -t top q
for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
check "screen: q exits 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "screen: on rank 0's word, not by signal" sh -c "! grep -q 'got SIG' $TMP/err.tty"
tmux -L $SOCK kill-server 2>/dev/null

# 3. node03's link cut while the dashboard runs.
colltop --json -n 16 -d 5 --dead-after 1 >"$TMP/c" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 200); do [ "$(wc -l <"$TMP/c")" -ge 4 ] && break; sleep 0.1; done
cut=$(date +%s.%N)
bash "$NETBED" exec "$BED" 3 ip link set eth0 down
for _ in $(seq 200); do grep -q '"lost":true' "$TMP/c" && break; sleep 0.05; done
seen=$(date +%s.%N)
for _ in $(seq 200); do [ "$(wc -l <"$TMP/c")" -ge 16 ] && break; sleep 0.1; done
relink
wait $pid
code=$?
check "the dashboard ran its 16 intervals ($(wc -l <"$TMP/c"))" test "$(wc -l <"$TMP/c")" -eq 16
check "exit 1: a host was lost (exit $code)" test "$code" -eq 1
took=$(python3 -c "print(round($seen - $cut, 2))")
# The verdict takes --dead-after (1 s); two intervals (1 s) more at most to show it.
check "node03 shown lost within 3 s of the cut (took $took s)" python3 -c "import sys; sys.exit(not $took < 3.0)"
python3 - "$TMP/c" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
last = fr[-1]
h = {x["host"]: x for x in last["hosts"]}
say(h["node03"]["lost"] and "stopped answering" in h["node03"]["why"], "node03 lost, why said: %s" % h["node03"]["why"])
say(all(not h[n]["lost"] for n in ("node01", "node02", "node04")), "the others are not")
say(last["size"] == 3 and last["busbw"] > 0, "3 ranks go on with busbw > 0")
first = [i for i, f in enumerate(fr) if any(r["lost"] for r in f["ranks"])][0]
say(all(f["size"] == 3 for f in fr[first:]), "every frame after it on 3 ranks")
say(fr[-1]["interval"] > fr[first]["interval"], "intervals went on after the loss")
EOF
check "after the cut: node03 lost, the rest live" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"
check "nothing left behind on any host" test "$(pgrep -f 'colltop --worker' | wc -l)" -eq 0
[ "$fails" -eq 0 ] || { cat "$TMP/e"; tail -3 "$TMP/c"; }
finish
