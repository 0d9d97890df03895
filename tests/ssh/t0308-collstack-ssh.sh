#!/bin/bash
# collstack on 4 hosts: a collrun job of 8 ranks (2 per host) of coll's own
# all-reduce where rank 5 hangs in op 20, then one where rank 6 is stopped
# with SIGSTOP. collstack alone finds the newest job, goes to its hosts over
# SSH (one worker per host), and names the rank, its host and the sequence
# numbers; the merged tree holds all 8 ranks with the hung one apart.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
jobid() { ls "$COLL_JOB_DIR" | sed -n 's/\.json$//p' | head -1; }
# Remote ranks write their pages to /dev/shm: remove this test's, however it ends.
JOBS=""
trap 'for j in $JOBS; do rm -f /dev/shm/coll.$j.*; done; cleanup' EXIT
wait_job() { # until every rank's pid is in the record and all 8 pages exist
	for _ in $(seq 300); do
		j=$(jobid)
		[ -n "$j" ] && case " $JOBS " in *" $j "*) ;; *) JOBS="$JOBS $j" ;; esac
		if [ -n "$j" ] && [ "$(ls /dev/shm/coll.$j.* 2>/dev/null | wc -l)" -ge 8 ] &&
		    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not all(r["pid"] > 0 for r in d["ranks"]))' "$COLL_JOB_DIR/$j.json" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

"$BIN/collrun" -F "$CFG" -H "$HOSTS" -N 2 env COLL_FAULT=5@20:hang "$MARK=1" \
	"$BIN/collcheck" allreduce -b 8 -e 8 -n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
check "hang: the job started on 4 hosts" wait_job
sleep 2
collstack -F "$CFG" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "hang: a culprit is named"
check "hang: 8 ranks on 4 hosts" grep -q '^collstack: 8 ranks on 4 hosts' "$TMP/o"
check "hang: rank 5 on node03 at seq 20, stuck outside communication" grep -q '^rank 5 (node03, pid [0-9]*) is in allreduce seq 20 but waits on no peer: it is stuck outside communication, in fault_at_begin (fault_hooks.c:[0-9]*); 7 ranks wait on it' "$TMP/o"
check "hang: the tree parts at rank 5" grep -q '\[5\] (1) coll_begin' "$TMP/o"
check "hang: the other seven in the all-reduce" grep -q '\[0-4,6-7\] (7) coll_run' "$TMP/o"
check "hang: all 8 under one root" grep -q '^\[0-7\] (8) 16 threads$' "$TMP/o"
check "hang: nothing on stderr" test ! -s "$TMP/e"
collstack -F "$CFG" --json >"$TMP/j" 2>"$TMP/e"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["id"] for c in d["culprits"]] == [5], d["culprits"]
hosts = {t["id"]: t["host"] for t in d["tasks"]}
assert hosts == {0: "node01", 1: "node01", 2: "node02", 3: "node02", 4: "node03",
                 5: "node03", 6: "node04", 7: "node04"}, hosts
assert sorted(d["hosts"]) == ["node01", "node02", "node03", "node04"]
assert all(t["pages"][0]["seq_started"] == 20 for t in d["tasks"])
print("json ok")
EOPY
check "hang: --json: culprit, hosts, seqs" grep -q 'json ok' "$TMP/py"
kill $JOB; wait $JOB 2>/dev/null
sleep 0.5
check "hang: no worker left on any host" test "$(pgrep -fc "collstack --worker -F $CFG")" -eq 0
rm -f "$COLL_JOB_DIR"/*.json

"$BIN/collrun" -F "$CFG" -H "$HOSTS" -N 2 env "$MARK=1" "$BIN/collcheck" allreduce -b 8 -e 8 \
	-n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
check "SIGSTOP: the job started" wait_job
sleep 0.5
P6=$(pid_of_rank 6)
kill -STOP "$P6"
sleep 1.5
collstack -F "$CFG" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "SIGSTOP: a culprit is named"
check "SIGSTOP: rank 6 on node04 is stopped" grep -q "^rank 6 (node04, pid $P6) is stopped" "$TMP/o"
check "SIGSTOP: it stays stopped" test "$(awk '{print $3}' /proc/$P6/stat)" = T
kill -CONT "$P6"
kill $JOB; wait $JOB 2>/dev/null
sleep 0.5
check "no rank left on any host" test "$(leftovers)" -eq 0
finish
