#!/bin/bash
# The tree launch (--tree K) on 4 hosts: the front end holds K SSH sessions,
# not 4; every rank's output, pid, environment and end come back through one
# or three layers of relays (--tree 2, --tree 1) with nothing lost; signals go
# down; a relay that is killed or cannot be reached has its subtree named,
# exit 255, and no rank is left behind; collcheck runs through it too; the
# ranks' root connections are relayed up the same tree.
. "$(dirname "$0")/lib.sh"
trap 'for p in $(cat "$TMP"/pids 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	pkill -9 -f "$MARK" 2>/dev/null; cleanup' EXIT
# Sessions this machine (the front end) holds open to the bed's sshds.
sessions() { ss -Htn state established "( dport = :22 )" | awk '{print $4}' | grep -c "^$NET\." || true; }
relay_on() { # pid of the relay running on host $1 (netns name ends in h$1)
	for p in $(pgrep -f -- "--relay --uid-stdin"); do
		case "$(ip netns identify "$p" 2>/dev/null)" in *h"$1") echo "$p"; return ;; esac
	done
}
wait_up() { # wait_up N: N lines "up" in $TMP/o
	for _ in $(seq 150); do [ "$(grep -c ' up$' "$TMP/o")" -ge "$1" ] && return 0; sleep 0.1; done
	return 1
}
start() { # start N WHAT ARGS...: collrun ARGS on the bed in the background ($pid), until N ranks are up
	local n=$1 what=$2
	shift 2
	"$BIN/collrun" --label -F "$CFG" -H "$HOSTS" "$@" >"$TMP/o" 2>"$TMP/e" &
	pid=$!
	echo $pid >>"$TMP/pids"
	check "$what: $n ranks up" wait_up "$n"
}

# 1. Flat and tree side by side: same output, 4 sessions against 2.
for t in 0 2; do
	start 8 "--tree $t" -N 2 --tree $t bash -c 'echo up; exec -a "$0" sleep 30' "$MARK"
	n=$(sessions)
	kill -TERM $pid
	wait $pid
	code=$?
	if [ $t = 0 ]; then
		check "flat: 4 sessions from the front end ($n)" test "$n" -eq 4
	else
		check "--tree 2: 2 sessions from the front end ($n)" test "$n" -eq 2
		check "--tree 2: 8 ranks came up through the relays" test "$(grep -c ' up$' "$TMP/o")" -eq 8
		for r in 0 1 2 3 4 5 6 7; do
			h=$(printf 'node%02d' $((r / 2 + 1)))
			check "rank $r labelled with $h" grep -q "^\[$r $h\] up\$" "$TMP/o"
		done
	fi
	check "--tree $t: SIGTERM stopped the job (exit $code)" test "$code" -eq 143
done
for _ in $(seq 100); do [ "$(leftovers)" -eq 0 ] && break; sleep 0.1; done
check "no rank left after SIGTERM" test "$(leftovers)" -eq 0

# 2. A chain of relays (--tree 1: node01 starts node02, which starts node03, ...).
collrun --label -F "$CFG" -H "$HOSTS" --tree 1 bash -c 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $GROUP_RANK $MASTER_ADDR $(hostname) $COLL_UNIQUE_ID" | cut -c1-60' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--tree 1: 4 hosts in a chain"
for r in 0 1 2 3; do
	h=$(printf 'node%02d' $((r + 1)))
	check "chain: rank $r's environment on $h" grep -q "^\[$r $h\] $r 4 0 $r $NET.1 $h [0-9a-f]" "$TMP/o"
done
check "chain: nothing on stderr" test ! -s "$TMP/e"

# Ranks not in host order (rank r on host r % 4): each host's own, through the chain,
# and an all-reduce whose ranks reach the root through the relays.
collrun --label -F "$CFG" -H "$HOSTS" --tree 1 -n 8 -N 2 --place roundrobin sh -c 'echo $RANK $LOCAL_RANK/$LOCAL_WORLD_SIZE' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--tree 1, round-robin placement"
for r in 0 1 2 3 4 5 6 7; do
	check "chain, round-robin: rank $r on node0$((r % 4 + 1)), local rank $((r / 4)) of 2" \
		grep -q "^\[$r node0$((r % 4 + 1))\] $r $((r / 4))/2\$" "$TMP/o"
done
collrun -F "$CFG" -H "$HOSTS" --tree 1 -n 8 -N 2 --place roundrobin --no-label "$BIN/collcheck" allreduce -b 8 -e 64K -f 8 -n 2 -w 1 >"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "--tree 1, round-robin: an all-reduce of 8 ranks"
check "chain, round-robin: 5 sizes, every #wrong 0" awk "/^ *[0-9]/ { n++; if (\$9 != 0 || \$13 != 0) bad = 1 } END { exit bad || n != 5 }" "$TMP/ar"

# 3. Nothing lost on the way: long lines and many of them, from the deepest host.
collrun -F "$CFG" -H "$HOSTS" --tree 1 --no-label bash -c \
	'[ $RANK = 3 ] && { head -c 5000 /dev/zero | tr "\0" x; echo; seq 20000; printf tail; }; exit 0' \
	>"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--tree 1: much output"
{ head -c 5000 /dev/zero | tr '\0' x; echo; seq 20000; printf 'tail\n'; } >"$TMP/want"
check "the 4th host's output arrived whole, in order" cmp -s "$TMP/o" "$TMP/want"

# 4. Exit codes and signals through the layers.
collrun --label -F "$CFG" -H "$HOSTS" --tree 1 --grace 0 bash -c '[ $RANK = 3 ] && exit 7; exec -a "$0" sleep 20' "$MARK" \
	>"$TMP/o" 2>"$TMP/e"
expect_code 7 $? "the deepest rank's exit code"
check "it is named with its host and pid" grep -q "^collrun: rank 3 on node04 (pid [0-9]*) exited with code 7" "$TMP/e"
start 4 chain --tree 1 bash -c 'trap "echo got INT; exit 5" INT; echo up; sleep 30 & wait'
kill -INT $pid
wait $pid
expect_code 5 $? "SIGINT through the chain"
check "every rank got SIGINT" test "$(grep -c 'got INT$' "$TMP/o")" -eq 4

# 5. A relay killed: its subtree is named, the job ends 255, nothing is left.
start 8 "--tree 2 again" -N 2 --tree 2 bash -c 'echo up; exec -a "$0" sleep 30' "$MARK"
relay=$(relay_on 3)
check "a relay runs on node03" test -n "$relay"
kill -9 $relay
wait $pid
expect_code 255 $? "a relay killed"
check "node04 named as lost with its relay" grep -q "^collrun: node04: lost: its relay on node03 was killed by signal KILL" "$TMP/e"
check "the summary names node04 alone" test "$(grep -c '^  node0[0-9]: ' "$TMP/e")" -eq 1
for _ in $(seq 100); do [ "$(leftovers)" -eq 0 ] && break; sleep 0.1; done
check "no rank left on any host" test "$(leftovers)" -eq 0

# 6. A relay that cannot be reached: its subtree is named as not started.
printf 'Host nobody\n\tHostName %s.250\n' "$NET" | cat - "$CFG" >"$TMP/cfg2"
collrun --label -F "$TMP/cfg2" -H node01,node02,nobody,node04 --tree 2 --connect-timeout 2 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "an unreachable relay"
check "node04 named: its relay could not be used" grep -q "^  node04: not started: its relay on nobody could not be used" "$TMP/e"
check "the rest ran" test "$(grep -c '^\[[01] node0[12]\] node0[12]$' "$TMP/o")" -eq 2
# ... and a host below a relay that cannot be reached: the relay names it.
collrun --label -F "$TMP/cfg2" -H node01,node02,node03,nobody --tree 2 --connect-timeout 2 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "an unreachable host below a relay"
check "the relay named it, with why" grep -Eq "^  nobody: (timed out after 2 s connecting|cannot connect to port 22: No route to host)" "$TMP/e"
check "the summary names it alone" test "$(grep -c '^  [a-z0-9]*: ' "$TMP/e")" -eq 1
check "the other 3 ran" test "$(grep -c '^\[[0-2] node0[1-3]\] node0[1-3]$' "$TMP/o")" -eq 3

# 7. collrun killed outright: every rank below the relays ends by itself.
start 8 chain -N 2 --tree 1 bash -c 'echo up; exec -a "$0" sleep 60' "$MARK"
check "3 relays run" test "$(pgrep -f -- "--relay --uid-stdin.*$MARK" | wc -l)" -eq 3
kill -9 $pid
wait $pid 2>/dev/null
for _ in $(seq 100); do [ "$(leftovers)" -eq 0 ] && break; sleep 0.1; done
# The relays carry the marker in their command line too.
check "ranks and relays died within 10 s of losing collrun" test "$(leftovers)" -eq 0

# 8. The tools run through the tree too, with the verdicts of a flat start
# (t0306 leaves node03's sshd a memlock limit it cannot raise again: a WARN,
# the same both ways).
collcheck env -F "$CFG" -H "$HOSTS" --tree 0 >"$TMP/flat" 2>"$TMP/e"
flat=$?
collcheck env -F "$CFG" -H "$HOSTS" --tree 2 >"$TMP/o" 2>"$TMP/e"
expect_code "$flat" $? "collcheck env --tree 2, as flat"
check "every host checked, none unreachable" test "$(grep -cE '^node0[1-4]  (OK$|WARN )' "$TMP/o")" -eq 4
check "the same verdicts as flat" cmp -s <(grep '^node' "$TMP/flat") <(grep '^node' "$TMP/o")

# 9. The root is relayed down the tree (core/bootstrap/proxy.c): in a chain
# node01's relay carries the root connections of node02-04 (node02's those of
# node03-04, ...), so the front end's root holds node01's 2 ranks and one
# relay, not 8 ranks. A rank killed on the deepest host is named through three
# relays, and the 7 others agree on a shrink through them and finish right.
FT=$COLL_BIN/../tests/ft_rank
"$BIN/collrun" --label -k -F "$CFG" -H "$HOSTS" -N 2 --tree 1 env COLL_KEEPALIVE_MS=100 \
	COLL_KEEPALIVE_LIMIT=20 COLL_TIMEOUT=60 FT_PACE_MS=20 COLL_FAULT=7@100:kill "$FT" kill 200 \
	"$MARK" >"$TMP/out" 2>&1 &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 150); do [ "$(grep -c "ft: rank [0-7] running" "$TMP/out")" -eq 8 ] && break; sleep 0.1; done
# The front end's connections that are not its SSH sessions: the root's.
roots=$(ss -Htnp state established | grep "pid=$pid," | awk '{print $4}' | grep -vc ':22$')
check "the root holds 3 connections (node01's 2 ranks, 1 relay), not 8 ($roots)" test "$roots" -eq 3
wait $pid
expect_code 137 $? "relayed root: the killed rank's signal"
check "every survivor names rank 7 on node04 as dead" \
	test "$(grep -c -E '^\[[0-6] node0[1-4]\] ft: rank [0-6] op failed .*rank 7 \(host node04, pid [0-9]*\) died' "$TMP/out")" -eq 7
check "the 7 others shrank through the relays and finished" \
	test "$(grep -c 'ft: rank [0-6] done 200 iterations on 7 ranks' "$TMP/out")" -eq 7
check "no wrong result" test "$(grep -c WRONG "$TMP/out")" -eq 0
[ "$fails" -eq 0 ] || cat "$TMP/out"

# 10. Bad --tree values are refused with a clear line.
collrun --label -H "$HOSTS" --tree -1 true >"$TMP/o" 2>&1
expect_code 2 $? "--tree -1"
check "--tree: said" grep -q "^collrun: --tree" "$TMP/o"
finish
