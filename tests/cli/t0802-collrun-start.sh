#!/bin/bash
# Starting many ranks (issue 37, item 7): past 4 ranks per CPU collrun warns
# in one line; a start longer than 2 s says how far it is; SIGTERM during
# the start stops it at once, kills what was started and exits 143. Slots
# given are kept to, here as anywhere, unless --oversubscribe.
. "$(dirname "$0")/lib.sh"
CPUS=$(nproc)

collrun -n $((4 * CPUS)) true >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-n $((4 * CPUS)) on $CPUS CPUs"
check "... no warning" test ! -s "$TMP/e"
if [ $((4 * CPUS)) -lt 256 ]; then
	collrun -n $((4 * CPUS + 1)) true >"$TMP/o" 2>"$TMP/e"
	expect_code 0 $? "-n $((4 * CPUS + 1)) on $CPUS CPUs"
	check "... one line of warning" sh -c "test \$(wc -l <'$TMP/e') -eq 1 &&
		grep -q '^collrun: warning: $((4 * CPUS + 1)) ranks on $CPUS CPUs* here' '$TMP/e'"
fi

# A start long enough to show its progress (each rank is a shell; the first
# ten stay, so that their killing shows), stopped by SIGTERM once it has.
N=${T0802_RANKS:-20000}
"$BIN/collrun" -n "$N" sh -c '[ $COLL_RANK -lt 10 ] || exit 0; echo $$ >"$1/pid.$COLL_RANK"
	exec sleep 600' rank "$TMP" >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 600); do grep -q "^collrun: started [0-9]* of $N ranks$" "$TMP/e" && break; sleep 0.1; done
check "a start past 2 s says how far it is" grep -q "^collrun: started [0-9]* of $N ranks$" "$TMP/e"
start=$(date +%s)
kill -TERM $pid
wait $pid
code=$?
expect_code 143 $code "SIGTERM during the start"
check "... honoured at once ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 10
check "... said in one line" grep -q "^collrun: stopped by SIGTERM while starting; [0-9]* ranks stopped$" "$TMP/e"
check "... the ranks started are gone" sh -c "! kill -0 $(cat "$TMP"/pid.* | tr '\n' ' ') 2>/dev/null"

# Slots: -H localhost:2 -n 4 is refused as -N 2 -n 3 is, both taken with --oversubscribe.
for args in "-H localhost:2 -n 4" "-N 2 -n 3"; do
	# shellcheck disable=SC2086
	collrun $args true >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "$args: more ranks than slots"
	check "... one line naming --oversubscribe" \
		grep -q "^collrun: [34] ranks but only 2 slots on 1 host: .*--oversubscribe$" "$TMP/e"
	# shellcheck disable=SC2086
	collrun $args --oversubscribe sh -c 'echo $COLL_LOCAL_SIZE' >"$TMP/o" 2>"$TMP/e"
	expect_code 0 $? "$args --oversubscribe"
	check "... all ranks on the one host" test "$(sort -u "$TMP/o")" = "$(wc -l <"$TMP/o")"
done
collrun -n 5 true >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "without hosts, this machine takes any -n"
finish
