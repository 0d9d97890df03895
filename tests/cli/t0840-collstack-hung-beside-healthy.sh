#!/bin/bash
# Plain collstack with a hung job and a healthy one started after it (issue
# 37, item 1): the newest job is the healthy one (a `collrun -n 2 sleep`
# with no status pages), and collstack used to read it alone: "no status
# pages", exit 0, no job id. It must take the hung job, print its id and how
# it was found, and name the hung rank.
. "$(dirname "$0")/lib.sh"
H=$(hostname)

# The hung job: rank 1 hangs in op 20 (COLL_FAULT), the others wait in it.
COLL_FAULT=1@20:hang "$BIN/collrun" -n 3 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 \
	>"$TMP/hung.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break; sleep 0.1; done
HUNG=$(ls "$COLL_JOB_DIR" | head -1); HUNG=${HUNG%.json}
check "the hung job's record" test -n "$HUNG"
settled --job "$HUNG"

# The healthy job, started after: the newest record.
"$BIN/collrun" -n 2 sleep 60 >"$TMP/ok.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 2 ] && break; sleep 0.1; done
for _ in $(seq 300); do [ "$(pgrep -x sleep -P "$!" | wc -l)" -ge 2 ] && break; sleep 0.1; done
check "the healthy job runs" test "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 2

"$BIN/collstack" --no-color --no-fr-dump >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "plain collstack: the hung job's verdict"
check "... the hung job is named by its id" grep -q "^job: collrun job $HUNG, found by its collrun job record" "$TMP/o"
check "... rank 1 holds the others up" grep -qE "^=> rank 1 \($H, pid [0-9]+\) holds the others up" "$TMP/o"
check "... not 'no status pages'" sh -c "! grep -q 'no status pages' '$TMP/o' '$TMP/e'"
check "... nothing on stderr" test ! -s "$TMP/e"
"$BIN/collstack" --json --no-fr-dump >"$TMP/j" 2>/dev/null
check "--json: the same job" python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["found"].startswith("collrun job " + sys.argv[2]), d.get("found")' "$TMP/j" "$HUNG"
finish
