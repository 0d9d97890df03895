#!/bin/bash
# collstack and NCCL's RAS service: two ranks (Python, RANK in their
# environment), rank 1 behind by one all-reduce as NCCL 2.28.9's own report
# said on the GPU machine (tests/stack/ras/), served by a stand-in that
# speaks the client protocol (tests/stack/ras_server.py): the rank behind is
# named with where it is, from the JSON report and from the text one an
# older server gives; missing ranks and async errors are said; no service,
# an older protocol, a silent one and one that is not RAS are skipped with a
# note, and the stacks are still shown.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
RAS=$COLL_SRC/tests/stack/ras
cat >"$TMP/ranks.py" <<'PY'
import os, time
def train_step():
    time.sleep(1000)
def eval_step():
    time.sleep(1000)
print("ready", flush=True)
(train_step if os.environ["RANK"] == "0" else eval_step)()
PY
evline=$(grep -n "^    time.sleep" "$TMP/ranks.py" | sed -n 2p | cut -d: -f1)
# Rank 0 hosts the stand-in, as an NCCL rank hosts NCCL's own service:
# collstack asks only a service whose socket a process of the job holds.
# Each serve names the mode and report it answers with next.
RANK=1 WORLD_SIZE=2 python3 "$TMP/ranks.py" >"$TMP/r1.out" 2>&1 &
p1=$!
echo "json $RAS/verbose_status.json" >"$TMP/mode"
RANK=0 WORLD_SIZE=2 python3 "$COLL_SRC/tests/stack/ras_server.py" "file:$TMP/mode" - "$TMP/port" \
    673=self 674=$p1 --then "$TMP/ranks.py" >"$TMP/r0.out" 2>&1 &
p0=$!
echo $p0 $p1 >>"$TMP/pids"
for _ in $(seq 100); do grep -q ready "$TMP/r0.out" && grep -q ready "$TMP/r1.out" && break; sleep 0.1; done
sleep 0.3
served_port=$(cat "$TMP/port")

# serve MODE REPORT: what rank 0's stand-in answers with from now on, at $port.
serve() { echo "$1 $2" >"$TMP/mode"; port=$served_port; }
unserve() { :; }
behind="NCCL RAS: communicator 0x92906a7ad1050f54: rank 1 (pid $p1) launched AllReduce up to 5 while 1 other is at 6: it is behind, in eval_step (ranks.py:$evline)"

serve json "$RAS/verbose_status.json"
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "JSON report: a rank behind"
check "... rank 1 named, with its count, the others' and where it is" grep -qxF "$behind" "$TMP/o"
check "... nothing on stderr" test ! -s "$TMP/e"
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --json >"$TMP/j" 2>"$TMP/e"
check "... --json: the report, and rank 1 the culprit" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["ras"]["report"]["comms"][0]
assert d["ras"]["report"]["version"] == "2.28.9", d["ras"]
assert [(r["rank"], r["counts"]["AllReduce"]) for r in c["ranks"]] == [(0, 6), (1, 5)], c
assert [c["rank"] for c in d["culprits"]] == [1], d["culprits"]' "$TMP/j"
unserve

serve text "$RAS/verbose_status.txt"
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "an older server's text report: a rank behind"
check "... the same line, from its MISMATCH warning" grep -qxF "$behind" "$TMP/o"
unserve

# Rank 1 missing, rank 0 with an async error (the report edited).
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["communicators"][0]
c["ranks"][0]["status"]["async_error"] = 5
c["ranks"][0]["collective_counts"]["AllReduce"] = 5
c["missing_ranks"] = [1]
json.dump(d, open(sys.argv[2], "w"))' "$RAS/verbose_status.json" "$TMP/edited.json"
serve json "$TMP/edited.json"
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>&1
expect_code 1 $? "a missing rank and an async error"
check "... the missing rank said" grep -qx "NCCL RAS: communicator 0x92906a7ad1050f54: rank 1 did not answer it (their process or host is gone or unreachable)" "$TMP/o"
check "... the async error said" grep -qx "NCCL RAS: communicator 0x92906a7ad1050f54: rank 0 (pid $p0) has async error 5" "$TMP/o"
check "... equal counts: nobody behind" sh -c "! grep -q 'it is behind' '$TMP/o'"
unserve

# A running job: counts differ, but move between two reports a moment apart.
serve moving "$RAS/verbose_status.json"
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>&1
expect_code 0 $? "counts still moving: nobody blamed"
check "... said" grep -q "^note: NCCL RAS skipped on $(hostname): its collective counts differ between ranks but still move: the job makes progress$" "$TMP/o"
check "... no rank behind" sh -c "! grep -q 'it is behind' '$TMP/o'"
unserve

# What is skipped, each with a note; the stacks are still read and shown.
skipped() { # skipped DESCRIPTION WHY
	NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 -T 8 --no-color >"$TMP/o" 2>&1
	expect_code 0 $? "$1: read all the same"
	check "... skipped, said" grep -q "^note: NCCL RAS skipped on $(hostname): $2" "$TMP/o"
	check "... the stacks shown" grep -q "eval_step (ranks.py:$evline)" "$TMP/o"
}
serve old "$RAS/verbose_status.json"; skipped "protocol 1" "the NCCL RAS service at 127.0.0.1:$port speaks protocol 1, older than 2: skipped$"; unserve
serve garbage "$RAS/verbose_status.json"; skipped "not RAS" "127.0.0.1:$port does not speak NCCL's RAS protocol$"; unserve
serve silent "$RAS/verbose_status.json"
start=$(date +%s)
skipped "a silent server" "127.0.0.1:$port does not speak NCCL's RAS protocol$"
check "... waited for it 2 s (a quarter of -T 8), not for ever" test $(( $(date +%s) - start )) -le 6
unserve
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
skipped "nothing listening" "no NCCL RAS service answers at 127.0.0.1:$port$"
NCCL_RAS_ADDR=nocolon collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>&1
check "NCCL_RAS_ADDR not host:port: said" grep -q "^note: NCCL RAS skipped on $(hostname): NCCL_RAS_ADDR 'nocolon' is not host:port$" "$TMP/o"
# No process runs NCCL and no NCCL_RAS_ADDR: RAS is not asked, and nothing is said of it.
collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>&1
check "no NCCL here: RAS not asked" sh -c "! grep -q 'RAS' '$TMP/o'"
finish
