#!/bin/bash
# collstack against gdb and eu-stack on the same processes in one run:
# P processes (default 64) of tests/stack/stack_target with T threads each
# (default 8), all asleep in known calls. Each tool reads every thread's
# stack of every process; the table says how long in total, per process, the
# ratio to gdb and to eu-stack, whether every stack was complete (all T
# threads, each reaching its thread function), and collstack's longest and
# median pause of one process. Then collstack alone at 16 to 4P processes, for
# how its time grows with processes per host.
#
#   bench/collstack_vs_gdb.sh [-p PROCS] [-t THREADS] [-b BUILD_DIR] [-g REFS]
#
# -g REFS: gdb and eu-stack read only the first REFS processes (default all:
# gdb takes about a second a process); their totals are then REFS's time per
# process times PROCS, and the ratios are per process.
# BUILD_DIR is relative to the tree or absolute. STACK_TARGET=PATH runs that
# stack_target instead of BUILD_DIR's (a build without the tests has none;
# bench/compare.sh gives both builds one, so only collstack differs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
procs=64 threads=8 build=build refs=
while [ $# -gt 0 ]; do
	case $1 in
	-p) procs=$2; shift 2 ;;
	-t) threads=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	-g) refs=$2; shift 2 ;;
	*) echo "usage: $0 [-p PROCS] [-t THREADS] [-b BUILD_DIR] [-g REFS]" >&2; exit 2 ;;
	esac
done
[ -n "$refs" ] && [ "$refs" -lt "$procs" ] || refs=$procs
for t in gdb eu-stack python3; do
	command -v $t >/dev/null || { echo "$0: needs $t (tools/deps.sh installs it)" >&2; exit 3; }
done
case $build in /*) ;; *) build=$ROOT/$build ;; esac
BIN=$build/cmd TARGET=${STACK_TARGET:-$build/tests/stack_target}
W=$(mktemp -d /tmp/coll-bench-stack.XXXXXX)
export COLL_STATUS_DIR=$W/shm COLL_JOB_DIR=$W/jobs
mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$W"' EXIT
start_targets() { # n: start n more targets, wait until all are ready
	local n=$1
	for _ in $(seq "$n"); do
		"$TARGET" 0 "$threads" nospin >>"$W/ready" &
		pids+=($!)
	done
	while [ "$(wc -l <"$W/ready")" -lt "${#pids[@]}" ]; do sleep 0.1; done
}
now() { date +%s.%N; }
start_targets "$procs"
list=$(IFS=,; echo "${pids[*]}")

t0=$(now)
for p in "${pids[@]:0:$refs}"; do gdb -p "$p" -batch -ex 'thread apply all bt' 2>/dev/null; done >"$W/gdb"
t1=$(now)
for p in "${pids[@]:0:$refs}"; do eu-stack -p "$p" 2>&1; done >"$W/eu"
t2=$(now)
"$BIN/collstack" --pid "$list" --json >"$W/cs" || true
t3=$(now)
"$BIN/collstack" --pid "$list" --threads 1 --json >"$W/cs1" || true
t4=$(now)

python3 - "$W" "$procs" "$threads" "$t0" "$t1" "$t2" "$t3" "$t4" "$refs" <<'EOPY'
import json, re, sys, statistics
w, P, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = [float(x) for x in sys.argv[4:9]]
R = int(sys.argv[9])
# The references read R of the P processes: their totals are scaled to P.
gdb_s, eu_s, cs_s, cs1_s = (t[1] - t[0]) * P / R, (t[2] - t[1]) * P / R, t[3] - t[2], t[4] - t[3]
gdb = open(w + "/gdb").read()
# gdb: one "Thread N (... LWP ...)" header per thread, each with a target_thread frame.
g_threads = len(re.findall(r"^Thread \d+ ", gdb, re.M))
g_whole = gdb.count(" target_thread (") + gdb.count(" main (")
eu = open(w + "/eu").read()
e_threads = len(re.findall(r"^TID \d+:", eu, re.M))
e_whole = len(re.findall(r" target_thread$", eu, re.M)) + len(re.findall(r" main$", eu, re.M))
def cs(path):
    d = json.load(open(path))
    tasks = d["tasks"]
    ok = all(x["threads"] == T and "error" not in x for x in tasks) and len(tasks) == P
    def count(n, name):
        return sum(count(k, name) for k in n["children"]) + (n["threads"] if n["frame"] == name else 0)
    whole = sum(count(n, "target_thread") + count(n, "main") for n in d["tree"])
    return ok and whole == P * T, [x["pause_ms"] for x in tasks]
c_ok, pauses = cs(w + "/cs")
c1_ok, pauses1 = cs(w + "/cs1")
print(f"{P} processes x {T} threads, every thread asleep in a known call; one run, this machine\n")
print("| tool | total s | per process ms | vs gdb | vs eu-stack | every stack whole |")
print("|---|---|---|---|---|---|")
def row(name, s, ok):
    print(f"| {name} | {s:.2f} | {1000 * s / P:.1f} | {s / gdb_s:.3f}x | {s / eu_s:.2f}x | {'yes' if ok else 'NO'} |")
scaled = f" (read {R} of {P}, scaled)" if R < P else ""
row("gdb -p PID -batch -ex 'thread apply all bt', per process" + scaled, gdb_s, g_threads == R * T and g_whole == R * T)
row("eu-stack -p PID, per process" + scaled, eu_s, e_threads == R * T and e_whole == R * T)
row("collstack --pid (all), parallel", cs_s, c_ok)
row("collstack --pid (all) --threads 1", cs1_s, c1_ok)
print(f"\ncollstack pause of one process: longest {max(pauses):.2f} ms, median {statistics.median(pauses):.2f} ms"
      f" (--threads 1: longest {max(pauses1):.2f} ms, median {statistics.median(pauses1):.2f} ms)")
print(f"targets: collstack <= 0.05x gdb: {'met' if cs_s <= 0.05 * gdb_s else 'NOT met'}; "
      f"<= 0.5x eu-stack: {'met' if cs_s <= 0.5 * eu_s else 'NOT met'}; "
      f"longest pause < 5 ms: {'met' if max(pauses) < 5 else 'NOT met'}")
EOPY

echo
echo "| processes | collstack s | per process ms |"
echo "|---|---|---|"
for n in 16 32 64 128 256; do
	[ "$n" -le $((procs * 4)) ] || break
	[ "${#pids[@]}" -ge "$n" ] || start_targets $((n - ${#pids[@]}))
	l=$(IFS=,; echo "${pids[*]:0:$n}")
	a=$(now); "$BIN/collstack" --pid "$l" --json >/dev/null || true; b=$(now)
	awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN { printf "| %d | %.2f | %.1f |\n", n, b - a, 1000 * (b - a) / n }'
done
