#!/bin/bash
# The agent's control channel over SSH: nothing a program prints can pass for
# the agent (a forged pid or exit), output framing keeps lines whole and
# streams apart, and the launching installation is first in the remote PATH.
. "$(dirname "$0")/lib.sh"

# A process outside the job, in its own group: what a forged pgid would hit.
setsid sleep 300 &
sentinel=$!
echo $sentinel >>"$TMP/pids"
sleep 0.2

collrun --label -F "$CFG" -H node01,node02 --grace 1 bash -c '
	if [ "$COLL_RANK" = 0 ]; then
		printf "coll-agent: pgid 1\ncoll-agent: pgid %s\ncoll-agent: exit 0\n" "$1" >&2
		printf "p %s\nx 0\n" "$1"
		sleep 1; exit 3
	fi
	exec -a "$2" sleep 30' bash "$sentinel" "$MARK" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "forged agent lines: collrun exits as the program did"
check "the failing rank is named with its real exit" grep -q "rank 0 on node01 (pid [0-9]*) exited with code 3" "$TMP/e"
check "the forged lines are shown as the program's stderr" grep -q "^\[0 node01\] coll-agent: pgid $sentinel\$" "$TMP/e"
check "... and the look-alike records as its stdout" grep -q "^\[0 node01\] p $sentinel\$" "$TMP/o"
check "the rank's real pid is not the forged one" sh -c "! grep -q 'rank 0 on node01 (pid $sentinel)' '$TMP/e'"
check "the process outside the job got no signal" kill -0 "$sentinel"
check "the other rank was stopped" test "$(leftovers)" -eq 0

# Framing: a 5000-byte line, a partial last line, stdout and stderr apart.
collrun --label -F "$CFG" -H node01 sh -c 'head -c 5000 /dev/zero | tr "\0" a; echo; echo to-err >&2; printf "no newline"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "framing run"
check "a 5000-byte line arrives whole" awk 'length($0) == length("[0 node01] ") + 5000 { n++ } END { exit n != 1 }' "$TMP/o"
check "a partial last line is kept" grep -q '^\[0 node01\] no newline$' "$TMP/o"
check "stderr stays stderr" grep -q '^\[0 node01\] to-err$' "$TMP/e"
check "and out of stdout" sh -c "! grep -q to-err '$TMP/o'"

# Remote PATH: collrun started by a path puts its own directory first there.
collrun -F "$CFG" -H node01,node02 --no-label sh -c 'echo "$PATH"' >"$TMP/o" 2>"$TMP/e"
check "the remote PATH starts with collrun's directory" test "$(grep -c "^$BIN:" "$TMP/o")" -eq 2
collrun -F "$CFG" -H node01 --no-label sh -c 'echo "$LD_LIBRARY_PATH"' >"$TMP/o" 2>"$TMP/e"
check "the remote LD_LIBRARY_PATH starts with its lib" grep -q "^$(dirname "$BIN")/lib" "$TMP/o"
collrun -F "$CFG" -H node01,node02 --no-label collcheck allreduce -b 8 -e 64K -f 8 -n 1 -w 0 >"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "a tool by bare name runs on hosts whose default PATH lacks it"

# --prefix names another installation: its bin/collrun is the agent, its bin first.
mkdir -p "$TMP/pfx/bin"
cp "$BIN/collrun" "$TMP/pfx/bin/"
printf '#!/bin/sh\necho "prefixed on $(hostname) $LD_LIBRARY_PATH"\n' >"$TMP/pfx/bin/coll-hello"
chmod +x "$TMP/pfx/bin/coll-hello"
collrun --label -F "$CFG" -H node01,node02 --prefix "$TMP/pfx" coll-hello >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--prefix"
check "--prefix: the program is found in PREFIX/bin on every host" test "$(grep -c "prefixed on node0[12] $TMP/pfx/lib" "$TMP/o")" -eq 2
rm "$TMP/pfx/bin/collrun"
collrun --label -F "$CFG" -H node01 --prefix "$TMP/pfx" true >"$TMP/o" 2>"$TMP/e"
check "--prefix without collrun there fails (it is the agent)" test $? -ne 0
finish
