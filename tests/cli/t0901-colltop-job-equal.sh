#!/bin/bash
# A job's own straggler (issue 39): the 4-rank libcoll job of t0900 with no
# slow rank. colltop compares its ops over enough intervals to judge (past the
# warm-up and --straggler-intervals) and names no rank, in --json or text.
# The floor is 20 ms, as in t0900: on a loaded machine a rank's wake-ups can
# come 10 ms late for a few intervals running (seen under a busy loop).
. "$(dirname "$0")/jobslib.sh"
TOPARGS=(--straggler-ms 20)

start_job
# Judged: the job's ops compared on more intervals than the rule needs.
until_json 'len({json.loads(l)["jobs"][0]["judged_seq"] for l in open(sys.argv[1]).read().splitlines()[3:] if json.loads(l)["jobs"]}) >= 5'
check "json: the job's ops compared on 5 intervals past the warm-up" test $? = 0
python3 - "$TMP/all" >"$TMP/py" 2>&1 <<'PY'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
jobs = [j for f in fr for j in f["jobs"]]
say(jobs and all(j["straggler"] is None for j in jobs), "no straggler named: %s"
    % sorted({j["straggler"] for j in jobs if j["straggler"] is not None}))
say(all(not r["straggler"] for j in jobs for r in j["ranks"]), "no rank's straggler flag")
last = fr[-1]["jobs"][0]
say(all(r["late_ms"] is not None for r in last["ranks"]),
    "every rank's lateness known: %s" % [r["late_ms"] for r in last["ranks"]])
PY
check "json: no rank named" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"
top_text "$TMP/t"
expect_code 0 $? "colltop -b"
check "text: the job advancing" grep -qE "advancing" "$TMP/t"
check "text: no rank named latest to its ops (none late by --straggler-ms)" \
	sh -c "! grep -q 'latest to its ops' '$TMP/t'"
check "text: no straggler" sh -c "! grep -q 'straggler: rank' '$TMP/t'"
finish
