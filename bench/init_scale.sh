#!/bin/bash
# Communicator init at scale: runs bench_init_scale (bench/init_scale.c) for
# each size (N local ranks join a root on 127.0.0.1, all-reduce 8 bytes, leave)
# and prints a markdown table of the medians. The label column tells runs
# apart, so a run before and one after a change can be pasted into one table
# (--no-header prints the rows alone).
#
#   bench/init_scale.sh [-r REPS] [-b BUILD_DIR] [--roots B] [--label NAME] [--no-header] [SIZES...]
#
# Defaults: 3 repetitions, build/, one root, sizes 64 256 1024, the label is
# the commit. --roots B: B roots each serve a block of ranks, which join with
# comm_init_scalable; "root bytes sent" is then all roots' together and "most
# by one root" the largest of them.
# RUN_TIMEOUT (seconds, default 1800) bounds one size's run (all repetitions).
# Each run is a process group of its own: on failure, timeout, Ctrl-C or any
# exit of this script, whatever is left of it is killed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
usage() {
	echo "usage: $0 [-r REPS] [-b BUILD_DIR] [--roots B] [--label NAME] [--no-header] [SIZES...]" >&2
	exit 2
}
reps=3
roots=1
build=build
label=
header=1
while [ $# -gt 0 ]; do
	case $1 in
	-r) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
	-b) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	--roots) [ $# -ge 2 ] || usage; roots=$2; shift 2 ;;
	--label) [ $# -ge 2 ] || usage; label=$2; shift 2 ;;
	--no-header) header=0; shift ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
sizes=${*:-64 256 1024}
timeout_s=${RUN_TIMEOUT:-1800}
for v in $reps $roots $sizes; do
	case $v in ''|*[!0-9]*) echo "not a positive number: $v" >&2; usage ;; esac
done
case $build in /*) ;; *) build=$ROOT/$build ;; esac
bin=$build/bench/bench_init_scale
[ -x "$bin" ] || { echo "no $bin: build it first (make bench_init_scale)" >&2; exit 2; }
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
label=${label:-$commit}

work=$(mktemp -d)
pgid=
# Kill what is left of the run in flight (its ranks die with it anyway, PR_SET_PDEATHSIG).
stop_run() {
	[ -n "$pgid" ] || return 0
	kill -KILL -- "-$pgid" 2>/dev/null || true
	pgid=
}
trap 'stop_run; rm -rf "$work"' EXIT
trap 'echo "interrupted: killing the ranks" >&2; exit 130' INT TERM HUP

# A copy: a rebuild during the run must not swap the binary between sizes.
cp "$bin" "$work/bench_init_scale"
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)

# One size, all repetitions: its own session and process group, bounded by timeout.
run_size() { # run_size N
	local rc=0
	setsid timeout "$timeout_s" "$work/bench_init_scale" --roots "$roots" "$1" "$reps" \
		>"$work/out.$1" 2>"$work/err.$1" &
	pgid=$!
	wait "$pgid" || rc=$?
	# A run that ended well leaves nothing; one that failed or timed out may
	# leave ranks still dying: either way, whatever is left goes now.
	if [ "$rc" = 0 ] && kill -0 -- "-$pgid" 2>/dev/null; then
		echo "$1 ranks: processes left after the run, killed" >&2
		rc=1
	fi
	stop_run
	return "$rc"
}

# What a failed run said: the program's own lines, and the first of the ranks'.
show_failure() { # show_failure N RC
	echo "$1 ranks: failed (exit status $2$([ "$2" = 124 ] && echo ", timed out after ${timeout_s} s"))" >&2
	grep '^bench_init_scale: ' "$work/err.$1" >&2 || true
	grep -v '^bench_init_scale: ' "$work/err.$1" | head -n 20 >&2 || true
	cp "$work/err.$1" "${TMPDIR:-/tmp}/init_scale.$1.err" &&
		echo "full stderr: ${TMPDIR:-/tmp}/init_scale.$1.err" >&2
}

if [ "$header" = 1 ]; then
	echo "| label | ranks | roots | wall s (median) | root bytes sent | bytes/rank | most by one root | root peak RSS KiB |"
	echo "|---|---|---|---|---|---|---|---|"
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
took=
failed=0
for n in $sizes; do
	echo "$n ranks, $reps repetitions ..." >&2
	t0=$(date +%s.%N)
	rc=0
	run_size "$n" || rc=$?
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	took="$took $n: ${t} s;"
	if [ "$rc" != 0 ]; then
		show_failure "$n" "$rc"
		failed=1
		continue
	fi
	grep -v '^#' "$work/out.$n" | sed 's/^/  /' >&2
	awk -v l="$label" '$1 == "median" {
		printf "| %s | %d | %d | %.3f | %.0f | %.0f | %.0f | %.0f |\n", l, $2, $7, $3, $4,
			$4 / $2, $6, $5 }' \
		"$work/out.$n"
done
echo
echo "$label: commit $commit, ${btype:-unknown} build, $reps repetitions per size (median)," \
	"$(nproc) CPUs, Linux $(uname -r), $(date -u +%Y-%m-%d)."
echo "Time per size (all repetitions):$took load average before: $load0, after:" \
	"$(cut -d' ' -f1-3 /proc/loadavg)."
exit "$failed"
