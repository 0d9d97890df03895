#!/bin/bash
# compare.sh: issue 36's five benchmarks on two builds in one run, and one
# markdown table of before, after, their ratio and each one's spread, so
# "within noise" can be judged: all-reduce against Open MPI, launch against
# pdsh, init at 1024 ranks, collstack against gdb, colltop's own cost.
#
#   bench/compare.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [--quick] [-r REPS]
#                    [-o DIR] [--only allreduce,launch,init,collstack,colltop]
#
# Every benchmark runs once per build per repetition, the two builds one after
# the other (before, after in odd repetitions, after, before in even ones:
# a drift of the machine hits both alike); repetitions go round all five
# benchmarks, so each one's runs are spread over the whole run. The
# benchmarks are the scripts beside this one, scaled down (bench/README.md,
# "Before and after"); each build dir needs cmd/{collcheck,collrun,collstack,
# colltop} and bench/bench_init_scale. The harness (these scripts, tests/netbed,
# tests/stack/stack_target.c, bench/mpi_allreduce.c) is this tree's for both.
# Needs root, pdsh, gdb, eu-stack, mpicc and mpirun (tools/deps.sh).
# Raw outputs stay in DIR (default a new /tmp/coll-compare.XXXXXX).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
usage() {
	sed -n '7,8p' "$0" | sed 's/^#  */  /' >&2
	exit 2
}
quick=0 reps='' out='' only="allreduce launch init collstack colltop"
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	-r) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
	-o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || usage; only=${2//,/ }; shift 2 ;;
	-h|--help) usage ;;
	-*) usage ;;
	*) args+=("$1"); shift ;;
	esac
done
[ ${#args[@]} = 2 ] || usage
abs() { (cd "$1" && pwd); }
BEFORE=$(abs "${args[0]}") AFTER=$(abs "${args[1]}")
for b in $only; do
	case $b in allreduce|launch|init|collstack|colltop) ;; *) echo "unknown benchmark: $b" >&2; usage ;; esac
done

# Sizes: default fits 12 minutes on 2 idle cores, --quick about 3 (bench/README.md).
if [ "$quick" = 1 ]; then
	reps=${reps:-2}
	LAUNCH_HOSTS=16 LAUNCH_RUNS=2 STACK_PROCS=8 STACK_REFS=1 TOP_HOSTS=6 TOP_WINDOW=10
else
	reps=${reps:-3}
	LAUNCH_HOSTS=32 LAUNCH_RUNS=3 STACK_PROCS=16 STACK_REFS=2 TOP_HOSTS=8 TOP_WINDOW=20
fi
case $reps in ''|*[!0-9]*|0) echo "-r: a positive number" >&2; exit 2 ;; esac
CALL_TIMEOUT=${CALL_TIMEOUT:-300}

[ "$(id -u)" = 0 ] || { echo "compare.sh: needs root (netns hosts)" >&2; exit 2; }
for t in pdsh gdb eu-stack mpicc mpirun python3 gcc timeout; do
	command -v $t >/dev/null || { echo "compare.sh: needs $t (tools/deps.sh installs it)" >&2; exit 2; }
done
for d in "$BEFORE" "$AFTER"; do
	for f in cmd/collcheck cmd/collrun cmd/collstack cmd/colltop bench/bench_init_scale; do
		[ -x "$d/$f" ] || { echo "compare.sh: no $d/$f: build it first" >&2; exit 2; }
	done
done

if [ -n "$out" ]; then mkdir -p "$out"; OUT=$(abs "$out"); else OUT=$(mktemp -d /tmp/coll-compare.XXXXXX); fi
mkdir -p "$OUT/raw" "$OUT/bin"
TSV=$OUT/metrics.tsv
: >"$TSV"
# One Open MPI program and one stack_target for both builds: only coll differs.
mpicc -O2 -o "$OUT/bin/mpi_allreduce" "$HERE/mpi_allreduce.c"
gcc -g -O0 -pthread -D_GNU_SOURCE -o "$OUT/bin/stack_target" "$ROOT/tests/stack/stack_target.c"

# run_bench BENCH BUILD RAW: one call of BENCH's script on BUILD, output in RAW.
run_bench() {
	local b=$2 raw=$3
	case $1 in
	allreduce)
		mkdir -p "$raw.d"
		VERIFY=0 MPI_BIN=$OUT/bin/mpi_allreduce COLLCHECK=$b/cmd/collcheck \
			timeout -k 10 "$CALL_TIMEOUT" bash "$HERE/allreduce_vs_mpi.sh" -b 8 -e 2M -f 512 -r 1 -o "$raw.d" ;;
	launch)
		RUNS=$LAUNCH_RUNS COLLRUN=$b/cmd/collrun \
			timeout -k 10 "$CALL_TIMEOUT" bash "$HERE/launch_vs_pdsh.sh" "$LAUNCH_HOSTS" ;;
	init)
		timeout -k 10 "$CALL_TIMEOUT" bash "$HERE/init_scale.sh" -b "$b" -r 1 --no-header --label "$b" 1024 2>&1 ;;
	collstack)
		STACK_TARGET=$OUT/bin/stack_target timeout -k 10 "$CALL_TIMEOUT" \
			bash "$HERE/collstack_vs_gdb.sh" -b "$b" -p "$STACK_PROCS" -t 8 -g "$STACK_REFS" ;;
	colltop)
		timeout -k 10 "$CALL_TIMEOUT" bash "$HERE/colltop_overhead.sh" -b "$b" -k "$TOP_HOSTS" -w "$TOP_WINDOW" -L ;;
	esac >"$raw" 2>&1
}

start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
failed=
echo "compare.sh: $reps repetitions of [$only], before $BEFORE, after $AFTER; raw outputs in $OUT" >&2
for rep in $(seq "$reps"); do
	if [ $((rep % 2)) = 1 ]; then order="before after"; else order="after before"; fi
	for bench in $only; do
		for side in $order; do
			if [ $side = before ]; then b=$BEFORE; else b=$AFTER; fi
			raw=$OUT/raw/$bench.$side.r$rep
			t0=$(date +%s)
			rc=0
			run_bench "$bench" "$b" "$raw" || rc=$?
			what=$raw
			[ $bench = allreduce ] && what=$raw.d
			python3 "$HERE/compare.py" parse "$bench" "$side" "$rep" "$what" "$TSV" ||
				[ "$rc" != 0 ] || rc="0 but no metrics"
			echo "  rep $rep $bench $side: $(($(date +%s) - t0)) s, exit $rc" >&2
			[ "$rc" = 0 ] || failed="$failed $bench.$side.r$rep (exit $rc, see $raw)"
		done
	done
done
took=$(($(date +%s) - start))

mode=default; [ "$quick" = 1 ] && mode=quick
echo "## Benchmarks, before and after ($mode mode)"
echo
echo "before: $BEFORE; after: $AFTER. $reps repetitions, interleaved (before/after swapped every"
echo "repetition); before and after are medians over the repetitions, spread is min-max and"
echo "(max-min)/median; \"ranges overlap\": the two builds' ranges overlap (a loose test with few"
echo "repetitions: read the spreads too). Reference: the other tool, measured in the same calls"
echo "(median of all of them)."
echo
python3 "$HERE/compare.py" table "$TSV"
echo
echo "Sizes: all-reduce 4 local ranks over loopback, 8 B .. 2 MiB x512, one call per side;"
echo "launch \`true\` on $LAUNCH_HOSTS netns hosts, $LAUNCH_RUNS runs a call; init 1024 local ranks, one"
echo "root; collstack $STACK_PROCS processes x 8 threads (gdb/eu-stack read $STACK_REFS of them, scaled),"
echo "scale rows up to $((STACK_PROCS * 4)); colltop 1 Hz on $TOP_HOSTS netns hosts, ${TOP_WINDOW} s window."
echo "$(nproc) CPUs, Linux $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ); took $took s; load average before:" \
	"$load0, after: $(cut -d' ' -f1-3 /proc/loadavg). Raw outputs: $OUT/raw."
if [ -n "$failed" ]; then
	echo
	echo "FAILED calls:$failed"
	exit 1
fi
