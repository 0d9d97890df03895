#!/bin/bash
# collstack on a job torchrun started (issue 35): a torchrun-shaped launcher
# (tests/stack/torchrun: the `torchrun` script, and `python3 -m
# torch.distributed.run` off a PYTHONPATH, each spawning 4 workers with
# torchrun's variables and polling them as the elastic agent does) whose
# rank 2 sits in save_checkpoint() in Python while ranks 0,1,3 wait in
# synchronize() after enqueueing all-reduce 6 through coll's NCCL profiler
# plugin. By --match, by --pid of the launcher and by --json: ranks 0-3
# (the launcher, carrying no rank, used to be a fifth task and cost every
# rank its number), the launcher shown once and never blamed, rank 2 named
# by the plugin's pages and the stacks.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0 ;;
esac
# The stand-ins live in this test's directory, so that patterns take only them.
cp -r "$COLL_SRC/tests/stack/torchrun" "$TMP/tr"
H=$(hostname)

# launch NAME CMD...: start a launcher; its pid in $L once its 4 workers are ready.
launch() {
	local name=$1
	shift
	rm -f "$TMP/out"
	"$@" --nproc-per-node 4 "$TMP/tr/rank.py" >"$TMP/out" 2>&1 &
	L=$!
	echo $L >>"$TMP/pids"
	for _ in $(seq 300); do [ "$(grep -c '^ready' "$TMP/out")" -ge 4 ] && break; sleep 0.1; done
	for r in 0 1 2 3; do eval "p$r=$(awk -v r=$r '$1 == "ready" && $2 == r {print $3}' "$TMP/out")"; done
	echo "$p0 $p1 $p2 $p3" | tr ' ' '\n' >>"$TMP/pids"
	# From "ready" to the sleeps: a few instructions; wait until each sleeps.
	for _ in $(seq 100); do
		all=1
		for p in $p0 $p1 $p2 $p3; do [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = S ] || all=0; done
		[ $all = 1 ] && break
		sleep 0.05
	done
	check "$name: 4 workers ready" test -n "$p3"
	settled --pid "$L"
}
unlaunch() { kill -9 "$L" $p0 $p1 $p2 $p3 2>/dev/null; wait "$L" 2>/dev/null; rm -f "$COLL_STATUS_DIR"/*; }

# what NAME FILE: the text says ranks 0-3, the launcher once, rank 2 named.
what() {
	check "$1: 4 ranks, not 5 tasks" grep -q '^collstack: 4 ranks on 1 host' "$2"
	check "$1: the launcher, once" test "$(grep -c "^launcher: torchrun (pid $L, host $H)\$" "$2")" = 1
	check "$1: ranks carry their numbers" sh -c "! grep -q 'do not all carry a distinct rank' '$2'"
	check "$1: rank 2 named by the plugin and the stacks" grep -qE "^=> rank 2 \($H, pid $p2\) holds the others up, behind in allreduce seq 6 .*: named by 2 sources \(NCCL profiler plugin, stacks\)\$" "$2"
	check "$1: ... in save_checkpoint" grep -q "^   its main thread, innermost first: .*save_checkpoint (rank.py:" "$2"
	check "$1: the launcher is never blamed" sh -c "! grep -q 'pid $L' '$2' || ! grep 'pid $L' '$2' | grep -vq '^launcher:'"
	check "$1: the tree holds ranks 0-3" grep -q '^\[0-3\] (4) ' "$2"
}

# 1. The torchrun script.
launch script "$TMP/tr/torchrun"
collstack --match "$TMP/tr/" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--match: a culprit"
what "--match" "$TMP/o"
collstack --pid "$L" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--pid of the launcher: its job"
what "--pid launcher" "$TMP/o"
collstack --pid "$L" --json >"$TMP/j" 2>"$TMP/e"
check "--json: the launcher member, ranks 0-3, rank 2 the culprit" python3 - "$TMP/j" "$L" "$H" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["launcher"] == {"name": "torchrun", "pid": int(sys.argv[2]), "host": sys.argv[3]}, d.get("launcher")
assert d["labels"] == "rank" and [t["id"] for t in d["tasks"]] == [0, 1, 2, 3], d["tasks"]
assert [t["rank"] for t in d["tasks"]] == [0, 1, 2, 3]
assert all(t["pid"] != int(sys.argv[2]) for t in d["tasks"])
assert [c["id"] for c in d["culprits"]] == [2], d["culprits"]
PY
unlaunch

# 2. python3 -m torch.distributed.run, the module off PYTHONPATH.
launch "-m" env PYTHONPATH="$TMP/tr" python3 -m torch.distributed.run
collstack --match "$TMP/tr/|torch.distributed.run" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "-m, --match: a culprit"
what "-m --match" "$TMP/o"
collstack --pid "$L" --no-color >"$TMP/o" 2>"$TMP/e"
what "-m --pid launcher" "$TMP/o"
unlaunch
finish
