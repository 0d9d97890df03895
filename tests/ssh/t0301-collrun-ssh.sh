#!/bin/bash
# collrun over SSH on 4 hosts: placement, variables, labels, a cross-host
# all-reduce, exit codes, signals, output volume and --gather.
. "$(dirname "$0")/lib.sh"

collrun --label -F "$CFG" -H "$HOSTS" -N 2 sh -c 'echo "$(hostname) $COLL_RANK $LOCAL_RANK/$LOCAL_WORLD_SIZE $WORLD_SIZE $GROUP_RANK $MASTER_ADDR"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "8 ranks on 4 hosts"
for r in 0 1 2 3 4 5 6 7; do
	h=$(printf 'node%02d' $((r / 2 + 1)))
	check "rank $r runs on $h, labelled, with its variables" grep -q "^\[$r $h\] $h $r $((r % 2))/2 8 $((r / 2)) $NET.1\$" "$TMP/o"
done

# The unique id's secret reaches the ranks, but no command line shows it (ps).
"$BIN/collrun" --label -F "$CFG" -H "$HOSTS" sh -c 'echo "$COLL_UNIQUE_ID"; sleep 2' >"$TMP/uid" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 50); do [ "$(grep -c coll1: "$TMP/uid")" -eq 4 ] && break; sleep 0.1; done
secret=$(sed -n 's/^\[0 node01\] coll1:[0-9a-f]*:\([0-9a-f]*\)@.*/\1/p' "$TMP/uid")
check "every rank got the unique id" test "$(grep -c ":$secret@" "$TMP/uid")" -eq 4
check "no process's arguments hold the secret" test "$(pgrep -fc -- "$secret")" -eq 0
check "... while the ranks still ran" kill -0 $pid
wait $pid

collrun --label -F "$CFG" -H "$HOSTS" -n 4 --place roundrobin -N 2 sh -c 'echo $COLL_RANK $(hostname)' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "round-robin placement"
check "round-robin placement deals ranks across hosts" test "$(sort "$TMP/o" | tr '\n' ' ')" = "[0 node01] 0 node01 [1 node02] 1 node02 [2 node03] 2 node03 [3 node04] 3 node04 "

# Local ranks when a host's ranks are not consecutive (rank r on host r % 4).
collrun --label -F "$CFG" -H "$HOSTS" -n 8 --place roundrobin -N 2 sh -c 'echo $COLL_RANK $LOCAL_RANK/$LOCAL_WORLD_SIZE' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "round-robin placement, 2 ranks a host"
for r in 0 1 2 3 4 5 6 7; do
	check "round-robin: rank $r is local rank $((r / 4)) of 2" grep -q "^\[$r node0$((r % 4 + 1))\] $r $((r / 4))/2\$" "$TMP/o"
done

collrun -F "$CFG" -H "$HOSTS" -N 2 --no-label "$BIN/collcheck" allreduce -b 8 -e 1M -f 8 -n 2 -w 1 >"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "cross-host collcheck allreduce"
check "6 sizes, every #wrong 0" awk "/^ *[0-9]/ { n++; if (\$9 != 0 || \$13 != 0) bad = 1 } END { exit bad || n != 6 }" "$TMP/ar"

collrun --label -F "$CFG" -H "$HOSTS" --grace 1 bash -c '[ $COLL_RANK = 2 ] && exit 5; exec -a "$0" sleep 30' "$MARK" >"$TMP/o" 2>"$TMP/e"
expect_code 5 $? "the failing remote rank's exit code"
check "the failing rank and its host are named" grep -q 'rank 2 on node03 (pid [0-9]*) exited with code 5' "$TMP/e"
sleep 1
check "no rank is left on any host" test "$(leftovers)" -eq 0

# --keep-going: the other hosts' ranks run to their end.
collrun --label -F "$CFG" -H "$HOSTS" --grace 0.2 -k bash -c '[ $COLL_RANK = 2 ] && exit 5; sleep 1.5; echo "rank $COLL_RANK finished"; : "$0"' "$MARK" >"$TMP/o" 2>"$TMP/e"
expect_code 5 $? "-k: the failing remote rank's exit code"
check "-k: the failing rank and its host are named" grep -q 'rank 2 on node03 (pid [0-9]*) exited with code 5' "$TMP/e"
check "-k: the other remote ranks ran to their end" test "$(grep -c 'finished$' "$TMP/o")" -eq 3

collrun --label -F "$CFG" -H "$HOSTS" --grace 1 bash -c '[ $COLL_RANK = 1 ] && kill -9 $$; exec -a "$0" sleep 30' "$MARK" >"$TMP/o" 2>"$TMP/e"
expect_code 137 $? "a remote rank killed by SIGKILL gives 137"
check "its signal is named" grep -q 'rank 1 on node02 (pid [0-9]*) was killed by signal 9' "$TMP/e"

collrun --label -F "$CFG" -H "$HOSTS" sh -c 'yes "$(printf "%063d" $COLL_RANK)" | head -c 1048576' >"$TMP/big" 2>"$TMP/e"
expect_code 0 $? "1 MiB from each remote rank"
for r in 0 1 2 3; do
	check "rank $r: 16384 whole lines" test "$(grep -c "^\[$r node0$((r + 1))\] $(printf '%063d' $r)\$" "$TMP/big")" -eq 16384
done

collrun -F "$CFG" -H "$HOSTS" -N 2 --gather uname -s >"$TMP/g" 2>"$TMP/e"
expect_code 0 $? "--gather"
check "identical output printed once under the folded hosts and ranks" grep -q '^node\[01-04\] ranks 0-7 (8)$' "$TMP/g"
check "... once" test "$(grep -c '^Linux$' "$TMP/g")" -eq 1

# SIGINT reaches the remote ranks through the second channel.
"$BIN/collrun" --label -F "$CFG" -H "$HOSTS" bash -c 'trap "echo got INT on \$(hostname); exit 130" INT; echo ready; while :; do sleep 0.1; done; : '"$MARK" >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c ready "$TMP/o")" -eq 4 ] && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
wait $pid
expect_code 130 $? "SIGINT passed to remote ranks"
check "every host's rank saw SIGINT" test "$(grep -c 'got INT on node0' "$TMP/o")" -eq 4
finish
