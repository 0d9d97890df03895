#!/bin/bash
# collstack on 1,024 local ranks of one job (128 under the sanitizers, whose
# processes cost tens of MiB each): every rank publishes a real status page
# as a job hung in an all-reduce would, rank 17 is behind, outside any
# collective, in train_step. collstack reads them all and names rank 17.
. "$(dirname "$0")/lib.sh"
N=1024
[ -n "${COLL_TEST_CFLAGS:-}" ] && N=128
"$BIN/collrun" -n $N "$COLL_BUILD/tests/stack_pager" 1042 17 >"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
JOB=$!
for _ in $(seq 600); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge $N ] && break; sleep 0.1; done
check "$N ranks published their pages" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge $N
sleep 1.5
"$BIN/collstack" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "$N ranks: a culprit is named"
check "$N ranks: all read" grep -q "^collstack: $N ranks on 1 host" "$TMP/o"
check "$N ranks: rank 17 is behind, where it is" grep -q "^rank 17 ($(hostname), pid [0-9]*) is at seq 1041 outside any collective, in train_step (stack_pager.c:[0-9]*); $((N - 1)) ranks wait in allreduce seq 1042" "$TMP/o"
check "$N ranks: only rank 17 is named" test "$(grep -c '^rank ' "$TMP/o")" -eq 1
check "$N ranks: the tree parts at rank 17" sh -c "grep -q '\[17\] (1) train_step (stack_pager.c:[0-9]*)' '$TMP/o' && grep -q '\[0-16,18-$((N - 1))\] ($((N - 1))) wait_allreduce (stack_pager.c:[0-9]*)' '$TMP/o'"
check "$N ranks: two classes" grep -q "^2 equivalence classes (ranks with the same stacks): \[0-16,18-$((N - 1))\] \[17\]$" "$TMP/o"
check "$N ranks: nothing on stderr" test ! -s "$TMP/e"
kill $JOB; wait $JOB 2>/dev/null
finish
