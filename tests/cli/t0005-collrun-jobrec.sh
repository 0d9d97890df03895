#!/bin/bash
# While a job runs, its record and status pages are where collstack looks;
# when it ends (also by SIGKILL of a rank) they are gone.
. "$(dirname "$0")/lib.sh"

"$BIN/collrun" -n 3 collcheck allreduce -b 4M -e 4M -n 100000 -w 0 -c 0 >"$TMP/out" 2>"$TMP/err" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq 3 ] && break; sleep 0.1; done
check "three status pages while running" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq 3
rec=$(ls "$COLL_JOB_DIR"/*.json 2>/dev/null | head -1)
check "a job record exists" test -n "$rec"
python3 - "$rec" "$COLL_STATUS_DIR" >"$TMP/py" 2>&1 <<'EOPY'
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["nranks"] == 3 and len(j["ranks"]) == 3, j
for r in j["ranks"]:
    assert os.path.exists("/proc/%d" % r["pid"]), r
pages = os.listdir(sys.argv[2])
assert all(p.startswith("coll." + j["jobid"] + ".") for p in pages), (pages, j["jobid"])
print("ok")
EOPY
check "job record names the live pids and the pages' job id" grep -q '^ok$' "$TMP/py"
# The status page shows progress: sequence numbers move.
s1=$(python3 -c "import struct,sys;d=open(sys.argv[1],'rb').read();print(struct.unpack_from('<Q',d,48)[0])" "$COLL_STATUS_DIR/$(ls "$COLL_STATUS_DIR" | head -1)")
sleep 1
s2=$(python3 -c "import struct,sys;d=open(sys.argv[1],'rb').read();print(struct.unpack_from('<Q',d,48)[0])" "$COLL_STATUS_DIR/$(ls "$COLL_STATUS_DIR" | head -1)")
check "status page sequence number advances ($s1 -> $s2)" test "$s2" -gt "$s1"
victim=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['ranks'][1]['pid'])" "$rec")
kill -9 "$victim"
wait $pid
expect_code 137 $? "job ends with the killed rank's code"
check "status pages removed after the job" test -z "$(ls "$COLL_STATUS_DIR")"
check "job record removed after the job" test -z "$(ls "$COLL_JOB_DIR")"

# A job directory others may write to: the job still runs, one line says why there is no record.
mkdir -m 777 "$TMP/open" && chmod 777 "$TMP/open"
COLL_JOB_DIR=$TMP/open collrun -n 2 true >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a refused job directory does not stop the job"
check "one line names the directory and what to do" \
	test "$(grep -c "no job record: $TMP/open is .*mode 700" "$TMP/e")/$(wc -l <"$TMP/e")" = 1/1
check "nothing was written there" test -z "$(ls "$TMP/open")"
finish
