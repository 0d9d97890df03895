#!/bin/bash
# collstack on a real Open MPI job (issue 35): Debian's mpirun (Open MPI's
# orterun) starts 4 ranks of tests/stack/torchrun/rank.py on loopback and
# shared memory; each takes its rank from OMPI_COMM_WORLD_RANK, drives coll's
# NCCL profiler plugin, and rank 2 sits in save_checkpoint() while 0, 1 and 3
# wait in allreduce seq 6. By --match (which takes mpirun too: its command
# line names the program) and by --pid of mpirun: mpirun is the launcher,
# shown once and not a task (it used to be a fifth task, every rank numbered
# by pid); the tasks are ranks 0-3 by OMPI_COMM_WORLD_RANK; rank 2 is named.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
command -v mpirun >/dev/null || { echo "skip: no mpirun (Debian's openmpi-bin)"; exit 77; }
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
	OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_plm=isolated \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
cp "$COLL_SRC/tests/stack/torchrun/rank.py" "$TMP/rank.py"
H=$(hostname)

mpirun -np 4 --oversubscribe python3 "$TMP/rank.py" >"$TMP/out" 2>&1 &
L=$!
echo $L >>"$TMP/pids"
for _ in $(seq 300); do [ "$(grep -c '^ready' "$TMP/out")" -ge 4 ] && break; sleep 0.1; done
for r in 0 1 2 3; do eval "p$r=$(awk -v r=$r '$1 == "ready" && $2 == r {print $3}' "$TMP/out")"; done
echo "$p0 $p1 $p2 $p3" | tr ' ' '\n' >>"$TMP/pids"
check "mpirun started 4 ranks" test -n "$p3" || { cat "$TMP/out"; finish; exit 1; }
for _ in $(seq 100); do
	all=1
	for p in $p0 $p1 $p2 $p3; do [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = S ] || all=0; done
	[ $all = 1 ] && break
	sleep 0.05
done
settled --pid "$L"

for how in match pid; do
	if [ $how = match ]; then collstack --match "$TMP/rank.py" --no-color >"$TMP/o" 2>"$TMP/e"
	else collstack --pid "$L" --no-color >"$TMP/o" 2>"$TMP/e"; fi
	expect_code 1 $? "--$how: a culprit"
	check "--$how: 4 ranks, mpirun is no task" grep -q '^collstack: 4 ranks on 1 host' "$TMP/o"
	check "--$how: mpirun shown as the launcher, once" test "$(grep -c "^launcher: mpirun (pid $L, host $H)\$" "$TMP/o")" = 1
	check "--$how: rank 2 named" grep -qE "^=> rank 2 \($H, pid $p2\) holds the others up, behind in allreduce seq 6 .*\(NCCL profiler plugin, stacks\)\$" "$TMP/o"
	check "--$how: the tree holds ranks 0-3" grep -q '^\[0-3\] (4) ' "$TMP/o"
done
collstack --pid "$L" --json >"$TMP/j" 2>"$TMP/e"
check "--json: ranks 0-3 by OMPI_COMM_WORLD_RANK, pids as mpirun gave them" python3 - "$TMP/j" "$L" "$p0,$p1,$p2,$p3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["launcher"]["name"] == "mpirun" and d["launcher"]["pid"] == int(sys.argv[2]), d.get("launcher")
assert [(t["id"], t["pid"]) for t in d["tasks"]] == list(enumerate(map(int, sys.argv[3].split(",")))), d["tasks"]
PY
kill $L 2>/dev/null; wait $L 2>/dev/null
finish
