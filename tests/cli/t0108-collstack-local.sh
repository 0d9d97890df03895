#!/bin/bash
# collstack on this machine: a collrun job of coll's own all-reduce where one
# rank hangs in op 20 (COLL_FAULT) and then one where a rank is stopped with
# SIGSTOP; a program not built on coll (threads in a mutex, a condition
# variable, read, nanosleep, a busy loop) by --match, with and without debug
# information and stripped; a zombie; a process that ends mid-snapshot; the
# job left running when collstack is killed mid-snapshot; ptrace refused
# (another tracer, another user); output formats and bad input.
. "$(dirname "$0")/lib.sh"
T=$COLL_BUILD/tests
collstack() { "$BIN/collstack" "$@"; }
# Wait until FILE has N lines matching PATTERN (up to 20 s).
wait_lines() {
	for _ in $(seq 200); do
		[ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}
state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

# 1. A rank hangs in op 20: the others wait for it in allreduce seq 20.
COLL_FAULT=2@20:hang "$BIN/collrun" -n 4 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 \
	>"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
JOB=$!
for _ in $(seq 300); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 4 ] && break; sleep 0.1; done
sleep 2
collstack --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "hang: a culprit is named"
check "hang: rank 2, its host and seq 20, where it is" grep -q "^rank 2 ($(hostname), pid [0-9]*) is in allreduce seq 20 but waits on no peer: it is stuck outside communication, in fault_at_begin (fault_hooks.c:[0-9]*); 3 ranks wait on it" "$TMP/o"
check "hang: the tree parts at the hung rank" grep -q '\[2\] (1) coll_begin (coll.c:[0-9]*)' "$TMP/o"
check "hang: the others are in the all-reduce's poll" grep -q '\[0-1,3\] (3) coll_run (coll.c:[0-9]*)' "$TMP/o"
check "hang: the kernel frame of the hung rank" grep -q 'pause (__do_sys_pause)\|pause$' "$TMP/o"
check "hang: the service threads of all 4" grep -q 'comm_service (service.c:[0-9]*)' "$TMP/o"
check "hang: two equivalence classes" grep -q '^2 equivalence classes (ranks with the same stacks): \[0-1,3\] \[2\]$' "$TMP/o"
check "hang: nothing on stderr" test ! -s "$TMP/e"
collstack --json >"$TMP/j" 2>"$TMP/e"
expect_code 1 $? "hang: --json"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["id"] for c in d["culprits"]] == [2], d["culprits"]
assert d["labels"] == "rank" and d["exit"] == 1
seqs = {t["id"]: t["pages"][0]["seq_started"] for t in d["tasks"]}
assert seqs == {0: 20, 1: 20, 2: 20, 3: 20}, seqs
assert all(t["threads"] == 2 for t in d["tasks"])
assert d["tree"][0]["ranks"] == "0-3" and d["tree"][0]["count"] == 4
EOPY
check "hang: --json has the culprit, seqs and tree" test $? -eq 0
cat "$TMP/py"
collstack --dot >"$TMP/d" 2>&1
check "--dot: a Graphviz digraph with rank sets" sh -c "grep -q '^digraph collstack' '$TMP/d' && grep -q 'coll_begin.*\[2\] (1)' '$TMP/d'"
if command -v dot >/dev/null; then
	collstack --svg >"$TMP/s" 2>&1
	check "--svg: drawn by dot" grep -q '<svg' "$TMP/s"
fi
collstack --job "$(ls "$COLL_JOB_DIR" | head -1 | cut -c1-6)" --no-color >"$TMP/o2" 2>&1
expect_code 1 $? "--job with the start of the id"
kill $JOB; wait $JOB 2>/dev/null

# 2. A rank stopped with SIGSTOP mid-run: named, and left stopped.
"$BIN/collrun" -n 4 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
JOB=$!
for _ in $(seq 300); do
	[ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 4 ] && [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break
	sleep 0.1
done
sleep 0.5
P1=$(pid_of_rank 1)
kill -STOP "$P1"
sleep 1.5
collstack --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "SIGSTOP: a culprit is named"
check "SIGSTOP: rank 1 is stopped" grep -q "^rank 1 ($(hostname), pid $P1) is stopped" "$TMP/o"
check "SIGSTOP: rank 1 is still stopped after collstack" test "$(state_of "$P1")" = T
P0=$(pid_of_rank 0)
check "SIGSTOP: rank 0 is not left in a trace stop" sh -c "[ \"\$(awk '{print \$3}' /proc/$P0/stat)\" != t ]"
kill -CONT "$P1"
kill $JOB; wait $JOB 2>/dev/null

# 3. A program not built on coll, by --match: every thread in its place. The
# copies live in this test's directory, so that the pattern takes only them.
mkdir "$TMP/bin"
cp "$T/stack_target" "$T/stack_target_nodebug" "$T/stack_target_stripped" "$TMP/bin/"
for v in stack_target stack_target stack_target_nodebug stack_target_stripped; do
	"$TMP/bin/$v" >>"$TMP/targets" &
	echo $! >>"$TMP/pids"
done
wait_lines "$TMP/targets" ready 4
collstack --match "^$TMP/bin/stack_target\$" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--match: no status pages, no culprit"
check "--match: numbered tasks, said why" grep -q '^note: the processes do not all carry a distinct rank' "$TMP/o"
check "--match: no status pages said" grep -q '^no status pages' "$TMP/o"
check "--match: 2 tasks in the mutex, and the futex" sh -c "grep -q 'target_mutex_wait (stack_target.c:[0-9]*)' '$TMP/o' && grep -q 'futex (futex' '$TMP/o'"
check "--match: the condition variable" grep -q 'target_cond_wait (stack_target.c:[0-9]*)' "$TMP/o"
check "--match: read on a pipe, in read(2)" sh -c "grep -q 'target_pipe_read (stack_target.c:[0-9]*)' '$TMP/o' && grep -q 'read (.*pipe_read)\|^ *│* *read$' '$TMP/o'"
check "--match: nanosleep through an inlined frame" sh -c "grep -q 'target_nap (stack_target.c:[0-9]*) \[inlined\]' '$TMP/o' && grep -q 'target_sleep (stack_target.c:[0-9]*)' '$TMP/o'"
check "--match: the busy loop, with no system call under it" sh -c "grep -A1 'target_spin (stack_target.c:[0-9]*)$' '$TMP/o' | tail -1 | grep -qv 'kernel\|futex\|read\|sleep'"
check "--match: main in pause" grep -q 'main (stack_target.c:[0-9]*)' "$TMP/o"
check "--match: 6 threads per process" grep -q '^\[0-1\] (2) 12 threads$' "$TMP/o"
check "--match: the threads part under target_thread" grep -q 'target_thread (stack_target.c) 10 threads$' "$TMP/o"
collstack --match "^$TMP/bin/stack_target_(nodebug|stripped)\$" --no-color >"$TMP/o" 2>"$TMP/e"
check "no debug information: symbols, no lines" sh -c "grep -q 'target_mutex_wait (stack_target_nodebug)' '$TMP/o' && ! grep -q 'stack_target.c:' '$TMP/o'"
check "stripped: module+offset" grep -q 'stack_target_stripped+0x[0-9a-f]*$' "$TMP/o"
check "stripped: libc is still named" grep -q 'start_thread' "$TMP/o"

# The busy loops would slow all that follows: keep one target only.
B=$(grep -m1 ready "$TMP/targets" | awk '{print $2}')
for p in $(awk '{print $2}' "$TMP/targets"); do [ "$p" = "$B" ] || kill "$p"; done

# 4. A zombie, by --pid: its parent never reaps it. The parent says the
# child's pid itself (pgrep -P found no child at times under ctest).
python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(30)' >"$TMP/zombie" &
echo $! >>"$TMP/pids"
Z=""
for _ in $(seq 100); do Z=$(cat "$TMP/zombie"); [ -n "$Z" ] && [ "$(state_of "$Z")" = Z ] && break; sleep 0.1; done
collstack --pid "$Z" --no-color >"$TMP/o" 2>&1
expect_code 1 $? "zombie: named"
check "zombie: said so" grep -q "^task 0 ($(hostname), pid $Z) is a zombie" "$TMP/o"
# Alone, a pid that is not there is no such process (exit 3, nobody blamed);
# beside one that runs, it is a task named gone.
collstack --pid 4000000 --no-color >"$TMP/o" 2>&1
expect_code 3 $? "a pid that is not there: no such process"
check "a pid that is not there: said so" grep -q "^collstack: no such process: --pid 4000000" "$TMP/o"
collstack --pid "$Z,4000000" --no-color >"$TMP/o" 2>&1
expect_code 1 $? "a pid that is not there, beside a zombie: named"
check "a pid that is not there: gone" grep -q "pid 4000000) is gone" "$TMP/o"

# 5. A process that ends mid-snapshot: the others are still read. With one
# snapshot thread the lower pid is read first, and held stopped for 1 s while
# it is killed.
: >"$TMP/t1"
for _ in 1 2; do
	"$TMP/bin/stack_target" >>"$TMP/t1" &
	echo $! >>"$TMP/pids"
done
wait_lines "$TMP/t1" ready 2
V=$(awk '{print $2}' "$TMP/t1" | sort -n | head -1)
O=$(awk '{print $2}' "$TMP/t1" | sort -n | tail -1)
# Killed once it is held: traced, mid-snapshot.
(for _ in $(seq 400); do
	grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/$V/status 2>/dev/null && break
	sleep 0.01
done; kill -9 "$V") &
COLL_TEST_STACK_HOLD_MS=1000 collstack --pid "$V,$O" --threads 1 --no-color >"$TMP/o" 2>&1
code=$?
check "ended mid-snapshot: no crash (exit $code)" test $code -le 3
check "ended mid-snapshot: the one that ended is named" grep -q "pid $V) is \(gone\|a zombie\)" "$TMP/o"
check "ended mid-snapshot: ... as ended while read" grep -q "pid $V ended while its stacks were read" "$TMP/o"
check "ended mid-snapshot: the other is read" grep -q 'target_pipe_read' "$TMP/o"
kill "$O"

# 6. collstack killed mid-snapshot: the job runs on.
COLL_TEST_STACK_HOLD_MS=5000 collstack --pid "$B" >/dev/null 2>&1 &
CS=$!
for _ in $(seq 100); do grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/$B/status && break; sleep 0.05; done
check "killed mid-snapshot: the target was being traced" grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/$B/status
pkill -9 -f "collstack --worker --pid $B\$"; kill -9 $CS 2>/dev/null; wait $CS 2>/dev/null
sleep 0.3
check "killed mid-snapshot: no tracer left" grep -q '^TracerPid:[[:space:]]*0$' /proc/$B/status
check "killed mid-snapshot: no thread left stopped" sh -c "! grep -q '^State:[[:space:]]*t' /proc/$B/task/*/status"
SPIN=$(dirname "$(grep -l '^t-spin$' /proc/$B/task/*/comm | head -1)")
S1=$(awk '{print $14}' "$SPIN/stat")
sleep 0.5
S2=$(awk '{print $14}' "$SPIN/stat")
check "killed mid-snapshot: the busy thread still runs ($S1 -> $S2 ticks)" test "$S2" -gt "$S1"

# ... and a worker whose front end was gone before it looked (orphaned,
# adopted by another) ends at once.
true & dead=$!
wait $dead
COLL_STACK_FRONT_PID=$dead COLL_UNIQUE_ID=x collstack --worker --pid "$B" >"$TMP/o" 2>&1
expect_code 137 $? "a worker whose front end is gone: killed at once"

# 7. ptrace refused: another tracer attached, another user.
if command -v gdb >/dev/null; then
	gdb -p "$B" -batch -ex 'shell sleep 4' >/dev/null 2>&1 &
	GDB=$!
	echo $GDB >>"$TMP/pids"
	for _ in $(seq 100); do grep -q '^TracerPid:[[:space:]]*[1-9]' /proc/$B/status && break; sleep 0.05; done
	collstack --pid "$B" --no-color >"$TMP/o" 2>&1
	expect_code 1 $? "another tracer: the stopped process is named"
	check "another tracer: named, with the fix" grep -q "pid $B is already traced by pid [0-9]*: detach that debugger" "$TMP/o"
	wait $GDB
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups env COLL_JOB_DIR=/nonexistent \
		"$BIN/collstack" --pid "$B" --no-color >"$TMP/o" 2>&1
	expect_code 3 $? "another user's process: could not read"
	check "another user's process: named, with the fix" grep -q "^ignored: .*pid $B belongs to user root, not nobody: run collstack as that user or as root" "$TMP/o"
fi

# 8. Bad input.
collstack --pid abc >"$TMP/o" 2>&1
expect_code 2 $? "--pid abc"
check "--pid abc: said" grep -q "'abc' is not a process id" "$TMP/o"
collstack --match '(' >"$TMP/o" 2>&1
expect_code 2 $? "--match with a bad regex"
collstack --job zz >"$TMP/o" 2>&1
expect_code 2 $? "--job zz"
collstack --pid 1 --match x >"$TMP/o" 2>&1
expect_code 2 $? "two selections"
rm -f "$COLL_JOB_DIR"/*.json
collstack >"$TMP/o" 2>&1
expect_code 3 $? "no job running"
check "no job running: said, with what to do" grep -q 'no collrun job is running as this user.*--pid, --match or --slurm' "$TMP/o"
collstack --slurm x1 >"$TMP/o" 2>&1
expect_code 2 $? "--slurm x1"
collstack -N 2 >"$TMP/o" 2>&1
expect_code 2 $? "-N 2: one worker per host"

# 9. A rank that finished the op the others wait in (a broadcast's root) and
# computes is not behind; the one at the op before is.
rm -f "$COLL_STATUS_DIR"/coll.*
"$BIN/collrun" -n 4 "$COLL_BUILD/tests/stack_pager" 7 2 3 >"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
JOB=$!
for _ in $(seq 100); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 4 ] && break; sleep 0.1; done
sleep 1.2
collstack --no-color >"$TMP/o" 2>&1
expect_code 1 $? "ahead and behind: a culprit"
check "ahead and behind: rank 2, at seq 6, is behind" grep -q '^rank 2 (.*) is at seq 6 outside any collective, in train_step' "$TMP/o"
check "ahead and behind: rank 3, done with seq 7, is not named" test "$(grep -c '^rank ' "$TMP/o")" -eq 1
kill $JOB
wait $JOB 2>/dev/null
finish
