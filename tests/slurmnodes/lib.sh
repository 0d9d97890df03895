# shellcheck shell=bash
# Shared by tests/slurmnodes/t05NN-*.sh: tests/cli/lib.sh (TMP, check, ...),
# then the bed of tests/slurm/slurmnodes.sh, whose directory is
# SLURMNODES_DIR: skip (77) without it; SLURM_CONF, and NET, ADDR (the
# bridge address, this machine's on the bed), NODES and K from its env file.
. "$(dirname "$0")/../cli/lib.sh"
SN=${SLURMNODES_DIR:?set SLURMNODES_DIR to the bed of tests/slurm/slurmnodes.sh}
# shellcheck disable=SC2034 # the tests' own
SLURMNODES=$(cd "$(dirname "$0")/../slurm" && pwd)/slurmnodes.sh
if [ -f "$SN/unavailable" ] || [ ! -f "$SN/slurm.conf" ] || [ ! -f "$SN/env" ]; then
	echo "skipped: no Slurm nodes bed"
	exit 77
fi
. "$SN/env"
export SLURM_CONF=$SN/slurm.conf
# A rank that cannot reach the rendezvous (a wrong root address) fails in 30 s, not 300.
export COLL_TIMEOUT=30
# Nothing from the caller's own Slurm job or interface choice: the tests say what they want.
unset SLURM_JOB_ID SLURM_JOBID SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE SLURM_NODELIST \
	COLL_SOCKET_IFNAME MASTER_ADDR MASTER_PORT

# Every test's end also cancels our jobs: srun runs in a process group of
# its own, so killing collrun leaves the job running on the nodes.
eval "cli_$(declare -f cleanup)"
cleanup() { cancel_coll_jobs; cli_cleanup; }

node() { printf 'node%02d' "$1"; }
# Each test starts on a bed whose K nodes are idle: the test before may leave
# a job completing on a node, and an allocation made then takes another
# node than the test names (t0507 got node01,03,04 under ASan in CI).
bed_idle() { [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)" -eq "$K" ]; }
for _ in $(seq 300); do bed_idle && break; sleep 0.1; done
# shellcheck disable=SC2120 # t0504 passes one
# coll_jobs [STATES]: how many jobs named coll-* squeue lists (squeue's failure is a failure)
coll_jobs() { squeue -h ${1:+-t "$1"} -o '%j' >"$TMP/squeue" && grep -c '^coll-' "$TMP/squeue"; }
# no_coll_jobs: wait up to 10 s for every coll-* job to leave the queue
no_coll_jobs() {
	for _ in $(seq 100); do [ "$(coll_jobs)" = 0 ] && return 0; sleep 0.1; done
	return 1
}
# wait_for N PATTERN FILE: up to 20 s for N lines matching PATTERN in FILE
wait_for() {
	for _ in $(seq 200); do [ "$(grep -c -- "$2" "$3" 2>/dev/null)" -ge "$1" ] && return 0; sleep 0.1; done
	return 1
}
# cancel_coll_jobs: cancel every coll-* job (the bed is these tests' alone)
cancel_coll_jobs() {
	squeue -h -o '%i %j' 2>/dev/null | awk '$2 ~ /^coll-/ { print $1 }' | xargs -r scancel 2>/dev/null
}
