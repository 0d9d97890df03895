#!/usr/bin/env bash
#
# tcp_vs_iperf3.sh: coll's 2-rank all-reduce over TCP against iperf3 --bidir
# between the same two endpoints, in one run. An all-reduce sends and
# receives at once, so its bus bandwidth is compared with iperf3's rate per
# direction with both directions busy, at iperf3's best stream count K.
#
#   loopback (default): both ends on 127.0.0.1 (collcheck -N 2).
#   --netns:            two network-namespace hosts of tests/netbed joined by
#                       veth and a bridge; iperf3 runs in them, collrun starts
#                       one rank on each over SSH. Needs root.
#
# coll runs once per lane setting (COLL_NTHREADS x COLL_NSOCKS, and the
# automatic choice); the table gives busbw per size for each and the ratio
# of the best to iperf3's best, and 8 B latency against one lane. A setting
# T:S:Z also sets COLL_ZEROCOPY=Z (0, 1 or auto); -Z runs each T:S twice,
# with MSG_ZEROCOPY off (T:S:0) and forced on (T:S:1).
#
# usage: bench/tcp_vs_iperf3.sh [-B BUILD] [-o OUTDIR] [--netns] [-e MAX] [-t SECS]
#                               [-L "T:S[:Z] ..."] [-P "K K ..."] [-Z]
# -o keeps the raw outputs (JSON, logs) there; without it they are removed.
set -euo pipefail

BUILD=build OUT="" NETNS=0 MAXB=256M SECS=5 ZC=0
LANES="1:1 2:1 4:1 2:2 4:2 8:1 auto"
STREAMS="1 2 4 8"
while [ $# -gt 0 ]; do
	case $1 in
	-B) BUILD=$2; shift 2 ;;
	-o) OUT=$2; shift 2 ;;
	--netns) NETNS=1; shift ;;
	-e) MAXB=$2; shift 2 ;;
	-t) SECS=$2; shift 2 ;;
	-L) LANES=$2; shift 2 ;;
	-P) STREAMS=$2; shift 2 ;;
	-Z) ZC=1; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "tcp_vs_iperf3.sh: unknown argument '$1': see --help" >&2; exit 2 ;;
	esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$BUILD" && pwd)
IPERF3=${IPERF3:-$(command -v iperf3 || true)}
[ -x "$BUILD/cmd/collcheck" ] || { echo "tcp_vs_iperf3.sh: no $BUILD/cmd/collcheck: build first or pass -B" >&2; exit 2; }
[ -n "$IPERF3" ] && [ -x "$IPERF3" ] || { echo "tcp_vs_iperf3.sh: no iperf3: apt-get install iperf3, or set IPERF3" >&2; exit 2; }
# Without -o the raw outputs live in a temporary folder, removed at the end.
KEEP=1
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/tcp_vs_iperf3.XXXXXX)
	KEEP=0
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BED=""
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null || true
	[ -n "$BED" ] && bash "$HERE/../tests/netbed/netbed.sh" down "$BED" >/dev/null 2>&1 || true
	[ "$KEEP" = 1 ] || rm -rf "$OUT"
}
trap cleanup EXIT

if [ "$NETNS" = 1 ]; then
	BED=$OUT/bed
	NETBED_NET=${NETBED_NET:-231} bash "$HERE/../tests/netbed/netbed.sh" up "$BED" 2 tcpb >"$OUT/bed.log" 2>&1 ||
		{ echo "tcp_vs_iperf3.sh: the netns bed did not come up: $OUT/bed.log" >&2; exit 3; }
	SERVER_IP=$(sed -n 's/^\tHostName \(10\.213\.[0-9]*\.1\)$/\1/p' "$BED/ssh_config" | head -1)
	on1() { bash "$HERE/../tests/netbed/netbed.sh" exec "$BED" 1 "$@"; }
	on2() { bash "$HERE/../tests/netbed/netbed.sh" exec "$BED" 2 "$@"; }
	where="two netns hosts over veth and a bridge"
else
	SERVER_IP=127.0.0.1
	on1() { "$@"; }
	on2() { "$@"; }
	where="loopback"
fi

# iperf3 --bidir -P K: the slower direction's rate, GB/s.
best_k=0 best_gbs=0
declare -A IPERF
for k in $STREAMS; do
	port=$((5300 + k))
	on1 "$IPERF3" -s -p $port -1 >/dev/null 2>&1 &
	SRV=$!
	sleep 1
	on2 "$IPERF3" -c "$SERVER_IP" -p $port --bidir -P "$k" -t "$SECS" -J >"$OUT/iperf3-P$k.json" 2>&1 || true
	wait "$SRV" || true
	SRV=""
	gbs=$(python3 -c 'import json,sys
e = json.load(open(sys.argv[1]))["end"]
print("%.3f" % (min(e["sum_sent"]["bits_per_second"], e["sum_sent_bidir_reverse"]["bits_per_second"]) / 8e9))' \
		"$OUT/iperf3-P$k.json" 2>/dev/null || echo 0)
	IPERF[$k]=$gbs
	if python3 -c "import sys; sys.exit(not float('$gbs') > float('$best_gbs'))"; then
		best_k=$k best_gbs=$gbs
	fi
done

# coll: one sweep per lane setting.
if [ "$ZC" = 1 ]; then
	LANES=$(for spec in $LANES; do
		case $spec in auto | *:*:*) echo "$spec" ;; *) echo "$spec:0 $spec:1" ;; esac
	done | paste -sd' ')
fi
for spec in $LANES; do
	IFS=: read -r t k z <<<"$spec"
	envs=()
	if [ "$spec" != auto ]; then
		envs=("COLL_NTHREADS=$t" "COLL_NSOCKS=$k")
		[ -n "$z" ] && envs+=("COLL_ZEROCOPY=$z")
	fi
	if [ "$NETNS" = 1 ]; then
		env "${envs[@]}" "$BUILD/cmd/collrun" --no-label -F "$BED/ssh_config" -H node01,node02 \
			env "${envs[@]}" "$BUILD/cmd/collcheck" allreduce --engine coll -b 8 -e "$MAXB" -f 4 \
			-n 10 -w 3 -c 0 --json >"$OUT/coll-$spec.json" 2>"$OUT/coll-$spec.err"
	else
		env "${envs[@]}" "$BUILD/cmd/collcheck" allreduce -N 2 --engine coll -b 8 -e "$MAXB" -f 4 \
			-n 10 -w 3 -c 0 --json >"$OUT/coll-$spec.json" 2>"$OUT/coll-$spec.err"
	fi
done

python3 - "$OUT" "$where" "$best_k" "$best_gbs" "$LANES" "${STREAMS}" "$(for k in $STREAMS; do printf '%s=%s ' "$k" "${IPERF[$k]}"; done)" <<'EOPY'
import json, sys
out, where, best_k, best_gbs, lanes, streams, iperf = sys.argv[1:8]
best_gbs = float(best_gbs)
lanes = lanes.split()
runs = {}
for spec in lanes:
    try:
        d = json.load(open(f"{out}/coll-{spec}.json"))
    except Exception as e:
        print(f"coll-{spec}: no result ({e}); see {out}/coll-{spec}.err")
        continue
    runs[spec] = {r["size"]: r["out_of_place"] for r in d["results"]}
    runs[spec]["_where"] = d.get("ranks", [{}])
print(f"## coll all-reduce (2 ranks) against iperf3 --bidir, {where}\n")
print("| iperf3 streams K | GB/s per direction |\n|---:|---:|")
for kv in iperf.split():
    k, v = kv.split("=")
    print(f"| {k} | {float(v):.3f} |")
print(f"\niperf3's best: K = {best_k}, {best_gbs:.3f} GB/s per direction.\n")
specs = [s for s in lanes if s in runs]
if not specs:
    sys.exit(1)
sizes = sorted(k for k in runs[specs[0]] if k != "_where")
def label(s):
    f = s.split(":")
    return "x".join(f[:2]) + (f" zc={f[2]}" if len(f) > 2 else "")
head = " | ".join(f"{label(s)} busbw" for s in specs)
print(f"| size | {head} |")
print("|---:|" + "---:|" * len(specs))
for size in sizes:
    cells = " | ".join(f"{runs[s][size]['busbw']:.3f}" if size in runs[s] else "-" for s in specs)
    print(f"| {size} | {cells} |")
big = sizes[-1]
best = max(specs, key=lambda s: runs[s][big]["busbw"])
bb = runs[best][big]["busbw"]
print(f"\nAt {big} B: best lanes {label(best)} (threads x sockets), busbw {bb:.3f} GB/s = "
      f"{bb / best_gbs if best_gbs else 0:.2f}x iperf3's best (target >= 0.8x)")
if "auto" in runs:
    ab = runs["auto"][big]["busbw"]
    print(f"automatic choice: busbw {ab:.3f} GB/s = {ab / best_gbs if best_gbs else 0:.2f}x iperf3's best")
base = next((s for s in ("1:1", "1:1:0") if s in runs), None)
if base:
    one = runs[base][sizes[0]]["time_us"]
    for s in specs:
        print(f"8 B latency {label(s)}: {runs[s][sizes[0]]['time_us']:.2f} us = {runs[s][sizes[0]]['time_us'] / one:.2f}x {label(base)}")
EOPY
if [ "$KEEP" = 1 ]; then echo "raw outputs in $OUT"; fi
