#!/bin/bash
# collrun --launcher slurm inside allocations across nodes: under salloc
# (here) and in an sbatch script (on the allocation's first node) it takes
# the ranks from SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE, with no -n;
# the root is at the address srun reached the nodes from (this machine's on
# the bed under salloc, the first node's in the batch script).
. "$(dirname "$0")/lib.sh"
NAME=t0502-$$
cleanup_alloc() { scancel --name="$NAME" 2>/dev/null; cleanup; }
trap cleanup_alloc EXIT

show='echo "r=$COLL_RANK h=$(hostname) lr=$LOCAL_RANK/$LOCAL_WORLD_SIZE s=$COLL_SIZE u=${COLL_UNIQUE_ID##*@}"'

salloc -J "$NAME" -N 3 --ntasks-per-node=2 "$BIN/collrun" --launcher slurm --label sh -c "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "salloc -N 3 --ntasks-per-node=2 collrun (no -n)"
for r in 0 1 2 3 4 5; do
	check "rank $r of 6 on $(node $((r / 2 + 1))), local $((r % 2)) of 2, root at $ADDR" \
		grep -qx "\[$r\] r=$r h=$(node $((r / 2 + 1))) lr=$((r % 2))/2 s=6 u=$ADDR:[0-9]*" "$TMP/o"
done

# Uneven: 5 tasks on 2 nodes; each node's ranks and local size as SLURM_TASKS_PER_NODE says.
salloc -J "$NAME" -N 2 -n 5 sh -c 'echo "tpn=$SLURM_TASKS_PER_NODE"; exec "$0" --launcher slurm --label sh -c "$1"' \
	"$BIN/collrun" "$show" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "salloc -N 2 -n 5 collrun"
tpn=$(sed -n 's/^tpn=//p' "$TMP/o")
check "5 ranks" test "$(grep -c ' s=5 ' "$TMP/o")" -eq 5
check "on each node as many ranks as SLURM_TASKS_PER_NODE=$tpn says, each told so" python3 - "$TMP/o" "$tpn" <<'EOF'
import re, sys
counts = []
for part in sys.argv[2].split(","):
    m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part)
    counts += [int(m.group(1))] * int(m.group(2) or 1)
ranks = {}
for line in open(sys.argv[1]):
    m = re.match(r"\[(\d+)\] r=\d+ h=(\S+) lr=(\d+)/(\d+) ", line)
    if m:
        ranks.setdefault(m.group(2), []).append((int(m.group(1)), int(m.group(3)), int(m.group(4))))
hosts = sorted(ranks)
assert [len(ranks[h]) for h in hosts] == counts, (ranks, counts)
for h in hosts:
    rs = sorted(ranks[h])
    assert [lr for _, lr, _ in rs] == list(range(len(rs))) and all(ls == len(rs) for *_, ls in rs), rs
EOF

# sbatch: the script runs on the first node; collrun there launches from it.
cat >"$TMP/job.sh" <<EOF
#!/bin/bash
echo "batch on \$(hostname): \$SLURM_JOB_NODELIST \$SLURM_TASKS_PER_NODE"
"$BIN/collrun" --label --launcher slurm sh -c '$show'
echo "collrun exit \$?"
"$BIN/collrun" --launcher slurm --no-label "$BIN/collcheck" allreduce -b 8 -e 64K -f 8 -n 2 -w 1
echo "allreduce exit \$?"
EOF
id=$(sbatch --parsable -J "$NAME" -N 2 --ntasks-per-node=3 -o "$TMP/job.out" "$TMP/job.sh" 2>"$TMP/e")
check "sbatch took the job ($id)" test -n "$id"
for _ in $(seq 600); do [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break; sleep 0.1; done
check "the job ended within 60 s" test -z "$(squeue -h -j "$id" 2>/dev/null)"
check "it completed with exit 0" sh -c "scontrol show job '$id' | grep -q 'JobState=COMPLETED .*' &&
	scontrol show job '$id' | grep -q ' ExitCode=0:0'"
check "the script ran on $(node 1), in a 2-node allocation of 3 tasks each" \
	grep -qx "batch on $(node 1): node\[01-02\] 3(x2)" "$TMP/job.out"
first=10.213.$NET.1
for r in 0 1 2 3 4 5; do
	check "batch: rank $r of 6 on $(node $((r / 3 + 1))), root at $(node 1)'s address $first" \
		grep -qx "\[$r\] r=$r h=$(node $((r / 3 + 1))) lr=$((r % 3))/3 s=6 u=$first:[0-9]*" "$TMP/job.out"
done
check "collrun exit 0 in the batch script" grep -qx "collrun exit 0" "$TMP/job.out"
check "allreduce in the batch script: 5 sizes, every #wrong 0" \
	awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 5 }' "$TMP/job.out"
check "... exit 0" grep -qx "allreduce exit 0" "$TMP/job.out"
finish
