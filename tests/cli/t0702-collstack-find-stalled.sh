#!/bin/bash
# collstack with nothing named finds the stalled job here (issue 35), jobs
# coll did not launch included: torchrun-shaped launchers (tests/stack/
# torchrun) whose ranks drive coll's NCCL profiler plugin. With job A stalled
# (rank 2 in save_checkpoint) and job B advancing, collstack takes A, says
# which job and how it was found, and reads ranks 0-3 with the launcher once
# and rank 2 named (it used to look only for collrun's job records: "no
# collrun job is running"). With a second stalled job C, both are listed with
# the flag that picks each, exit 2, and the flag picks C. The test runs in a
# PID namespace of its own, so that other jobs of this user (tests running
# beside it) are not among the candidates.
if [ -z "${COLL_T0702_NS:-}" ]; then
	unshare --pid --fork --mount-proc true 2>/dev/null ||
		{ echo "skip: a PID namespace (unshare --pid) needs root"; exit 77; }
	COLL_T0702_NS=1 exec unshare --pid --fork --mount-proc bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0 ;;
esac
cp -r "$COLL_SRC/tests/stack/torchrun" "$TMP/tr"
H=$(hostname)

# launch NAME N [ENV...]: a torchrun of N workers; its pid in $NAME once they are ready.
launch() {
	local name=$1 n=$2
	shift 2
	env TORCHRUN_STANDIN_RUN_ID="run-$name" "$@" "$TMP/tr/torchrun" --nproc-per-node "$n" \
	    "$TMP/tr/rank.py" >"$TMP/$name.out" 2>&1 &
	eval "$name=$!"
	echo $! >>"$TMP/pids"
	for _ in $(seq 300); do [ "$(grep -c '^ready' "$TMP/$name.out")" -ge "$n" ] && break; sleep 0.1; done
	check "job $name: $n workers ready" test "$(grep -c '^ready' "$TMP/$name.out")" -ge "$n"
}
late_pid() { awk -v r="$2" '$1 == "ready" && $2 == r {print $3}' "$TMP/$1.out"; }

# until CODE ARGS...: run collstack ARGS until it exits CODE (a job's pages go idle
# STALL seconds after its last collective); its output in $TMP/o and $TMP/e.
until_code() {
	local want=$1 code
	shift
	for _ in $(seq 60); do
		collstack "$@" >"$TMP/o" 2>"$TMP/e"
		code=$?
		[ $code = "$want" ] && break
		sleep 0.2
	done
	expect_code "$want" $code "collstack $*"
}

# 1. One job stalled, one advancing: the stalled one is taken and named.
launch A 4
launch B 2 STANDIN_ADVANCE=1
until_code 1 --no-color
check "A taken, named with its id and how it was found" grep -q "^job: torchrun job run-A (launcher pid $A), found by its launcher's process tree (4 ranks here, no collective progress for [0-9]* s; pick it again with --pid $A)\$" "$TMP/o"
check "A: 4 ranks" grep -q '^collstack: 4 ranks on 1 host' "$TMP/o"
check "A: the launcher once" test "$(grep -c "^launcher: torchrun (pid $A, host $H)\$" "$TMP/o")" = 1
check "A: rank 2 named" grep -qE "^=> rank 2 \($H, pid $(late_pid A 2)\) holds the others up, behind in allreduce seq 6 .*\(NCCL profiler plugin, stacks\)\$" "$TMP/o"
check "B, which advances, is not read" sh -c "! grep -q 'run-B' '$TMP/o'"
collstack --json >"$TMP/j" 2>/dev/null
check "--json: found and launcher" python3 - "$TMP/j" "$A" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["found"].startswith("torchrun job run-A (launcher pid %s)" % sys.argv[2]), d.get("found")
assert d["launcher"]["pid"] == int(sys.argv[2]) and [t["id"] for t in d["tasks"]] == [0, 1, 2, 3]
PY

# 2. Two stalled jobs: both listed with the flag that picks each, none chosen.
launch C 4 STANDIN_LATE=1
until_code 2 --no-color
check "two stalled: said" grep -q '^collstack: 2 jobs here do not advance; pick one:$' "$TMP/e"
check "... A with its flag" grep -qE "^  collstack --pid $A +torchrun job run-A \(launcher pid $A\) \(found by its launcher's process tree\): 4 ranks here, no collective progress for [0-9]+ s\$" "$TMP/e"
check "... C with its flag" grep -qE "^  collstack --pid $C +torchrun job run-C " "$TMP/e"
check "... B, advancing, is not" sh -c "! grep -q 'run-B' '$TMP/e'"
check "... and nothing was read" test ! -s "$TMP/o"
collstack --pid "$C" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "the listed flag picks C"
check "C: rank 1 named" grep -qE "^=> rank 1 \($H, pid $(late_pid C 1)\) holds the others up" "$TMP/o"

# 3. Ranks with no launcher known above them (a job script's shell starts
# them): found by their pages, and the shell stands for its job: its ranks
# are read, not the shell (it was read alone, 'no status pages', exit 0).
# (pgrep without the sanitizers' runtimes, which this test preloads.)
ranks_left() { env -u LD_PRELOAD pgrep -f "$TMP/tr/rank.py"; }
kill -9 "$A" "$B" "$C" $(ranks_left) 2>/dev/null
for _ in $(seq 100); do ranks_left >/dev/null || break; sleep 0.1; done
rm -f "$COLL_STATUS_DIR"/*
bash -c 'for r in 0 1 2 3; do RANK=$r WORLD_SIZE=4 python3 "$1" >"$2.$r" 2>&1 & done; wait' \
    sh "$TMP/tr/rank.py" "$TMP/S.out" &
S=$!
echo $S >>"$TMP/pids"
for _ in $(seq 300); do [ "$(cat "$TMP"/S.out.* 2>/dev/null | grep -c '^ready')" -ge 4 ] && break; sleep 0.1; done
until_code 1 --no-color
check "a shell's ranks: found by their pages" grep -q "^job: the ranks under pid [0-9]*, found by their status pages" "$TMP/o"
check "... its 4 ranks read, not the shell" grep -q '^collstack: 4 ranks on 1 host' "$TMP/o"
check "... rank 2 named" grep -qE "^=> rank 2 \(" "$TMP/o"
finish
