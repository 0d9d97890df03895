#!/bin/bash
# The all-reduce probe: nccl-tests' columns, #wrong 0 for every datatype and
# op, JSON through a JSON library, standalone local ranks, bad flags.
. "$(dirname "$0")/lib.sh"

# The issue's acceptance run, with fewer iterations and sizes to 8 MiB (the
# ring with 1 MiB blocks) to stay quick on 2 cores.
collrun -n 8 --no-label collcheck allreduce -b 8 -e 8M -f 4 -c 1 -n 2 -w 1 >"$TMP/out" 2>"$TMP/err"
expect_code 0 $? "8 ranks, 8 B to 8 MiB"
rows=$(grep -c '^ *[0-9]' "$TMP/out")
check "11 sizes reported" test "$rows" -eq 11
check "every #wrong is 0" awk '/^ *[0-9]/ { if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad }' "$TMP/out"
check "nccl-tests footer" grep -q '^# Avg bus bandwidth    : [0-9.]' "$TMP/out"
check "header has algbw, busbw, #wrong and the slowest rank" grep -q 'algbw.*busbw.*#wrong.*rank.*time' "$TMP/out"
check "sizes grow by 4 up to 8 MiB (the next, 32 MiB, is past -e)" grep -q "^ *8388608 *2097152 *float *sum *-1" "$TMP/out"

# Every datatype and op (small sizes: ring and recursive doubling both run).
collrun -n 5 --no-label collcheck allreduce -b 8 -e 256K -f 8 -n 1 -w 0 -d all -o all >"$TMP/all" 2>"$TMP/err"
expect_code 0 $? "all datatypes and ops on 5 ranks"
check "50 type x op combinations x 6 sizes" test "$(grep -c '^ *[0-9]' "$TMP/all")" -eq 300
check "no wrong element anywhere" awk '/^ *[0-9]/ { if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad }' "$TMP/all"
for t in int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double; do
	for o in sum prod min max avg; do
		n=$(awk -v t=$t -v o=$o '$3 == t && $4 == o' "$TMP/all" | wc -l)
		[ "$n" -eq 6 ] || not_ok "$t/$o has $n rows"
	done
done

# Each algorithm forced (COLL_ALLREDUCE_ALGO) over every size, datatype and op:
# halving with empty blocks (1 B on 6 ranks), a fold (6 is no power of two)
# and odd counts; an unknown name stops init with it.
for a in halving doubling ring; do
	COLL_DEBUG=info COLL_ALLREDUCE_ALGO=$a collcheck allreduce -N 6 -b 1 -e 300000 -f 9 -n 1 -w 0 \
		-d all -o all >"$TMP/algo" 2>"$TMP/err"
	expect_code 0 $? "COLL_ALLREDUCE_ALGO=$a on 6 ranks"
	check "$a: every rank ran it, and nothing else" test "$(grep -c "is the first by $a\$" "$TMP/err")" -eq 6 -a \
		"$(grep -c 'is the first by' "$TMP/err")" -eq 6
	check "$a: every type x op at 5 sizes or more" awk '/^ *[0-9]/ { n[$3 " " $4]++ }
		END { for (k in n) if (n[k] < 5) bad = 1; exit bad || length(n) != 50 }' "$TMP/algo"
	check "$a: no wrong element anywhere" \
		awk '/^ *[0-9]/ { if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad }' "$TMP/algo"
done
# Unforced, by size on 4 ranks: doubling to 32 KiB, halving where the ring's
# blocks would be 16 KiB or less (64 KiB), the ring above (128 KiB on).
COLL_DEBUG=info collcheck allreduce -N 4 -b 16K -e 256K -f 2 -n 1 -w 0 >"$TMP/algo" 2>"$TMP/err"
expect_code 0 $? "4 ranks, 16 KiB to 256 KiB"
for want in "16384 bytes is the first by doubling" "65536 bytes is the first by halving" \
	"131072 bytes is the first by ring"; do
	check "each rank: $want" test "$(grep -c "$want\$" "$TMP/err")" -eq 4
done
COLL_ALLREDUCE_ALGO=rabenseifner collcheck allreduce -N 2 -b 8 -e 8 >"$TMP/out" 2>"$TMP/err"
rc=$?
check "an unknown COLL_ALLREDUCE_ALGO fails" test "$rc" -ne 0
check "and is named" grep -q 'COLL_ALLREDUCE_ALGO=rabenseifner: use ring, doubling or halving' "$TMP/err"

# JSON, standalone with local ranks.
collcheck allreduce -N 3 -b 1K -e 64K -f 4 -n 2 -w 0 -d int32 -o max --json >"$TMP/json" 2>"$TMP/err"
expect_code 0 $? "standalone -N 3 with --json"
python3 - "$TMP/json" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "allreduce" and d["nranks"] == 3, d
assert [r["size"] for r in d["results"]] == [1024, 4096, 16384, 65536], d["results"]
for r in d["results"]:
    assert r["type"] == "int32" and r["redop"] == "max" and r["root"] == -1
    for k in ("out_of_place", "in_place"):
        m = r[k]
        assert m["wrong"] == 0 and m["time_us"] > 0 and 0 <= m["slowest_rank"] < 3
        assert abs(m["busbw"] - m["algbw"] * 4 / 3) < 1e-6 * max(1, m["busbw"])
print("ok")
EOPY
check "JSON has every field, busbw = algbw * 2(n-1)/n" grep -q '^ok$' "$TMP/py"

# A single rank (no peers) still reports.
collcheck allreduce -b 8 -e 8 -n 1 -w 0 >"$TMP/one" 2>"$TMP/err"
expect_code 0 $? "one rank alone"
check "one rank alone reports its one size, nothing wrong" awk '/^ *[0-9]/ { n++; if ($1 != 8 || $9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 1 }' "$TMP/one"

for bad in "-d nope" "-o xor" "-b 1X" "-b 8M -e 1M" "-n 0" "-c 2" "-N 0" "--what" "stray"; do
	# shellcheck disable=SC2086
	collcheck allreduce $bad >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "usage error for '$bad'"
	check "message for '$bad' starts with collcheck allreduce:" grep -q '^collcheck allreduce: ' "$TMP/e"
done
collcheck nosuch >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "unknown subcommand"
check "no status pages left" test -z "$(ls "$COLL_STATUS_DIR")"
finish
