#!/bin/bash
# The nccl-tests sweeps of every collective: #wrong 0 for every datatype (and
# op where it reduces), nccl-tests' sizes and bus-bandwidth factors in the
# JSON, roots, and the engine choice where no GPU is: auto says why it runs
# coll's own, nccl asked for stops with the reason.
. "$(dirname "$0")/lib.sh"

for k in allgather reducescatter broadcast reduce alltoall; do
	case $k in reducescatter | reduce) ops="-o all" ;; *) ops="" ;; esac
	# shellcheck disable=SC2086
	collrun -n 4 --no-label collcheck $k --engine coll -b 64 -e 256K -f 16 -n 1 -w 0 -d all $ops -r 3 \
		>"$TMP/$k" 2>"$TMP/$k.err"
	expect_code 0 $? "$k on 4 ranks, every datatype"
	nops=1
	[ -n "$ops" ] && nops=5
	check "$k: 10 datatypes x $nops ops x 4 sizes" test "$(grep -c '^ *[0-9]' "$TMP/$k")" -eq $((40 * nops))
	check "$k: no wrong element anywhere" awk '/^ *[0-9]/ { if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad }' "$TMP/$k"
	check "$k: the header names the collective and engine coll" grep -q "^# collcheck $k: 4 ranks, engine coll" "$TMP/$k"
done
check "broadcast rows carry root 3 and op none" awk '/^ *[0-9]/ { if ($4 != "none" || $5 != 3) bad = 1 } END { exit bad }' "$TMP/broadcast"
check "allgather rows carry root -1" awk '/^ *[0-9]/ { if ($5 != -1) bad = 1 } END { exit bad }' "$TMP/allgather"

# Sizes and bandwidth as nccl-tests: the larger buffer, parts rounded to 16 bytes.
for k in allgather reducescatter alltoall broadcast; do
	collcheck $k -N 3 --engine coll -b 1000 -e 1000 -n 2 -w 0 -d float --json >"$TMP/$k.json" 2>"$TMP/err"
	expect_code 0 $? "$k -N 3 --json"
done
python3 - "$TMP" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
for k, size, count, factor in (("allgather", 960, 80, 2 / 3), ("reducescatter", 960, 80, 2 / 3),
                               ("alltoall", 960, 80, 2 / 3), ("broadcast", 1000, 250, 1.0)):
    d = json.load(open(f"{sys.argv[1]}/{k}.json"))
    assert d["collective"] == k and d["engine"] == "coll" and d["nranks"] == 3, d
    r, = d["results"]
    assert (r["size"], r["count"]) == (size, count), (k, r)
    for m in (r["out_of_place"], r["in_place"]):
        assert m["wrong"] == 0 and m["time_us"] > 0, (k, m)
        assert abs(m["algbw"] - size / (m["time_us"] * 1e3)) < 1e-6 * max(1, m["algbw"]), (k, m)
        assert abs(m["busbw"] - m["algbw"] * factor) < 1e-6 * max(1, m["busbw"]), (k, m)
print("ok")
EOPY
check "JSON sizes, counts, algbw and busbw factors as nccl-tests" grep -q '^ok$' "$TMP/py"

# Where there is no CUDA driver (CI, this machine): auto falls back and says why, nccl stops.
if ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
	collcheck allreduce -N 2 -b 8 -e 8 -n 1 -w 0 >"$TMP/o" 2>"$TMP/e"
	expect_code 0 $? "auto without a GPU runs coll's own"
	check "auto says why coll's own runs: no CUDA driver here" grep -q '^# engine coll: NCCL unavailable (rank 0: no CUDA driver (libcuda.so.1))$' "$TMP/o"
	check "in one short line, once" test "$(grep -c 'NCCL unavailable' "$TMP/o")" = 1 -a "$(grep 'NCCL unavailable' "$TMP/o" | wc -c)" -le 80
	collcheck allreduce -N 2 -b 8 -e 8 -n 1 -w 0 --engine nccl >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "--engine nccl without a GPU cannot run"
	check "it says NCCL cannot run and why, on one line per rank" grep -q 'collcheck: cannot run on NCCL: rank [01]: no CUDA driver (libcuda.so.1)' "$TMP/e"
	check "it prints no rows" test "$(grep -c '^ *[0-9]' "$TMP/o")" -eq 0
else
	echo "# skipped: this machine has a CUDA driver, so the no-GPU fallback is not tested here"
fi

for bad in "broadcast -r 9" "reduce -r 4"; do
	# shellcheck disable=SC2086
	collcheck $bad -N 4 -b 8 -e 8 >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "'$bad' on 4 ranks is a usage error"
	check "'$bad' names the rank range" grep -q 'is not a rank of this 4-rank job: use 0 to 3' "$TMP/e"
done
for bad in "--engine gpu" "--engine nccl --on-failure shrink" "-r -1"; do
	# shellcheck disable=SC2086
	collcheck alltoall $bad >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "usage error for '$bad'"
	check "message for '$bad' starts with collcheck alltoall:" grep -q '^collcheck alltoall: ' "$TMP/e"
done
check "no status pages left" test -z "$(ls "$COLL_STATUS_DIR")"
finish
