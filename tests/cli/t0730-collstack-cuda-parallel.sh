#!/bin/bash
# collstack --cuda on 4 ranks of a host: the debuggers run at once (cuda-gdb
# 12 and later take no lock file; 13 refuses the option that turned it off,
# as the stand-in does), so all 4
# are listed within a -T that one at a time could not meet: each attach
# takes 4 s here (10 s on a PyTorch rank) and -T 48 leaves --cuda 12 s (16 one at a time). And a
# debugger that dies attached, leaving its target stopped, does not leave it
# stopped: collstack continues it. cuda-gdb is tests/stack/cuda_gdb_standin.sh.
. "$(dirname "$0")/lib.sh"
export COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh TMPDIR=$TMP
state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }

for r in 0 1 2 3; do
	RANK=$r WORLD_SIZE=4 python3 -c 'import time; print("ready", flush=True); time.sleep(600)' \
		>"$TMP/r$r.out" 2>&1 &
	echo $! >>"$TMP/pids"
	eval "p$r=$!"
done
for _ in $(seq 100); do
	[ "$(cat "$TMP"/r?.out 2>/dev/null | grep -c ready)" = 4 ] && break
	sleep 0.1
done
pids="$p0,$p1,$p2,$p3"

STANDIN_CUDA_SLEEP=4 "$BIN/collstack" --pid "$pids" --no-color --cuda --no-fr-dump -T 48 >"$TMP/o" 2>&1
check "--cuda -T 48 (12 s for cuda-gdb, 4 s an attach): all 4 ranks' kernels listed" \
	test "$(grep -c "^rank [0-3] ($(hostname), pid [0-9]*) GPU kernels: ncclDevKernel_AllReduce" "$TMP/o")" = 4
check "... none refused (an option cuda-gdb 13 does not know) or left unasked" sh -c "! grep -q 'GPU kernels not listed' '$TMP/o'"

# A debugger killed while attached leaves a SIGSTOP behind: the rank is continued.
STANDIN_CUDA=die "$BIN/collstack" --pid "$p1" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
for _ in $(seq 20); do [ "$(state "$p1")" != T ] && break; sleep 0.1; done
check "a rank a dying cuda-gdb left stopped runs again (state $(state "$p1"))" test "$(state "$p1")" != T
check "... and the debugger's end is said" grep -qF "rank 1 ($(hostname), pid $p1) GPU kernels not listed: cuda-gdb was killed (SIGKILL) before it said anything" "$TMP/o"

# ... and one whose stop is still pending when the debugger ends, landing
# later (here when the process unblocks SIGTSTP, after collstack is over):
# collstack's SIGCONT discarded it, so the process runs on past that point.
python3 -c 'import os, signal, sys, time
os.setpgid(0, 0)	# a group of its own, not orphaned: SIGTSTP stops it
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTSTP])
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
	time.sleep(0.05)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTSTP])
print("ran on", flush=True)
time.sleep(600)' "$TMP/go" >"$TMP/late.out" 2>&1 &
L=$!
echo $L >>"$TMP/pids"
for _ in $(seq 100); do grep -q ready "$TMP/late.out" && break; sleep 0.1; done
STANDIN_CUDA=pending "$BIN/collstack" --pid "$L" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
touch "$TMP/go"
for _ in $(seq 100); do grep -q "ran on" "$TMP/late.out" && break; sleep 0.05; done
check "a stop a dying cuda-gdb left pending does not land (state $(state "$L"))" grep -q "ran on" "$TMP/late.out"
kill -CONT "$L"

# A debugger that writes without end: cut at 1 MiB, said so at once, not at
# the deadline as a debugger that gave no answer.
STANDIN_CUDA=flood "$BIN/collstack" --pid "$p3" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "a debugger that wrote more than 1 MiB is said so" grep -qF "rank 3 ($(hostname), pid $p3) GPU kernels not listed: cuda-gdb wrote more than 1 MiB" "$TMP/o"

# 10 processes, 8 debuggers at a time, and the first 8 all end at once:
# the last 2 are asked too, in the time left.
for _ in $(seq 10); do sleep 600 & echo $! >>"$TMP/pids"; done
ten=$(tail -10 "$TMP/pids" | paste -sd,)
STANDIN_CUDA=gone "$BIN/collstack" --pid "$ten" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "10 processes, their debuggers all failing at once: all 10 asked" \
	test "$(grep -c "GPU kernels not listed: cuda-gdb listed no kernel table" "$TMP/o")" = 10

# A rank stopped before collstack came (Ctrl-Z) is left as it was.
kill -STOP "$p2"
for _ in $(seq 20); do [ "$(state "$p2")" = T ] && break; sleep 0.1; done
STANDIN_CUDA=die "$BIN/collstack" --pid "$p2" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "a rank stopped before stays stopped" test "$(state "$p2")" = T
kill -CONT "$p2"
finish
