# shellcheck shell=bash
# Shared by the tests of a job's own straggler and retries in colltop
# (t0900-t0902): tests/cli/lib.sh, then a 4-rank libcoll job of
# tests/top/slow_rank.c in the background, and colltop run until a verdict.
. "$(dirname "$0")/lib.sh"
SLOWRANK=$COLL_BUILD/tests/slow_rank
[ -x "$SLOWRANK" ] || { echo "not ok - no test program at $SLOWRANK"; exit 1; }
# start_job ENV...: the job (many ops, 10 ms apart) with ENV, until its 4 pages are there.
start_job() {
	env "$@" "$BIN/collrun" -n 4 "$SLOWRANK" 1000000 10 >"$TMP/job.out" 2>&1 &
	echo $! >>"$TMP/pids"
	for _ in $(seq 300); do
		[ "$(ls "$COLL_STATUS_DIR" | grep -c '^coll\.')" -ge 4 ] && return 0
		sleep 0.1
	done
	echo "not ok - the job's 4 status pages never came"; cat "$TMP/job.out"
	exit 1
}
# top_json OUT: colltop --json beside the job, its own probe of 2, 10 intervals
# of 0.3 s, and the options in TOPARGS.
TOPARGS=()
top_json() {
	"$BIN/colltop" --json -n 10 -d 3 --np 2 --no-gpu "${TOPARGS[@]}" >"$1" 2>"$TMP/e"
}
top_text() {
	"$BIN/colltop" -b -n 10 -d 3 --np 2 --no-gpu "${TOPARGS[@]}" >"$1" 2>"$TMP/e"
}
# until_json PYCOND: colltop --json again (5 times at most) until the last frame's
# job (jobs[0], as j) meets PYCOND; every run's frames are kept in $TMP/all.
until_json() {
	local i
	for i in 1 2 3 4 5; do
		top_json "$TMP/j$i" || { echo "colltop --json failed:"; cat "$TMP/e"; }
		cat "$TMP/j$i" >>"$TMP/all"
		python3 -c 'import json, sys
f = json.loads(open(sys.argv[1]).read().splitlines()[-1])
j = f["jobs"][0] if f["jobs"] else {}
sys.exit(0 if eval(sys.argv[2]) else 1)' "$TMP/j$i" "$1" 2>/dev/null && return 0
	done
	return 1
}
