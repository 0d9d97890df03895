#!/bin/bash
# --on-failure shrink: rank 3 SIGKILLs itself mid-sweep (COLL_FAULT), the
# survivors shrink to 7 ranks, redo the size that was cut off and sweep on to
# the end; collrun -k lets them, and still exits with rank 3's 137. The
# default (stop) ends the sweep there, naming rank 3. REPS repeats the shrink
# run (default 3) to catch flakiness.
. "$(dirname "$0")/lib.sh"

# With -n 20 -w 2 -c 1 each size costs 56 collectives: per half, 4 for the
# check, 2 warm-up, a barrier, 20 timed and 1 to gather the times. Seq 300 is
# timed iteration 13 of the out-of-place half of the sixth size, 8 KiB. The
# shrunk communicator numbers its ops from 1 again, and the survivor that
# becomes its rank 3 would meet the same fault at its seq 300: the rest of the
# sweep takes only 1 + 4 * 56 = 225 ops, so it never does.
export COLL_FAULT=3@300:kill
SWEEP="-b 8 -e 1M -f 4 -n 20 -w 2 -c 1"
BEFORE="8 32 128 512 2048"
AFTER="8192 32768 131072 524288"	# -f 4 from 8 B: the last size within 1 MiB is 512 KiB

rows() { # rows FILE: the sizes of the rows before the "left" line, "|", those after
	awk '/^# rank .* left at size / { printf "| "; next } /^ *[0-9]/ { printf "%s ", $1 }' "$1"
}

shrink_case() { # shrink_case N
	local n=$1 pid
	# shellcheck disable=SC2086
	collrun -n 8 -k --no-label collcheck allreduce --on-failure shrink $SWEEP \
	    >"$TMP/out.$n" 2>"$TMP/err.$n"
	expect_code 137 $? "run $n: collrun exits with the killed rank's 128+9"
	pid=$(sed -n 's/^collrun: rank 3 (pid \([0-9]*\)) was killed by signal 9 (SIGKILL)$/\1/p' "$TMP/err.$n")
	check "run $n: collrun names rank 3 as killed" test -n "$pid"
	check "run $n: no other rank failed" test "$(grep -c '^collrun: rank' "$TMP/err.$n")" -eq 1
	# Seq 299 when every survivor was still cut off in it, though rank 3 had done it.
	check "run $n: one line says rank 3 left at 8 KiB and 7 ranks go on" test "$(grep -cE \
	    "^# rank 3 \(host [^,]*, pid ${pid:-none}\) left at size 8192, out-of-place iteration 1[23] \(allreduce seq (299|300)\): .*rank 3 \(host [^,]*, pid ${pid:-none}\).*; continuing with 7 ranks$" \
	    "$TMP/out.$n")" -eq 1
	check "run $n: every size before, the cut-off one redone and the rest after" \
	    test "$(rows "$TMP/out.$n")" = "$BEFORE | $AFTER "
	check "run $n: every #wrong is 0" awk '/^ *[0-9]/ { if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad }' "$TMP/out.$n"
	check "run $n: the footer says OK" grep -q '^# Out of bounds values : 0 OK$' "$TMP/out.$n"
	check "run $n: nothing on stderr but rank 3's end" test "$(wc -l <"$TMP/err.$n")" -eq 1
}

for n in $(seq "${REPS:-3}"); do
	shrink_case "$n"
done

# The control: stop, the default, ends the sweep at the failure.
for flag in "" "--on-failure=stop"; do
	# shellcheck disable=SC2086
	collrun -n 8 -k --no-label collcheck allreduce $flag $SWEEP >"$TMP/stop" 2>"$TMP/stoperr"
	code=$?
	check "${flag:-default}: a non-zero exit ($code)" test "$code" -ne 0
	pid=$(sed -n 's/^collrun: rank 3 (pid \([0-9]*\)) was killed by signal 9 (SIGKILL)$/\1/p' "$TMP/stoperr")
	check "${flag:-default}: the errors name rank 3" grep -q "^collcheck: rank 3 (host [^,]*, pid ${pid:-none}) died" "$TMP/stoperr"
	check "${flag:-default}: every survivor exits 3" test "$(grep -c '^collrun: rank [0-9] (pid [0-9]*) exited with code 3$' "$TMP/stoperr")" -eq 7
	check "${flag:-default}: no rows after the failure, nobody left" test "$(rows "$TMP/stop")" = "$BEFORE "
	check "${flag:-default}: no footer" test "$(grep -c '^# Out of bounds' "$TMP/stop")" -eq 0
done

# JSON: the events array; rows after it are of 7 ranks, busbw with n = 7.
# shellcheck disable=SC2086
collrun -n 8 -k --no-label collcheck allreduce --on-failure shrink $SWEEP --json >"$TMP/json" 2>"$TMP/jerr"
expect_code 137 $? "--json: collrun exits 137"
check "--json: the left line goes to stderr" grep -q '^# rank 3 (host .*) left at size 8192, .*continuing with 7 ranks$' "$TMP/jerr"
python3 - "$TMP/json" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nranks"] == 8 and d["wrong"] == 0, d
ev = d["events"]
assert len(ev) == 1, ev
e = ev[0]
assert e["size"] == 8192 and e["left"] == [3] and e["ranks_after"] == 7, e
assert e["reason"].startswith("rank 3 (host ") or "rank 3 (host " in e["reason"], e
sizes = [r["size"] for r in d["results"]]
assert sizes == [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288], sizes
for r in d["results"]:
    n = 8 if r["size"] < 8192 else 7
    assert r["nranks"] == n, r
    for k in ("out_of_place", "in_place"):
        m = r[k]
        assert m["wrong"] == 0 and 0 <= m["slowest_rank"] < n, r
        assert abs(m["busbw"] - m["algbw"] * 2 * (n - 1) / n) < 1e-6 * max(1, m["busbw"]), r
print("ok")
EOPY
grep -q '^ok$' "$TMP/py" || cat "$TMP/py"
check "--json: events, rows with their rank counts, busbw with the new n" grep -q '^ok$' "$TMP/py"

collcheck allreduce --on-failure maybe >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "--on-failure maybe is a usage error"
check "--on-failure's message names the choices" grep -q "^collcheck allreduce: unknown --on-failure 'maybe': use stop or shrink" "$TMP/e"
check "no status pages left" test -z "$(ls "$COLL_STATUS_DIR")"
finish
