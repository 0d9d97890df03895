#!/bin/bash
# collstack --json is for programs (issue 37, item 13): a schema name, the
# verdict as objects (kind, who, comm, op, seq and the line as printed), the
# culprits as objects (id, rank, host, pid, why, sources), each task's main
# thread with its thread id and frames innermost first, the tree in the
# text's order (outermost first, its branches largest first) and both orders
# named. --json with --dot is refused (it used one of them silently).
. "$(dirname "$0")/lib.sh"
H=$(hostname)

"$BIN/collstack" --json --dot >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "--json --dot"
check "... refused in one line naming both" grep -q "^collstack: --json and --dot: give one output format$" "$TMP/e"
check "... nothing on stdout" test ! -s "$TMP/o"
"$BIN/collstack" --svg --json >/dev/null 2>&1
expect_code 2 $? "--svg --json"

COLL_FAULT=2@20:hang "$BIN/collrun" -n 4 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 \
	>"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break; sleep 0.1; done
ID=$(basename "$(ls "$COLL_JOB_DIR"/*.json | head -1)" .json)
settled --job "$ID"
# The text and the JSON of one hang, from two runs: taken again until the
# verdict has stopped changing between them (ranks still stalling into it).
for _ in $(seq 20); do
	"$BIN/collstack" --job "$ID" --no-fr-dump --json >"$TMP/j" 2>"$TMP/e"
	code=$?
	"$BIN/collstack" --job "$ID" --no-fr-dump --no-color >"$TMP/t" 2>&1
	python3 -c 'import json, sys
v = [x["text"] for x in json.load(open(sys.argv[1]))["verdict"]]
t = open(sys.argv[2]).read().splitlines()
sys.exit(t[t.index(v[0]):t.index(v[0]) + len(v)] != v)' "$TMP/j" "$TMP/t" 2>/dev/null && break
done
expect_code 1 $code "--json on a hang"
python3 - "$TMP/j" "$TMP/t" "$H" "$ID" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().splitlines()
host, job = sys.argv[3], sys.argv[4]
assert d["schema"] == "collstack/2", d.get("schema")
assert d["tree_order"] == "outermost-first" and d["stack_order"] == "innermost-first"
# Culprits: objects naming rank 2, why and the sources.
c = d["culprits"]
assert [x["id"] for x in c] == [2] and c[0]["rank"] == 2 and c[0]["host"] == host, c
assert isinstance(c[0]["pid"], int) and "coll status pages" in c[0]["sources"], c
assert c[0]["why"].startswith("rank 2 (%s, pid %d) holds the others up" % (host, c[0]["pid"])), c
# Verdict: objects; each text is a line printed, in the same order.
v = d["verdict"]
assert all(isinstance(x, dict) and "kind" in x and "text" in x for x in v), v
printed = [l for l in text if l in {x["text"] for x in v}]
assert printed == [x["text"] for x in v], (printed, [x["text"] for x in v])
k = {x["kind"]: x for x in v}
assert k["culprit"]["rank"] == 2 and k["culprit"]["pid"] == c[0]["pid"], k["culprit"]
assert k["culprit_stack"]["rank"] == 2, k
s = k["stuck_outside"]
assert s["rank"] == 2 and s["comm"] == job and s["op"] == "allreduce" and s["seq"] == 20, s
# Each task's main thread: its tid (the pid) and frames, innermost first.
for t in d["tasks"]:
    mt = t["main_thread"]
    assert mt["tid"] == t["pid"] and len(mt["frames"]) > 3, mt
    assert " < ".join(mt["frames"]) == t["stack"], (mt, t["stack"])
t2 = [t for t in d["tasks"] if t["id"] == 2][0]
assert "fault_at_begin" in " ".join(t2["main_thread"]["frames"][:3]), t2["main_thread"]
# The tree as the text draws it: outermost first, the larger branch first.
root = d["tree"][0]
assert root["frame"].startswith("_start"), root["frame"]
def branch(n):
    while len(n["children"]) == 1:
        n = n["children"][0]
    return n
b = branch(root)
assert len(b["children"]) == 2 and b["children"][0]["ranks"] == "0-1,3", b["children"]
# The text's order (render.c sorts once for both): every node's children
# largest first, ties by their first rank (two runs' trees differ in their
# threads' system calls, so the rule is checked, not the text).
def first(r):
    return int(r.split(",")[0].split("-")[0])
def pre(n):
    yield n
    for k in n["children"]:
        yield from pre(k)
for n in (n for r in d["tree"] for n in pre(r)):
    key = [(-k["count"], first(k["ranks"])) for k in n["children"]]
    assert key == sorted(key), (n["frame"], key)
EOPY
code=$?
cat "$TMP/py"
check "--json: schema, verdict and culprit objects, tids, the text's order" test $code -eq 0
finish
