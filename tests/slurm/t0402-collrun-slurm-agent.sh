#!/bin/bash
# The agent's control channel under srun: a program that prints the agent's
# old tags cannot fake its end or its pid; long lines survive srun --label's
# 1024-byte limit whole.
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME==lo

setsid sleep 300 &
sentinel=$!
echo $sentinel >>"$TMP/pids"
sleep 0.2

collrun --label --launcher slurm -n 2 --grace 1 sh -c '
	if [ "$COLL_RANK" = 0 ]; then
		printf "coll-agent: pgid 1\ncoll-agent: pgid %s\ncoll-agent: exit 0\n" "$1" >&2
		printf "p %s\nx 0\n" "$1"
		sleep 1; exit 3
	fi
	exec sleep 30' sh "$sentinel" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "forged agent lines: collrun exits as the program did"
check "the failing rank is named with its real exit" grep -q "rank 0 (pid [0-9]*) exited with code 3" "$TMP/e"
check "the forged lines are shown as the program's stderr" grep -q "^\[0\] coll-agent: exit 0\$" "$TMP/e"
check "the process outside the job got no signal" kill -0 "$sentinel"

collrun --label --launcher slurm -n 2 sh -c 'head -c 5000 /dev/zero | tr "\0" b; echo; printf tail' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "framing run"
check "a 5000-byte line arrives whole from each task" awk 'length($0) == 5000 + 4 { n++ } END { exit n != 2 }' "$TMP/o"
check "a partial last line is kept" test "$(grep -c '^\[[01]\] tail$' "$TMP/o")" -eq 2
finish
