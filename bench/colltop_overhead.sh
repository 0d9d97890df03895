#!/bin/bash
# colltop's own cost at 1 Hz on K netns hosts (default 8) over SSH: CPU of the
# dashboard and of each host's worker over a window of W seconds (default 60),
# beside top -b -d 1 on one host in the same window (the tool every host
# already runs, as the reference), the dashboard serving --listen's /metrics
# to a curl loop that scrapes it every second (as Prometheus would), with the
# scrapes' time and size; and the bytes a host sends per second
# (probe, frames, SSH) against the link bandwidth collcheck links measures
# between the same hosts. Prints a markdown table.
#
#   bench/colltop_overhead.sh [-b BUILD_DIR] [-k HOSTS] [-w SECONDS] [-L]
#
# BUILD_DIR is relative to the tree or absolute. -L skips collcheck links (the
# share of the link is then n/a; bench/compare.sh does not read it).
#
# Needs root (it builds a test bed with tests/netbed/netbed.sh and tears it
# down however it ends). On a machine of 2 cores the K hosts share them: the
# figures are each process's own CPU time, which sharing does not inflate.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
build=build k=8 w=60 links=1
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$2; shift 2 ;;
	-k) k=$2; shift 2 ;;
	-w) w=$2; shift 2 ;;
	-L) links=0; shift ;;
	*) echo "usage: $0 [-b BUILD_DIR] [-k HOSTS] [-w SECONDS] [-L]" >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$ROOT/$build ;; esac
BIN=$build/cmd
NB="$ROOT/tests/netbed/netbed.sh"
BED=$(mktemp -d /tmp/coll-bench-bed.XXXXXX)
export COLL_STATUS_DIR=$BED/shm COLL_JOB_DIR=$BED/jobs
mkdir -p "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; bash "$NB" down "$BED" >/dev/null 2>&1 || true; rm -rf "$BED"' EXIT
bash "$NB" up "$BED" "$k" cbt$$ >/dev/null
HOSTS=$(printf 'node[01-%02d]' "$k")
CFG=$BED/ssh_config
HZ=$(getconf CLK_TCK)

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
txb() { bash "$NB" exec "$BED" "$1" cat /sys/class/net/eth0/statistics/tx_bytes; }

# The links between the hosts, as collcheck measures them (GB/s each way).
link=nan
[ "$links" = 0 ] || "$BIN/collcheck" links -F "$CFG" -H "$HOSTS" --json >"$BED/links.json" 2>/dev/null || true
[ "$links" = 0 ] || link=$(python3 -c 'import json,sys,statistics as s
d=json.load(open(sys.argv[1]))["links"]["bw_gbs"]
print(s.median([v for i,row in enumerate(d) for j,v in enumerate(row) if i!=j and v and v>0]))' "$BED/links.json")

# A build from before --listen (bench/compare.sh's "before") runs without it.
listen=""
case $("$BIN/colltop" --help) in *--listen*) listen=1 ;; esac
# More iterations than the window needs (the trap stops it): on a loaded machine the
# setup before the window can take longer than it does on an idle one.
"$BIN/colltop" -F "$CFG" -H "$HOSTS" --no-gpu --json --interval 1 --iterations $((w + 60)) \
	${listen:+--listen 127.0.0.1:0} >"$BED/frames" 2>"$BED/err" &
front=$!
pids="$front"
# A scrape every second, as Prometheus's scrape_interval: 1s would: each one's time and size.
: >"$BED/scrapes"
mport=""
for _ in $(seq 100); do
	[ -n "$listen" ] && [ -z "$mport" ] || break
	mport=$(sed -n 's/^colltop: serving Prometheus metrics on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$BED/err")
	sleep 0.1
done
[ -n "$mport" ] || listen=""
[ -z "$listen" ] || while :; do
	curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "http://127.0.0.1:$mport/metrics" \
		>>"$BED/scrapes" || true
	sleep 1
done &
[ -z "$listen" ] || pids="$pids $!"
bash "$NB" exec "$BED" 1 top -b -d 1 >/dev/null &
pids="$pids $!"
sleep 8
# Only this bed's processes: others may run colltop and top on the machine at the same time.
declare -A bedns
for i in $(seq 1 "$k"); do bedns[$(bash "$NB" exec "$BED" "$i" readlink /proc/self/ns/net)]=$i; done
inbed() { # inbed PID...: those whose network namespace is one of the bed's hosts
	local p n
	for p in "$@"; do
		n=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
		[ -z "${bedns[$n]:-}" ] || echo "$p"
	done
}
# shellcheck disable=SC2046  # pgrep's pids, one word each
topp=$(inbed $(pgrep -x top) | head -1)
# shellcheck disable=SC2046
workers=$(inbed $(pgrep -x colltop | grep -vx "$front") | tr '\n' ' ')
declare -A t0 b0
for p in $front $topp $workers; do t0[$p]=$(ticks "$p"); done
for i in $(seq 1 "$k"); do b0[$i]=$(txb "$i"); done
: >"$BED/scrapes"
sleep "$w"
declare -A t1 b1
for p in $front $topp $workers; do t1[$p]=$(ticks "$p"); done
for i in $(seq 1 "$k"); do b1[$i]=$(txb "$i"); done
pct() { python3 -c "print(f'{($2 - $1) / $HZ / $w * 100:.3f}')"; }
wk=""
for p in $workers; do wk="$wk $(pct "${t0[$p]}" "${t1[$p]}")"; done
tx=""
for i in $(seq 1 "$k"); do tx="$tx $(( (b1[$i] - b0[$i]) / w ))"; done
python3 - "$w" "$k" "$(pct "${t0[$front]}" "${t1[$front]}")" "$(pct "${t0[$topp]}" "${t1[$topp]}")" \
	"$link" "$wk" "$tx" "$(wc -l <"$BED/frames")" "$BED/scrapes" <<'EOF'
import statistics as s, sys
w, k, front, top, link = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
wk = [float(x) for x in sys.argv[6].split()]
tx = [int(x) for x in sys.argv[7].split()]
print(f"colltop at 1 Hz on {k} netns hosts over SSH, {w} s window, 64 KiB probe ({sys.argv[8]} frames)\n")
print("| what | colltop | top -b -d 1 (one host) | ratio |")
print("|---|---:|---:|---:|")
print(f"| worker CPU, % of one core (median of {len(wk)}) | {s.median(wk):.3f} | {top:.3f} | {s.median(wk) / top if top else float('nan'):.2f} |")
print(f"| worker CPU, % of one core (max) | {max(wk):.3f} | | |")
# The mean of all workers: one worker's ticks over a short window are few, their sum is not.
print(f"| worker CPU, % of one core (mean of {len(wk)}) | {s.mean(wk):.3f} | | |")
sc = [l.split() for l in open(sys.argv[9]) if l.strip()]
print(f"| dashboard CPU, % of one core{' (serving --listen, scraped every second)' if sc else ''} | {front:.3f} | | |")
if sc:
    ms = [float(t) * 1e3 for t, _ in sc]
    print(f"| a scrape of /metrics: median time ({len(sc)} scrapes), max | {s.median(ms):.2f} ms, {max(ms):.2f} ms | | |")
    print(f"| a scrape of /metrics: size | {int(s.median(int(b) for _, b in sc))} B | | |")
print()
print("| what | per host | link (collcheck links) | share of the link |")
print("|---|---:|---:|---:|")
print(f"| bytes sent per second (median) | {s.median(tx)} B/s | {link:.3f} GB/s | {s.median(tx) / (link * 1e9) * 100:.4f} % |")
print(f"| bytes sent per second (max: rank 0's host, frames too) | {max(tx)} B/s | | {max(tx) / (link * 1e9) * 100:.4f} % |")
EOF
