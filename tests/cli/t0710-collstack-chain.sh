#!/bin/bash
# collstack on hangs that cross communicators, with coll's own world
# communicator of 4 and groups split from it (tests/stack/chain_rank.c):
# a rank behind in the world that waits in a group is a link, not a
# culprit; the chain is said as one line down to its root, the only rank
# named. Two communicators, three, and a deadlock between two groups.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
H=$(hostname)
# job SCENARIO: start chain_rank under collrun, wait until its 4 ranks are ready.
job() {
	rm -f "$COLL_STATUS_DIR"/coll.* "$COLL_JOB_DIR"/*.json
	"$BIN/collrun" -n 4 "$COLL_BUILD/tests/chain_rank" "$1" >"$TMP/job.out" 2>&1 &
	JOB=$!
	echo $JOB >>"$TMP/pids"
	for _ in $(seq 200); do [ "$(grep -c ready "$TMP/job.out")" -ge 4 ] && break; sleep 0.05; done
}
# verdict: collstack until it names a culprit and its verdict lines are the
# same twice running (the ops must stall first, and on a loaded host a rank
# may be named before the ranks waiting for it have stalled long enough to
# be part of the chain), at most 10 s.
verdict() {
	local last=
	for _ in $(seq 30); do
		collstack --no-color >"$TMP/o" 2>"$TMP/e"
		code=$?
		now=$(grep -E '^=> | waits in |deadlock' "$TMP/o")
		grep -q '^=> ' "$TMP/o" && [ "$now" = "$last" ] && return
		last=$now
		sleep 0.3
	done
}
unjob() { kill "$JOB"; wait "$JOB" 2>/dev/null; }
culprits() { grep -c '^=> ' "$TMP/o"; }

# 1. World + group {0,1}: rank 1 in save_checkpoint, rank 0 in the group's op, 2 and 3 in the world's.
job chain2
verdict
expect_code 1 $code "two communicators: a culprit"
check "... rank 1 only" sh -c "grep -q '^=> rank 1 ($H, pid [0-9]*) holds the others up' '$TMP/o' && [ $(culprits) -eq 1 ]"
check "... the chain in one line, world and group ranks" grep -qE "^ranks 2-3 wait in allreduce seq 9 of comm [0-9a-f]+ for ranks 0-1; rank 0 \(group rank 0\) waits in allreduce seq 2 of comm [0-9a-f]+ for rank 1 \(group rank 1\); rank 1 is in save_checkpoint \(chain_rank.c:[0-9]+\)$" "$TMP/o"
check "... rank 0 is not called behind" sh -c "! grep -q '^rank 0 ' '$TMP/o'"
unjob

# 2. Three communicators: 3 in the world for 0-2; 2 in {1,2} for 1; 1 in {0,1} for 0, in save_checkpoint.
job chain3
verdict
expect_code 1 $code "three communicators: a culprit"
check "... rank 0 only" sh -c "grep -q '^=> rank 0 ($H, pid [0-9]*) holds the others up' '$TMP/o' && [ $(culprits) -eq 1 ]"
check "... the chain through both groups" grep -qE "^rank 3 waits in allreduce seq 9 of comm [0-9a-f]+ for ranks 0-2; rank 1 \(group rank 1\) waits in allreduce seq 2 of comm [0-9a-f]+ for rank 0 \(group rank 0\); rank 2 \(group rank 1\) waits in allreduce seq 2 of comm [0-9a-f]+ for rank 1 \(group rank 0\); rank 0 is in save_checkpoint \(chain_rank.c:[0-9]+\)$" "$TMP/o"
unjob

# 3. Groups A and B, both {0,1}, called in different orders: a deadlock.
job cycle
verdict
expect_code 1 $code "deadlock: named"
# Its communicators come in the order of their ids, which are random.
check "... said, with the ranks of the cycle" grep -qE "^deadlock between 2 communicators: rank [01] \(group rank [01]\) waits in allreduce seq 2 of comm [0-9a-f]+ for rank [01] \(group rank [01]\); rank [01] \(group rank [01]\) waits in allreduce seq 2 of comm [0-9a-f]+ for rank [01] \(group rank [01]\): ranks 0-1 wait on each other round the cycle \(they call these communicators' collectives in different orders\)$" "$TMP/o"
check "... each of the two waits for the other" sh -c "grep '^deadlock' '$TMP/o' | grep -q 'rank 0 (group rank 0) waits in allreduce seq 2 of comm [0-9a-f]* for rank 1 (group rank 1)' && grep '^deadlock' '$TMP/o' | grep -q 'rank 1 (group rank 1) waits in allreduce seq 2 of comm [0-9a-f]* for rank 0 (group rank 0)'"
check "... ranks 0 and 1 named, not 2 or 3" sh -c "[ $(culprits) -eq 2 ] && grep -q '^=> rank 0 ' '$TMP/o' && grep -q '^=> rank 1 ' '$TMP/o'"
check "... the world's wait leads to it" grep -q "^ranks 2-3 wait in allreduce seq 9 of comm [0-9a-f]* for ranks 0-1; .*; and a deadlock between communicators (below)$" "$TMP/o"
unjob
finish
