#!/bin/bash
# collcheck across nodes through srun: env inside a salloc allocation (its
# nodes from SLURM_JOB_NODELIST) and outside one (-H), with --json; the
# whole check (env, links between every pair of nodes, all-reduce) in an
# allocation; each node answers under its own name.
. "$(dirname "$0")/lib.sh"
NAME=t0505-$$
cleanup_check() { scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_check EXIT

salloc -J "$NAME" -N 4 "$BIN/collcheck" env --launcher slurm >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "salloc -N 4 collcheck env"
check "4 hosts, 4 ranks, no problems" grep -q '^collcheck: 4 hosts, 4 ranks: 0 with problems, 0 unreachable' "$TMP/o"
for n in 1 2 3 4; do
	check "$(node $n) OK" grep -q "^$(node $n)  *OK\$" "$TMP/o"
done

collcheck env --launcher slurm -H "$(node 2),$(node 4)" -N 2 --json >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "collcheck env -H $(node 2),$(node 4) -N 2 --json, no allocation"
check "--json: rank 0's record names the two nodes" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(h['host'] for h in d['hosts']) == sys.argv[2:], d['hosts']" "$TMP/j" "$(node 2)" "$(node 4)"

salloc -J "$NAME" -N 4 "$BIN/collcheck" --launcher slurm >"$TMP/o" 2>"$TMP/e"
code=$?
check "the whole check on 4 nodes (exit $code)" test "$code" -le 1
check "... its links: a row per node" sh -c "grep -q '^links:' '$TMP/o' &&
	[ \$(grep -cE '^node0[1-4] +[0-3] ' '$TMP/o') -eq 4 ]"
check "... its all-reduce of 4 ranks, every #wrong 0" awk '
	/^allreduce .*4 ranks/ { on = 1; next } on && /^ *[0-9]/ { n++; if ($5 != 0) bad = 1 }
	on && /^$/ { on = 0 } END { exit bad || n < 3 }' "$TMP/o"
finish
