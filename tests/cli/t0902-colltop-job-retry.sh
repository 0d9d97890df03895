#!/bin/bash
# A retried link (issue 39): the 4-rank libcoll job of t0900 with
# COLL_FAULT=1@40:close: rank 1 closes one of its data connections in op 40,
# and the operator retry (on by default, docs/FAULTS.md) makes the
# connections again and runs the op again on every rank. colltop counts the
# retry per job and rank and names the link by both its ranks and hosts, in
# --json and in the batch text (the straggler floor at 20 ms, as in t0900).
. "$(dirname "$0")/jobslib.sh"
TOPARGS=(--straggler-ms 20)

start_job COLL_FAULT=1@40:close
until_json 'j.get("retries", 0) >= 1 and any(r["retry_peer"] is not None for r in j["ranks"])'
check "json: the job's retry counted, its link known" test $? = 0
python3 - "$TMP/j"* >"$TMP/py" 2>&1 <<'PY'
import json, sys
fr = [json.loads(l) for f in sys.argv[1:] for l in open(f).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
last = fr[-1]["jobs"][0]
say(last["retries"] == 1, "the job: retried once: %s" % last["retries"])
rs = {r["rank"]: r for r in last["ranks"]}
say(all(r["retries"] == 1 for r in rs.values()), "every rank ran op 40 again: %s" % [r["retries"] for r in rs.values()])
p = rs[1]["retry_peer"]
say(p in (0, 2, 3), "rank 1 names the other end of its broken link: %s" % p)
say(p in rs and rs[p]["retry_peer"] == 1, "and that rank names rank 1: %s" % (rs.get(p) or {}).get("retry_peer"))
say(all(r["retry_age_s"] is not None and r["retry_age_s"] >= 0 for r in rs.values()), "the retry's age known")
say(all(j["straggler"] is None for f in fr for j in f["jobs"]), "no straggler named")
print("peer %s" % p)
PY
check "json: one retry, on the link of rank 1 and its peer" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"
P=$(sed -n 's/^peer //p' "$TMP/py")
top_text "$TMP/t"
expect_code 0 $? "colltop -b"
lo=$((P < 1 ? P : 1)) hi=$((P < 1 ? 1 : P)) h=$(hostname)
check "text: the link by both ranks and hosts, retried once" grep -qE \
	"^!+ job [0-9a-f]{16} via collrun:[0-9]+ \($(id -un)\) comm [0-9a-f]{8}: link rank ($lo <-> rank $hi|$hi <-> rank $lo) \($h <-> $h\) broke and ops were retried 1 time, the last [0-9]+ s ago" "$TMP/t"
check "text: the job's line counts it" grep -qE "advancing; .*retries 1$" "$TMP/t"
finish
