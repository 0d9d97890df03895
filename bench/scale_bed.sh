#!/bin/bash
# The suite on K network-namespace hosts of this one machine (tests/netbed,
# default 250: the /24 holds 253): collrun on every host, collcheck env,
# colltop --once, and collstack on a hung job of K x 4 ranks. Each run is
# checked (the right hosts and ranks in its output, exit 0 or collstack's
# "culprit named" 1) and measured: wall time, the client's own CPU (user +
# sys of it and its children on this machine: the front end and its SSH
# sessions, not the remote processes) and peak RSS, and the whole machine's
# CPU over the same span, since every host's sshd, worker and rank share its
# cores. With -t K every run is made twice, side by side: started flat from
# here (--tree 0) and through relays (--tree K); the front end's SSH sessions
# at their most are counted too. Prints a markdown table; exits 1 if a run
# failed its check.
#
#   bench/scale_bed.sh [-k HOSTS] [-n RANKS_PER_HOST] [-b BUILD_DIR] [-f FANOUT]
#                      [-t TREE_WIDTH] [--no-collstack]
#
# Needs root. The bed is torn down however the script ends. On a 2-core
# machine the hosts' sshds and workers bound the wall times: a SSH handshake
# that queues for the CPU behind 250 others is not a slow launcher, so the
# runs use --connect-timeout 30 (a limit on each step of the SSH start),
# colltop --dead-after 15, collstack -T 900, and the hung job's ranks a
# keep-alive limit (COLL_KEEPALIVE_LIMIT) and an op timeout (COLL_TIMEOUT)
# longer than collstack's -T, given on the ranks' command line: exported here
# they reached collrun only. At 250 hosts, with the defaults, a rank went 31 s
# without a keep-alive while 250 workers read stacks on the 2 CPUs, its root
# declared it dead, and the whole job exited while collstack read it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
k=250 per=4 build=build fanout=16 stacks=1 trees=0
while [ $# -gt 0 ]; do
	case $1 in
	-k) k=$2; shift 2 ;;
	-n) per=$2; shift 2 ;;
	-b) build=$2; shift 2 ;;
	-f) fanout=$2; shift 2 ;;
	-t) [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "scale_bed: -t must be a tree width of 1 or more" >&2; exit 2; }
		trees="0 $2"; shift 2 ;;
	--no-collstack) stacks=0; shift ;;
	*) echo "usage: $0 [-k HOSTS] [-n RANKS_PER_HOST] [-b BUILD_DIR] [-f FANOUT] [-t TREE_WIDTH] [--no-collstack]" >&2
		exit 2 ;;
	esac
done
[[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 2 ] && [ "$k" -le 253 ] || { echo "scale_bed: -k must be 2..253" >&2; exit 2; }
case $build in /*) BIN=$build/cmd ;; *) BIN=$ROOT/$build/cmd ;; esac
[ -x "$BIN/collrun" ] || { echo "scale_bed: build first ($BIN/collrun is missing)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/coll-scale.XXXXXX)
BED=$WORK/bed
export COLL_JOB_DIR=$WORK/jobs COLL_KEEPALIVE_LIMIT=2000
mkdir -p "$COLL_JOB_DIR"
JOBPID= tp=
cleanup() {
	set +e	# whatever fails here, the bed comes down
	[ -n "$JOBPID" ] && kill -- -"$JOBPID" 2>/dev/null
	[ -n "$tp" ] && pkill -P "$tp" 2>/dev/null
	sleep 1
	bash "$ROOT/tests/netbed/fixture.sh" down "$BED" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
width=$([ "$k" -gt 99 ] && echo 3 || echo 2)
HOSTS=$(printf "node[%0${width}d-%0${width}d]" 1 "$k")
CFG=$BED/ssh_config
SSHOPTS=(-F "$CFG" --fanout "$fanout" --connect-timeout 30)
failed=0
rows=()

cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)

sessions() { ss -Htn state established "( dport = :22 )" | awk '{print $4}' | grep -c "^$NET\." || true; }
# The most SSH sessions this machine held to the bed at once, sampled until $1
# ends, less the $2 held before it started (the hung job's, for collstack).
# The sampling (ss every 0.2 s) is in the machine CPU column, a small part.
peak_sessions() {
	local most=0 n
	while kill -0 "$1" 2>/dev/null; do
		n=$(sessions)
		[ "$n" -gt "$most" ] && most=$n
		sleep 0.2
	done
	echo $((most > $2 ? most - $2 : 0))
}

# measure NAME CHECK CMD...: run CMD (output in $WORK/NAME.out, .err, NAME made a file name), check it
# with the shell function CHECK, add a row
measure() {
	local name=$1 check=$2 c0 c1 t rc=0 f sess before
	shift 2
	f=$WORK/$(printf %s "$name" | tr -c 'A-Za-z0-9\n' _)
	before=$(sessions)
	c0=$(cpu_ticks)
	/usr/bin/time -f '%e %U %S %M' -o "$f.time" "$@" >"$f.out" 2>"$f.err" &
	tp=$!
	sess=$(peak_sessions $tp "$before")
	wait $tp || rc=$?
	c1=$(cpu_ticks)
	# time(1) writes "Command exited with non-zero status N" first when it is not 0.
	read -r wall user sys rss < <(tail -n 1 "$f.time") || { wall=0 user=0 sys=0 rss=0; }
	if "$check" "$rc" "$f.out" "$f.err"; then
		t=ok
	else
		t="FAILED (exit $rc)"
		failed=1
		echo "scale_bed: $name failed its check (exit $rc); its stdout begins, its stderr ends:" >&2
		head -n 12 "$f.out" >&2
		echo "--" >&2
		tail -n 5 "$f.err" >&2
	fi
	rows+=("$(awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
		-v m="$(((c1 - c0) * 10 / hz))" -v t="$t" -v p="$sess" 'BEGIN {
		c = u + s; m /= 10; printf "| %s | %.1f | %.2f | %.0f | %d | %.1f | %.1f%% | %s |", n, w, c, r / 1024,
		p, m, (m > 0 ? 100 * c / m : 0), t }')")
}

# Checks: (exit code, stdout, stderr) -> 0 if the run did what it is for.
check_collrun() { [ "$1" -eq 0 ] && [ "$(sort -u "$2" | grep -c '^node')" -eq "$k" ]; }
check_env() { [ "$1" -eq 0 ] && [ "$(grep -c '^node[0-9]* *OK$' "$2")" -eq "$k" ]; }
check_top() { [ "$1" -eq 0 ] && grep -q "^colltop: $k ranks on $k hosts" "$2" &&
	[ "$(grep -cE '^ *[0-9]+ +node[0-9]+ +ok ' "$2")" -eq "$k" ]; }
check_stack() {
	[ "$1" -eq 1 ] && grep -q "^collstack: $((k * per)) ranks on $k hosts" "$2" &&
		grep -q "^rank 5 (node0*2, pid [0-9]*) is in allreduce seq 20" "$2"
}

t0=$SECONDS
bash "$ROOT/tests/netbed/fixture.sh" up "$BED" "$k" "sc$$" >"$WORK/bed.out" 2>&1 ||
	{ cat "$WORK/bed.out" >&2; exit 1; }
[ -f "$BED/unavailable" ] && { echo "scale_bed: needs root, iproute2 and openssh-server" >&2; exit 77; }
bed_s=$((SECONDS - t0))

NET=$(sed -n 's/^\tHostName \(10\.213\.[0-9]*\)\.1$/\1/p' "$CFG")
for t in $trees; do
	tn=$([ "$t" = 0 ] && echo flat || echo "tree $t")
	measure "collrun hostname, $tn" check_collrun "$BIN/collrun" "${SSHOPTS[@]}" --tree "$t" -H "$HOSTS" \
		--no-label hostname
	measure "collcheck env, $tn" check_env "$BIN/collcheck" env "${SSHOPTS[@]}" --tree "$t" -H "$HOSTS"
	measure "colltop --once, $tn" check_top "$BIN/colltop" "${SSHOPTS[@]}" --tree "$t" -H "$HOSTS" --no-gpu \
		--once --dead-after 15
done
if [ "$stacks" = 1 ]; then
	# A job of K x per ranks of coll's all-reduce in which rank 5 hangs in op 20.
	setsid "$BIN/collrun" "${SSHOPTS[@]}" --tree 0 -H "$HOSTS" -N "$per" \
		env COLL_FAULT=5@20:hang COLL_TIMEOUT=3600 COLL_KEEPALIVE_LIMIT=2000 \
		"$BIN/collcheck" allreduce -b 8 -e 8 -n 1000000 -w 0 >"$WORK/job.out" 2>&1 &
	JOBPID=$!
	started=
	for _ in $(seq 600); do
		jobid=$(ls "$COLL_JOB_DIR" | sed -n 's/\.json$//p' | head -1)
		if [ -n "$jobid" ] && [ "$(ls /dev/shm/coll."$jobid".* 2>/dev/null | wc -l)" -ge $((k * per)) ]; then
			started=1
			break
		fi
		sleep 1
	done
	[ -n "$started" ] || { echo "scale_bed: the hung job of $((k * per)) ranks did not start" >&2; exit 1; }
	sleep 10	# every rank reaches op 20
	for t in $trees; do
		tn=$([ "$t" = 0 ] && echo flat || echo "tree $t")
		measure "collstack ($per ranks/host), $tn" check_stack "$BIN/collstack" "${SSHOPTS[@]}" --tree "$t" \
			-T 900 --no-color
	done
	kill -- -"$JOBPID" 2>/dev/null || true
	wait "$JOBPID" 2>/dev/null || true
	rm -f /dev/shm/coll."$jobid".*
	JOBPID=
fi

echo "# the suite on $k netns hosts of one $(nproc)-CPU machine ($(git -C "$ROOT" rev-parse --short HEAD), $build)"
echo
echo "bed up in ${bed_s} s; fanout $fanout; client = the command and its children on this machine"
echo
echo "| run | wall s | client CPU s | client peak RSS MiB | client SSH sessions | machine CPU s | client share | check |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"
