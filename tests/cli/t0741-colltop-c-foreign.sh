#!/bin/bash
# colltop's c key on a job coll did not launch (issue 35, item 8), on the
# screen (tmux, as t0119): a torchrun-like launcher's two ranks that write
# pages only through coll's NCCL profiler plugin (job id 0), one whose GPU
# never starts the sixth all-reduce. c must run collstack on the ranks'
# pids (not --job 0000000000000000, which finds nothing), and collstack
# must find both.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "skipped: no tmux"; exit 77; }
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
preload=()
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) preload=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0) ;;
esac
SOCK=colltop-c-$$
tm() { tmux -L "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; cleanup' EXIT
screen() { tm capture-pane -p -J -t top -S -200; }
wait_screen() { # wait_screen REGEX [SECONDS]
	for _ in $(seq $((${2:-10} * 10))); do screen | grep -qE -- "$1" && return 0; sleep 0.1; done
	screen >"$TMP/last"
	return 1
}

mkdir -p "$TMP/bin"
ln -s "$COLL_SRC/tests/stack/nccl_launcher_standin.py" "$TMP/bin/torchrun"
env "${preload[@]}" STANDIN_RANKS=0,1 TORCHELASTIC_RUN_ID=jobc STANDIN_MODE=late:1 \
    python3 "$TMP/bin/torchrun" >"$TMP/l.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c '^ready' "$TMP/l.out")" -ge 2 ] && break; sleep 0.1; done
sed -n 's/^pid //p' "$TMP/l.out" >>"$TMP/pids"
P0=$(sed -n 's/^pid //p' "$TMP/l.out" | head -1)
P1=$(sed -n 's/^pid //p' "$TMP/l.out" | tail -1)
PIDS=$(printf '%s\n' "$P0" "$P1" | sort -n | paste -sd,)

tm new-session -d -s top -x 200 -y 50 "env TERM=xterm-256color LANG=C.UTF-8 \
	$BIN/colltop --np 1 --no-gpu --stall 1 -d 5 2>$TMP/err; echo \$? >$TMP/rc; sleep 60"
check "the job is stalled, world rank 1 named from its GPU" \
	wait_screen "job run:jobc via torchrun:[0-9]+ \($(id -un)\) comm [0-9a-f]+: stalled [0-9]+ s; rank 1 .*pid $P1\) enqueued allreduce seq 6 but its GPU has not started it" 20
tm send-keys -t top c
check "c runs collstack on the ranks' pids" wait_screen "^colltop: collstack --pid $PIDS --user $(id -un)$"
check "collstack finds both ranks" wait_screen "^collstack: 2 ranks on 1 host" 20
check "collstack ends, and colltop waits for a key" wait_screen '^colltop: collstack exited with [0-9]+; press a key to go back' 20
tm send-keys -t top x
tm send-keys -t top q
for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
check "q ends colltop" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
finish
