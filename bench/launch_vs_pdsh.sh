#!/bin/bash
# collrun's SSH launch against pdsh on network-namespace hosts (tests/netbed),
# in one run: `true` on K hosts, the same ed25519 keys, the same key exchange,
# cipher and MAC for both (forced below), the same fanout. Prints the median
# wall time of several alternating runs of each, the ratio, and the client
# CPU time per host. Needs root (namespaces) and pdsh (apt-get install pdsh).
#
#   bench/launch_vs_pdsh.sh [HOSTS...]      default: 32 128
#   RUNS=5 FANOUT=32 COLLRUN=build/cmd/collrun
#   BENCH_USER=collbench   log in as this user (created, with Debian's stock
#                          dot files, if missing) instead of root: root's shell
#                          startup files may cost more than either launcher
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
COLLRUN=${COLLRUN:-$ROOT/build/cmd/collrun}
RUNS=${RUNS:-5}
FANOUT=${FANOUT:-32}
SIZES=${*:-32 128}
BENCH_USER=${BENCH_USER:-root}
if [ "$BENCH_USER" != root ] && ! id "$BENCH_USER" >/dev/null 2>&1; then
	useradd -m -s /bin/bash "$BENCH_USER" && usermod -p '*' "$BENCH_USER"
fi
command -v pdsh >/dev/null || { echo "needs pdsh: apt-get install pdsh" >&2; exit 2; }
[ -x "$COLLRUN" ] || { echo "build collrun first ($COLLRUN)" >&2; exit 2; }
WORK=$(mktemp -d)
chmod 755 "$WORK"	# the bench user's sshd must reach authorized_keys in the bed
BED=$WORK/bed
# A copy: a rebuild during the run must not swap the binary under the remote hosts.
cp "$COLLRUN" "$WORK/collrun"
COLLRUN=$WORK/collrun
cleanup() { bash "$ROOT/tests/netbed/netbed.sh" down "$BED" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

# The algorithms libssh2 1.10 negotiates with OpenSSH 9.2 (tests/netbed/README.md),
# forced on OpenSSH's client too so both do the same cryptographic work.
ALGS="-o KexAlgorithms=curve25519-sha256 -o HostKeyAlgorithms=ssh-ed25519 -o Ciphers=aes128-ctr -o MACs=hmac-sha2-256"

# time_run OUT CMD...: wall seconds and our children's CPU seconds, as "wall cpu".
time_run() {
	python3 - "$@" <<'EOPY'
import resource, subprocess, sys, time
out = sys.argv[1]
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic()
p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(out, "w"))
t1 = time.monotonic()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print("%.4f %.4f %d" % (t1 - t0, cpu, p.returncode))
EOPY
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-6s %-8s %12s %12s %10s %16s %16s\n' hosts tool "median s" "min s" "ratio" "client cpu ms" "cpu ms / host"
for K in $SIZES; do
	bash "$ROOT/tests/netbed/netbed.sh" up "$BED" "$K" benchl >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; exit 1; }
	chmod 755 "$BED"	# sshd reads authorized_keys as the user
	sed -i "s/^\tUser root$/\tUser $BENCH_USER/" "$BED/ssh_config"
	last=$(printf 'node%0*d' "$([ "$K" -gt 99 ] && echo 3 || echo 2)" "$K")
	first=${last%%[0-9]*}$(printf '%0*d' $((${#last} - 4)) 1)
	hosts="${first%%[0-9]*}[$(printf '%0*d' $((${#last} - 4)) 1)-${last#node}]"
	# pdsh runs OpenSSH with the bed's config; PDSH_SSH_ARGS replaces its default arguments.
	export PDSH_SSH_ARGS="-F $BED/ssh_config $ALGS -x -l%u %h"
	: >"$WORK/c" ; : >"$WORK/p"
	for i in $(seq "$RUNS"); do
		for tool in collrun pdsh; do
			if [ $tool = collrun ]; then
				set -- "$COLLRUN" -F "$BED/ssh_config" -H "$hosts" --fanout "$FANOUT" true
			else
				set -- pdsh -R ssh -f "$FANOUT" -w "$hosts" true
			fi
			res=$(time_run "$WORK/err" "$@")
			[ "${res##* }" = 0 ] || { echo "$tool failed:"; cat "$WORK/err"; exit 1; }
			echo "$res" >>"$WORK/${tool:0:1}"
		done
	done
	cm=$(cut -d' ' -f1 "$WORK/c" | median); pm=$(cut -d' ' -f1 "$WORK/p" | median)
	cmin=$(cut -d' ' -f1 "$WORK/c" | sort -n | head -1); pmin=$(cut -d' ' -f1 "$WORK/p" | sort -n | head -1)
	ccpu=$(cut -d' ' -f2 "$WORK/c" | median); pcpu=$(cut -d' ' -f2 "$WORK/p" | median)
	awk -v k="$K" -v cm="$cm" -v pm="$pm" -v cmin="$cmin" -v pmin="$pmin" -v cc="$ccpu" -v pc="$pcpu" 'BEGIN {
		printf "%-6d %-8s %12.3f %12.3f %9.2fx %16.1f %16.2f\n", k, "collrun", cm, cmin, cm / pm, cc * 1000, cc * 1000 / k
		printf "%-6d %-8s %12.3f %12.3f %10s %16.1f %16.2f\n", k, "pdsh", pm, pmin, "1.00x", pc * 1000, pc * 1000 / k }'
	bash "$ROOT/tests/netbed/netbed.sh" down "$BED" >/dev/null 2>&1
done
echo "ratio: collrun median wall time / pdsh's (target <= 0.5 at 32 hosts); $RUNS runs each, alternating;"
echo "fanout $FANOUT for both; user $BENCH_USER: each session runs that user's shell startup files."
