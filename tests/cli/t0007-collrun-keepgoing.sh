#!/bin/bash
# --keep-going: a failed rank is named at once, the others run to their end,
# and the first failure's code is collrun's; without it the others are
# stopped. A signal to collrun and --timeout still stop everything.
. "$(dirname "$0")/lib.sh"

# Rank 1 fails at once; each other rank, a second later, notes whether
# collrun had named rank 1 by then (seen.R) and that it finished (m.R). A
# short --grace makes a fail-fast stop show within that second.
collrun -n 4 --label --grace 0.2 --keep-going sh -c 'd=$1
[ $COLL_RANK = 1 ] && exit 3
sleep 1
grep -q "rank 1 (pid [0-9]*) exited with code 3" "$d/e" && touch "$d/seen.$COLL_RANK"
touch "$d/m.$COLL_RANK"; echo "rank $COLL_RANK finished"' rank "$TMP" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--keep-going: the failed rank's code is collrun's"
check "the failed rank is named" grep -q '^collrun: rank 1 (pid [0-9]*) exited with code 3$' "$TMP/e"
check "it was named while the others still ran" test -f "$TMP/seen.0"
for r in 0 2 3; do
	check "rank $r ran to its end" test -f "$TMP/m.$r"
	check "rank $r's last line was shown" grep -q "^\[$r\] rank $r finished\$" "$TMP/o"
done
check "nothing was stopped" test "$(grep -c 'stopping the other ranks' "$TMP/e")" -eq 0
rm -f "$TMP"/m.* "$TMP"/seen.*

# Two failures: the first one's code, both named.
collrun -n 4 --grace 0.2 -k sh -c 'd=$1
case $COLL_RANK in 2) exit 5 ;; 0) sleep 0.5; exit 7 ;; esac
sleep 1; touch "$d/m.$COLL_RANK"' rank "$TMP" >"$TMP/o" 2>"$TMP/e"
expect_code 5 $? "-k with two failures: the first one's code"
check "rank 2 is named" grep -q 'rank 2 (pid [0-9]*) exited with code 5' "$TMP/e"
check "rank 0 is named too" grep -q 'rank 0 (pid [0-9]*) exited with code 7' "$TMP/e"
check "ranks 1 and 3 ran to their end" test -f "$TMP/m.1" -a -f "$TMP/m.3"
rm -f "$TMP"/m.*

# A rank killed by a signal: 128+9, and the others still finish.
collrun -n 4 --grace 0.2 -k sh -c 'd=$1
[ $COLL_RANK = 1 ] && kill -9 $$
sleep 1; touch "$d/m.$COLL_RANK"' rank "$TMP" >"$TMP/o" 2>"$TMP/e"
expect_code 137 $? "-k with a rank killed by SIGKILL"
check "the signal is named" grep -q 'rank 1 (pid [0-9]*) was killed by signal 9 (SIGKILL)' "$TMP/e"
check "ranks 0, 2 and 3 ran to their end" test -f "$TMP/m.0" -a -f "$TMP/m.2" -a -f "$TMP/m.3"
rm -f "$TMP"/m.*

# The control: without -k the others are stopped before they get there.
collrun -n 4 --grace 0.2 sh -c 'd=$1
[ $COLL_RANK = 1 ] && exit 3
sleep 2; touch "$d/m.$COLL_RANK"' rank "$TMP" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "without -k the failed rank's code too"
check "without -k the others are stopped" test -z "$(ls "$TMP" | grep '^m\.')"
check "without -k the stop is announced" grep -q 'stopping the other ranks' "$TMP/e"

# A signal to collrun stops every rank under -k too; the failure keeps its code.
"$BIN/collrun" -n 3 -k sh -c '[ $COLL_RANK = 1 ] && exit 3; echo ready; sleep 30' >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c ready "$TMP/o")" -eq 2 ] && grep -q 'code 3' "$TMP/e" && break; sleep 0.1; done
start=$(date +%s)
kill -TERM $pid
wait $pid
expect_code 3 $? "-k and SIGTERM: the first failure's code"
check "SIGTERM was passed on" grep -q 'got SIGTERM, passing it to the ranks' "$TMP/e"
check "SIGTERM stopped the others at once" test $(($(date +%s) - start)) -lt 3

# --timeout still ends a job whose failure was kept going from.
start=$(date +%s)
collrun -n 3 -k -t 1 sh -c '[ $COLL_RANK = 1 ] && exit 3; sleep 30' >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "-k and --timeout: the first failure's code"
check "--timeout is reported" grep -q 'ran past --timeout' "$TMP/e"
check "--timeout is prompt under -k" test $(($(date +%s) - start)) -lt 6

check "no status pages or job records left" test -z "$(find "$COLL_STATUS_DIR" "$COLL_JOB_DIR" -type f)"
finish
