#!/bin/bash
# colltop on jobs coll did not launch (issue 35, item 8): ranks that write
# their status pages only through coll's NCCL profiler plugin, so every page
# name carries job id 0, started by two torchrun-like launchers and one
# srun-like one (tests/stack/nccl_launcher_standin.py, through links named
# torchrun and srun).
#   A: torchrun, TORCHELASTIC_RUN_ID=jobA, world ranks 2 and 3 of 4 in a
#      two-rank group: the kernel of world rank 3 for op 6 never begins.
#   B: torchrun with torch's default run id "none": every kernel of op 6
#      began and none ends.
#   C: srun, SLURM_JOB_ID 4242 step 0, ranks 0 and 1: advancing.
# colltop --json and --batch must show three jobs by their keys and
# launchers, world ranks, A stalled with rank 3 named by the GPU rule, B hung
# inside the kernel with no rank named, C advancing; and the collstack
# command c would run on each (--pid of A's ranks; --slurm for C).
. "$(dirname "$0")/lib.sh"
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
preload=()
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) preload=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0) ;;
esac
mkdir -p "$TMP/bin"
for l in torchrun srun; do ln -s "$COLL_SRC/tests/stack/nccl_launcher_standin.py" "$TMP/bin/$l"; done

# job NAME LAUNCHER RANKS ENV...: start a launcher, wait until each of its ranks is ready.
job() {
	local name=$1 l=$2 ranks=$3 n
	shift 3
	n=$(echo "$ranks" | tr , '\n' | wc -l)
	env "${preload[@]}" STANDIN_RANKS="$ranks" STANDIN_WORLD=4 "$@" \
	    python3 "$TMP/bin/$l" >"$TMP/$name.out" 2>&1 &
	echo $! >>"$TMP/pids"
	eval "L$name=$!"
	for _ in $(seq 100); do
		[ "$(grep -c '^ready' "$TMP/$name.out")" -ge "$n" ] && break
		sleep 0.1
	done
	sed -n 's/^pid //p' "$TMP/$name.out" >>"$TMP/pids"
	eval "P$name=$(sed -n 's/^pid //p' "$TMP/$name.out" | paste -sd,)"
}
job A torchrun 2,3 TORCHELASTIC_RUN_ID=jobA STANDIN_MODE=late:3 STANDIN_HASH=0xa0000000000000a
job B torchrun 0,1 TORCHELASTIC_RUN_ID=none STANDIN_MODE=kernel STANDIN_HASH=0xb0000000000000b
job C srun 0,1 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 STANDIN_MODE=advance STANDIN_HASH=0xc0000000000000c
check "every rank is ready" test "$(cat "$TMP"/[ABC].out | grep -c '^ready')" = 6
check "six plugin pages, all of job id 0" test "$(ls "$COLL_STATUS_DIR" | grep -c '^coll\.0000000000000000\.')" = 6

"$BIN/colltop" --json -n 5 -d 4 --stall 1 --np 1 --no-gpu >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "colltop --json"
python3 - "$TMP/j" "$LA" "$PA" "$LB" "$PB" "$(hostname)" "$(id -un)" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
j, la, pa, lb, pb, host, me = sys.argv[1:]
fr = [json.loads(l) for l in open(j).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
jobs = {x["job"]: x for x in fr[-1]["jobs"]}
keys = {"run:jobA", "torchrun:" + lb, "slurm:4242.0"}
say(set(jobs) == keys, "three jobs by their launchers' keys: %s" % sorted(jobs))
a, b, c = (jobs.get(k, {}) for k in ("run:jobA", "torchrun:" + lb, "slurm:4242.0"))
say(a.get("launcher") == "torchrun:" + la and b.get("launcher") == "torchrun:" + lb
    and c.get("launcher", "").startswith("srun:"), "their launchers: %s" % [x.get("launcher") for x in (a, b, c)])
say(sorted((r["rank"], r["comm_rank"]) for r in a.get("ranks", [])) == [(2, 0), (3, 1)],
    "A's world ranks 2, 3 (communicator ranks 0, 1): %s" % a.get("ranks"))
say(a.get("stalled") and a.get("state") == "stalled" and a.get("behind") == 3 and a.get("how") == "gpu not started",
    "A: stalled, world rank 3 behind, its GPU has not started: %s" % {k: a.get(k) for k in ("state", "behind", "how")})
say(b.get("state") == "hung in kernel" and b.get("behind") == -1,
    "B: hung inside the kernel, no rank named: %s" % {k: b.get(k) for k in ("state", "behind", "how")})
say(c.get("state") == "advancing" and not c.get("stalled"), "C: advancing: %s" % c.get("state"))
say(a.get("collstack", {}).get("argv") == ["collstack", "--pid", pa, "--user", me] and a["collstack"]["note"] == "",
    "A: c runs collstack --pid on its ranks: %s" % a.get("collstack"))
say(b.get("collstack", {}).get("argv") == ["collstack", "--pid", pb, "--user", me], "B: the same: %s" % b.get("collstack"))
say(c.get("collstack", {}).get("argv") == ["collstack", "--slurm", "4242", "--user", me],
    "C: c runs collstack --slurm: %s" % c.get("collstack"))
say(all(not x["stalled"] for x in fr[0]["jobs"]), "none called stalled before --stall had passed")
EOF
check "three jobs told apart by their launchers, each judged" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"

"$BIN/colltop" -n 5 -d 4 --stall 1 --np 1 --no-gpu >"$TMP/t" 2>"$TMP/e"
expect_code 0 $? "colltop --batch"
tail -n +"$(grep -n '^colltop:' "$TMP/t" | tail -1 | cut -d: -f1)" "$TMP/t" >"$TMP/last"
check "text: A's line names world rank 3 and its GPU" grep -qE "^!! job run:jobA via torchrun:$LA \($(id -un)\) comm 0a000000: stalled [0-9]+ s; rank 3 \($(hostname), pid [0-9]+\) enqueued allreduce seq 6 but its GPU has not started it; the others' kernels began" "$TMP/last"
check "text: B hung inside the kernel" grep -qE "^!! job torchrun:$LB \($(id -un)\) comm 0b000000: hung inside allreduce seq 6 on every rank seen \(2 of 2\) for [0-9]+ s: no rank is late" "$TMP/last"
check "text: C advancing" grep -qE "^job slurm:4242\.0 via srun:[0-9]+ \($(id -un)\) comm 0c000000: 2 of 2 ranks here, at seq [0-9]+, advancing" "$TMP/last"
check "text: what c would run" grep -qxE "c: collstack --pid ($PA|$PB) --user $(id -un)" "$TMP/last"
check "nothing on stderr" test ! -s "$TMP/e"
finish
