#!/bin/bash
# SIGKILL of one rank mid-sweep: every other rank exits within the timeout
# with an error naming the dead rank.
. "$(dirname "$0")/lib.sh"

"$BIN/collrun" -n 4 --label --grace 10 collcheck allreduce -b 1M -e 16M -f 2 -n 1000 -w 0 -c 0 -T 20 >"$TMP/out" 2>"$TMP/err" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 200); do grep -q '^\[0\] *1048576' "$TMP/out" && break; sleep 0.1; done
rec=$(ls "$COLL_JOB_DIR"/*.json | head -1)
victim=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['ranks'][2]['pid'])" "$rec")
start=$(date +%s)
kill -9 "$victim"
wait $pid
code=$?
expect_code 137 $code "collrun reports the killed rank's signal"
check "survivors exit well before the grace period ends" test $(($(date +%s) - start)) -lt 8
for r in 0 1 3; do
	check "rank $r names rank 2 as dead" grep -q "^\[$r\] collcheck: rank 2 (host [^,]*, pid $victim) died" "$TMP/err"
	check "rank $r exited by itself with code 3" grep -q "rank $r (pid [0-9]*) exited with code 3" "$TMP/err"
done
check "status pages removed" test -z "$(ls "$COLL_STATUS_DIR")"
[ "$fails" -eq 0 ] || cat "$TMP/err"
finish
