#!/bin/bash
# A job killed with SIGKILL (its collrun and its ranks) leaves its status
# pages and record behind. colltop must call it gone, in the batch text and
# in JSON, never "advancing", and count none of its ranks as running (issue
# 37, item 4). Its pids are checked as processes: alive, the page owner's,
# and not started after the page's last write.
. "$(dirname "$0")/lib.sh"

"$BIN/collrun" -n 2 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
for _ in $(seq 300); do
	[ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 2 ] && [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break
	sleep 0.1
done
P0=$(pid_of_rank 0)
P1=$(pid_of_rank 1)
kill -9 "$JOB" "$P0" "$P1"
wait "$JOB" 2>/dev/null
for _ in $(seq 100); do
	kill -0 "$P0" 2>/dev/null || kill -0 "$P1" 2>/dev/null || break
	sleep 0.1
done
check "the killed job's pages are left" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 2

"$BIN/colltop" -b -n 3 --interval 0.3 --np 1 --no-gpu >"$TMP/t" 2>"$TMP/e"
expect_code 0 $? "colltop -b"
check "text: the job is gone" grep -q '^! job [0-9a-f]* (.*) comm [0-9a-f]*: gone: no process of its 2 ranks here is running' "$TMP/t"
check "text: never advancing" sh -c "! grep -q 'advancing' '$TMP/t'"
check "text: never stalled" sh -c "! grep -q 'stalled' '$TMP/t'"

"$BIN/colltop" --json -n 3 --interval 0.3 --np 1 --no-gpu >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "colltop --json"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'PY'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
say(len(fr) == 3, "3 frames")
jobs = [f["jobs"] for f in fr]
say(all(len(j) == 1 for j in jobs), "the killed job is seen in every frame")
say(all(j[0]["state"] == "gone" and not j[0]["stalled"] for j in jobs), "gone in each: %s" % [j[0]["state"] for j in jobs])
say(all(j[0]["live"] == 0 for j in jobs), "no live rank counted")
say(all(not r["alive"] and r["proc"] == "?" for j in jobs for r in j[0]["ranks"]), "each rank not alive, proc '?'")
PY
check "JSON: gone, no live rank" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"
finish
