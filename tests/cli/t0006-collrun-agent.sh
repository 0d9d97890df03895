#!/bin/bash
# collrun --agent on its own, as the SSH launcher drives it: everything the
# program writes comes back wrapped in records (so no forged control line),
# a signal record right after start reaches the program, the end of stdin
# stops it (SIGTERM, then SIGKILL), slow readers lose nothing, and the agent
# ends the way the program did.
. "$(dirname "$0")/lib.sh"
AGENT="$BIN/collrun --agent --uid-stdin"

# agent_run INPUT PROGRAM...: the agent's records in $TMP/rec, its exit in $rc.
# INPUT goes to its stdin, which then stays open (as an SSH channel does).
agent_run() {
	local input=$1; shift
	$AGENT -- "$@" >"$TMP/rec" 2>"$TMP/agent-err" < <(hold "$input")
	rc=$?
}
# Write INPUT, then hold the pipe open (the cleanup trap ends the sleep).
hold() { echo $BASHPID >>"$TMP/pids"; printf '%b' "$1"; exec sleep 60; }
# What the program wrote to stream o (stdout) or e (stderr), pieces joined.
payload() { awk -v t="$1" '$0 ~ "^[" t toupper(t) "] " { printf "%s%s", substr($0, 3), ($1 == t ? "\n" : "") }' "$TMP/rec"; }

agent_run 'coll1:x\n' sh -c 'printf "p 1\nx 0\n"; printf "coll-agent: pgid 1\ncoll-agent: exit 0\n" >&2; printf partial; exit 3'
expect_code 3 "$rc" "the agent exits as the program did"
check "its first record is the program's pid, never 1" awk 'NR == 1 { exit !($1 == "p" && $2 > 1) }' "$TMP/rec"
check "forged records come back as output records" test "$(payload o)" = "$(printf 'p 1\nx 0\npartial')"
check "forged agent tags come back as stderr records" grep -qx 'e coll-agent: exit 0' "$TMP/rec"
check "the one end record is the real one" test "$(grep -c '^[xs] ' "$TMP/rec")-$(tail -1 "$TMP/rec")" = "1-x 3"

agent_run 'u\n' sh -c 'head -c 2500 /dev/zero | tr "\0" z; echo'
check "a 2500-byte line goes as pieces of at most 1000 bytes" awk '/^[oO] / { n++; if (length($0) > 1002) bad = 1 } END { exit bad || n < 3 }' "$TMP/rec"
check "... that join into the line" test "$(payload o | awk '{ print length($0) }')" = 2500

# A signal record read right after the start must find the program's group.
lost=0
for _ in $(seq 20); do
	agent_run 'u\nk 15\n' sleep 5
	[ "$(tail -1 "$TMP/rec")" = "s 15" ] || lost=$((lost + 1))
done
check "a signal record sent at once reaches the program (20 of 20)" test "$lost" -eq 0
expect_code 143 "$rc" "the agent re-raises the program's signal"

# The end of stdin stops the rank: SIGTERM, then SIGKILL for one that ignores it.
start=$(date +%s%N)
$AGENT -- sh -c 'trap "" TERM; echo up; sleep 20' >"$TMP/rec" 2>"$TMP/agent-err" < <(printf 'u\n'; sleep 0.5)
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
expect_code 137 "$rc" "stdin's end: a program ignoring SIGTERM is killed"
check "after the grace (2 s), well before its own end (20 s): ${ms} ms" test "$ms" -ge 1900 -a "$ms" -lt 10000
check "its last record says SIGKILL" test "$(tail -1 "$TMP/rec")" = "s 9"

# slow_read FILE [DELAY [PIPE_BYTES MARK]]: 4 KiB per DELAY (default 0.1 s:
# 40 KB/s), as a launcher busy with many ranks may read; PIPE_BYTES shrinks
# our pipe, then MARK is made so that the program may start writing. The
# kernel refuses (EBUSY) to shrink a pipe whose pages in use would not fit:
# the agent's own first records are read off first, then it shrinks.
slow_read() {
	python3 -c 'import errno, fcntl, sys, time
out = open(sys.argv[1], "wb")
while len(sys.argv) > 3:
	try:
		fcntl.fcntl(0, 1031, int(sys.argv[3]))	# F_SETPIPE_SZ
		open(sys.argv[4], "w").close()
		break
	except OSError as e:
		if e.errno != errno.EBUSY:
			raise
		out.write(sys.stdin.buffer.read1(4096))
while True:
	b = sys.stdin.buffer.read1(4096)
	if not b:
		break
	out.write(b)
	time.sleep(float(sys.argv[2]))' "$1" "${2:-0.1}" ${3:+"$3" "$4"}
}

# A stopped program's last words, written as it ends, still arrive, however slowly read.
$AGENT -- sh -c 'trap "echo got TERM; head -c 100000 /dev/zero | tr \"\\0\" y; echo; echo bye; exit 5" TERM
	while :; do sleep 0.1; done' 2>"$TMP/agent-err" < <(printf 'u\n'; sleep 0.5) | slow_read "$TMP/rec"
check "a program that ends its own way on SIGTERM" test "$(tail -1 "$TMP/rec")" = "x 5"
check "its last words after the stop arrive" test "$(payload o | awk '{ print length($0) }' | tr '\n' ' ')" = "8 100000 3 "

# A slow reader: output written before the program exited still all arrives.
$AGENT -- sh -c 'head -c 150000 /dev/zero | tr "\0" a; echo; echo END' 2>"$TMP/agent-err" \
	< <(hold 'u\n') |
	slow_read "$TMP/rec"
check "a slow reader gets every byte" test "$(payload o | head -1 | awk "{ print length(\$0) }")" = 150000
check "... and the last line" test "$(payload o | tail -1)" = END
check "... and the end" test "$(tail -1 "$TMP/rec")" = "x 0"

# Slower still (10 KB/s, a 4 KiB pipe): one send blocks longer than the idle
# wait. The program writes once the pipe is small, however late python starts.
$AGENT -- sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done
	head -c 80000 /dev/zero | tr "\0" c; echo; echo END' "$TMP/shrunk" 2>"$TMP/agent-err" \
	< <(hold 'u\n') | slow_read "$TMP/rec" 0.4 4096 "$TMP/shrunk"
check "a 10 KB/s reader gets every byte and the end" \
	test "$(payload o | awk '{ print length($0) }' | tr '\n' ' ')$(tail -1 "$TMP/rec")" = "80000 3 x 0"

# Something that left the program's group and writes on keeps the agent no longer than a moment.
start=$(date +%s%N)
agent_run 'u\n' sh -c 'setsid sh -c "while :; do echo tick; sleep 0.3; done" & sleep 0.2; exit 0'
ms=$((($(date +%s%N) - start) / 1000000))
expect_code 0 "$rc" "a program that leaves a writer behind"
check "the agent ends soon after the program (${ms} ms)" test "$ms" -lt 5000

$AGENT -- true </dev/null >"$TMP/rec" 2>"$TMP/agent-err"
expect_code 3 $? "no unique id on stdin"
check "says so in one line" test "$(grep -c 'no unique id on stdin' "$TMP/agent-err")" = 1
finish
