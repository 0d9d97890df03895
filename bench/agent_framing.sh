#!/bin/bash
# What the agent's framing costs a rank's output: the same program's output
# read straight from a pipe (what the launcher did before the agent owned the
# pipes) and read through `collrun --agent` (records of at most 1000 bytes),
# side by side, median of REPS alternating runs. Prints throughput and the
# ratio; CPU time of the agent is in the user+sys column.
#
#   bench/agent_framing.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent="$build/cmd/collrun"
reps=${REPS:-5}
mb=${MB:-200}
[ -x "$agent" ] || { echo "no $agent: build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: seconds of wall time and of user+sys CPU, for a program's output through MODE.
run() { # run MODE LINE_BYTES
	local mode=$1 line=$2 prog
	prog="head -c $((mb << 20)) /dev/zero | tr '\\0' x | fold -w $((line - 1))"
	# Both end in a reader of a pipe, as the launcher is.
	if [ "$mode" = raw ]; then
		/usr/bin/time -f '%e %U %S' -o "$work/t" sh -c "$prog | cat >/dev/null"
	else
		/usr/bin/time -f '%e %U %S' -o "$work/t" sh -c "\"\$0\" --agent --uid-stdin -- \
			sh -c \"\$1\" | cat >/dev/null" "$agent" "$prog" < <(hold)
		kill "$(cat "$work/feeder")"
	fi
	awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/t"
}

# The agent's stdin: the id, then held open as an SSH channel is.
hold() { echo $BASHPID >"$work/feeder"; printf 'u\n'; exec sleep 600; }

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '| line bytes | raw MB/s | agent MB/s | agent/raw | raw CPU s | agent CPU s |\n'
printf '|---|---|---|---|---|---|\n'
for line in 80 1000 4096 65536; do
	: >"$work/raw"; : >"$work/agent"
	for _ in $(seq "$reps"); do
		run raw "$line" >>"$work/raw"
		run agent "$line" >>"$work/agent"
	done
	rw=$(cut -d' ' -f1 "$work/raw" | median); rc=$(cut -d' ' -f2 "$work/raw" | median)
	aw=$(cut -d' ' -f1 "$work/agent" | median); ac=$(cut -d' ' -f2 "$work/agent" | median)
	awk -v l="$line" -v mb="$mb" -v rw="$rw" -v aw="$aw" -v rc="$rc" -v ac="$ac" 'BEGIN {
		printf "| %d | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", l, mb / rw, mb / aw, (mb / aw) / (mb / rw), rc, ac }'
done
