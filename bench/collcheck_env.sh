#!/bin/bash
# collcheck on 8 netns hosts against what the fault-localisation seed's
# scripts do: ssh to each host in turn and run the commands that print its
# facts. Prints a markdown table of medians: wall time, and for collcheck the
# share of SSH setup and launch (wall minus rank 0's phases), the join, fact
# gathering, clocks, links and the all-reduce probe.
#
#   bench/collcheck_env.sh [-r REPS] [-b BUILD_DIR] [-k HOSTS]
#
# Needs root (it builds a test bed of K hosts, default 8, with
# tests/netbed/netbed.sh, and tears it down however it ends).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
reps=5 build=build k=8
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	-k) k=$2; shift 2 ;;
	*) echo "usage: $0 [-r REPS] [-b BUILD_DIR] [-k HOSTS]" >&2; exit 2 ;;
	esac
done
BIN=$ROOT/$build/cmd
BED=$(mktemp -d /tmp/coll-bench-bed.XXXXXX)
export COLL_STATUS_DIR=$BED/shm COLL_JOB_DIR=$BED/jobs
mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
trap 'bash "$ROOT/tests/netbed/netbed.sh" down "$BED" >/dev/null 2>&1; rm -rf "$BED"' EXIT
bash "$ROOT/tests/netbed/netbed.sh" up "$BED" "$k" cbb$$ >/dev/null
HOSTS=$(printf 'node[01-%02d]' "$k")
CFG=$BED/ssh_config

# The facts the seed's scripts gather, one host after the other.
serial() {
	for i in $(seq 1 "$k"); do
		ssh -F "$CFG" "$(printf 'node%02d' "$i")" 'hostname; uname -r; grep PRETTY /etc/os-release;
			nproc; grep MemTotal /proc/meminfo; ulimit -l -n -s; env | grep -E "^(NCCL|CUDA|UCX|OMPI|TORCH)_";
			cat /etc/nccl.conf ~/.nccl.conf 2>/dev/null; df -h /dev/shm | tail -1;
			grep -E "^(nvidia|nvidia_peermem|nv_peer_mem) " /proc/modules;
			ls /sys/class/infiniband 2>/dev/null; for f in /sys/class/net/*/mtu; do echo $f $(cat $f); done;
			nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null; date +%s.%N' >/dev/null 2>&1
	done
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }

run_check() { # label args...: wall and phases, one line per repetition
	local label=$1; shift
	for _ in $(seq "$reps"); do
		local t0 t1
		t0=$(now)
		"$BIN/collcheck" "$@" -F "$CFG" -H "$HOSTS" --json >"$BED/out.json" 2>"$BED/err" || [ $? -eq 1 ]
		t1=$(now)
		python3 - "$BED/out.json" "$t0" "$t1" <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = (float(sys.argv[3]) - float(sys.argv[2])) * 1000
p = d["phases_ms"]
inside = sum(p.values()) - p["join"]
print(f'{wall:.0f} {wall - inside:.0f} {p["facts"]:.0f} {p["clocks"]:.0f} {p["links"]:.0f} {p["allreduce"]:.0f}')
EOPY
	done >"$BED/$label.txt"
}

run_check env env
run_check envar all --config /dev/null
for _ in $(seq "$reps"); do t0=$(now); serial; t1=$(now); echo "$t0 $t1" | awk '{ printf "%.0f\n", ($2 - $1) * 1000 }'; done >"$BED/serial.txt"

col() { awk -v c="$2" '{ print $c }' "$BED/$1.txt" | median; }
echo "collcheck on $k netns hosts, median of $reps, ms (this machine: $(nproc) cores; all hosts share them)"
echo
echo "| run | wall | ssh setup, launch and join | facts | clocks | links | all-reduce probe |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for r in env envar; do
	name=$([ $r = env ] && echo 'collcheck env' || echo 'collcheck (env + links + all-reduce)')
	echo "| $name | $(col $r 1) | $(col $r 2) | $(col $r 3) | $(col $r 4) | $(col $r 5) | $(col $r 6) |"
done
s=$(median <"$BED/serial.txt")
echo "| serial ssh facts (the seed's scripts) | $s | | | | | |"
echo
e=$(col env 1)
echo "collcheck env takes $(awk -v a="$e" -v b="$s" 'BEGIN { printf "%.2f", a / b }')x the serial scripts' time."
