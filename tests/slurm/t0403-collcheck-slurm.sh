#!/bin/bash
# collcheck's front end launching its workers through srun: env and the whole
# check, with rank 0's record read back from srun's output.
. "$(dirname "$0")/../cli/lib.sh"
SB=${SLURMBED_DIR:?}
if [ -f "$SB/unavailable" ] || [ ! -f "$SB/slurm.conf" ]; then echo "skipped: no Slurm"; exit 77; fi
export SLURM_CONF=$SB/slurm.conf COLL_SOCKET_IFNAME='=lo'

collcheck env --launcher slurm -N 2 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "collcheck env with 2 workers through srun"
check "one host, 2 ranks" grep -q '^collcheck: 1 host, 2 ranks: 0 with problems' "$TMP/o"
check "the host line" grep -q "^$(hostname)  *OK\$" "$TMP/o"
collcheck env --launcher slurm -N 2 --json >"$TMP/j" 2>"$TMP/e"
check "--json: rank 0's record came back through srun, naming this host" \
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['hosts'][0]['host'] == sys.argv[2]" "$TMP/j" "$(hostname)"
collcheck --launcher slurm -N 2 >"$TMP/o" 2>"$TMP/e"
code=$?
check "the whole check through srun (exit $code)" test "$code" -le 1
check "... with its links and all-reduce" sh -c "grep -q '^links:' '$TMP/o' && grep -q '^allreduce' '$TMP/o'"
finish
