#!/usr/bin/env bash
#
# allreduce_vs_mpi.sh: coll's all-reduce (collcheck allreduce) against Open MPI's
# MPI_Allreduce (bench/mpi_allreduce.c) on one machine, 4 local ranks, all
# traffic on loopback. Prints a side-by-side table of medians over several
# alternating repetitions and checks two targets:
#   busbw at >= 64 MiB >= 1.3x Open MPI       (out-of-place)
#   busbw at every size >= 64 KiB >= 1.3x     (out-of-place; issue 12's mid-curve)
#   8-byte latency     <= 0.8x Open MPI       (out-of-place)
#
# See bench/README.md. Every setting is an environment variable, most also a flag.
#
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/allreduce_vs_mpi.sh [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP]
                                 [-r REPS] [-N RANKS] [-m MODE] [-o DIR]

  -b SIZE    smallest size, bytes, K/M/G suffixes        MINBYTES     (8)
  -e SIZE    largest size                                MAXBYTES     (256M)
  -f F       multiply the size by F each step            FACTOR       (4)
  -n N       timed iterations for every size             ITERS        (per tier, below)
  -w N       warmup iterations for every size            WARMUP       (per tier, below)
  -r N       repetitions of each side; medians reported  REPS         (3)
  -N N       ranks                                       NRANKS       (4)
  -m MODE    primary table: out_of_place or in_place     MODE         (out_of_place)
  -o DIR     keep the raw outputs (JSON, stderr) in DIR  OUTDIR       (temp, removed)

Without -n/-w, iterations depend on the size (tiers):
  size <= SMALL_MAX (32K):  SMALL_ITERS (1000) timed, SMALL_WARMUP (100) warmup
  size <= MID_MAX   (8M):   MID_ITERS   (50),         MID_WARMUP   (5)
  larger:                   LARGE_ITERS (8),          LARGE_WARMUP (2)
Other environment:
  INCLUDE_MAX=1     also measure MAXBYTES itself when the -f grid skips it (8 * 4^k
                    never equals 256M, so 256M is added as an extra row)
  VERIFY=1          first run both sides once with result checking (-c 1, 1 iteration)
  COLLCHECK=PATH    the coll probe (build/cmd/collcheck)
  MPICC, MPIRUN     compilers/launchers (mpicc, mpirun)
  MPI_BIN=PATH      a prebuilt mpi_allreduce, for a machine without mpicc
  MPIRUN_EXTRA      extra mpirun arguments, appended to the fixed ones
  RUN_TIMEOUT=900   seconds before one tool invocation is killed
  COLL_SOCKET_IFNAME (default "=lo"): coll's interface selection
Exit status: 0 when every run completed with no wrong results, 1 otherwise,
2 on a usage or setup error. The PASS/FAIL of the targets does not change it.
EOF
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

MINBYTES=${MINBYTES:-8}
MAXBYTES=${MAXBYTES:-256M}
FACTOR=${FACTOR:-4}
ITERS=${ITERS:-}
WARMUP=${WARMUP:-}
REPS=${REPS:-3}
NRANKS=${NRANKS:-4}
MODE=${MODE:-out_of_place}
OUTDIR=${OUTDIR:-}
SMALL_MAX=${SMALL_MAX:-32K}
MID_MAX=${MID_MAX:-8M}
SMALL_ITERS=${SMALL_ITERS:-1000}
SMALL_WARMUP=${SMALL_WARMUP:-100}
MID_ITERS=${MID_ITERS:-50}
MID_WARMUP=${MID_WARMUP:-5}
LARGE_ITERS=${LARGE_ITERS:-8}
LARGE_WARMUP=${LARGE_WARMUP:-2}
INCLUDE_MAX=${INCLUDE_MAX:-1}
VERIFY=${VERIFY:-1}
COLLCHECK=${COLLCHECK:-$ROOT/build/cmd/collcheck}
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_EXTRA=${MPIRUN_EXTRA:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
export COLL_SOCKET_IFNAME=${COLL_SOCKET_IFNAME-=lo}

while getopts "b:e:f:n:w:r:N:m:o:h" opt; do
	case $opt in
	b) MINBYTES=$OPTARG ;;
	e) MAXBYTES=$OPTARG ;;
	f) FACTOR=$OPTARG ;;
	n) ITERS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	r) REPS=$OPTARG ;;
	N) NRANKS=$OPTARG ;;
	m) MODE=$OPTARG ;;
	o) OUTDIR=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then
	echo "allreduce_vs_mpi.sh: unexpected argument '$1'" >&2
	usage >&2
	exit 2
fi
case $MODE in
out_of_place | in_place) ;;
*) echo "allreduce_vs_mpi.sh: -m must be out_of_place or in_place" >&2; exit 2 ;;
esac
case $REPS in
'' | *[!0-9]* | 0) echo "allreduce_vs_mpi.sh: -r must be a positive integer" >&2; exit 2 ;;
esac

MPI_BIN=${MPI_BIN:-}
need_cc=$MPICC
[ -n "$MPI_BIN" ] && need_cc=
for tool in python3 $need_cc "$MPIRUN" timeout; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "allreduce_vs_mpi.sh: '$tool' not found" >&2
		exit 2
	fi
done
if [ ! -x "$COLLCHECK" ]; then
	echo "allreduce_vs_mpi.sh: $COLLCHECK is missing; build it with:" >&2
	echo "  cd $ROOT/build && cmake .. && make -j2" >&2
	exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/allreduce_vs_mpi.XXXXXX")
# shellcheck disable=SC2317  # called through the trap
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
if [ -n "$OUTDIR" ]; then
	mkdir -p "$OUTDIR"
	RAW=$(cd "$OUTDIR" && pwd)
else
	RAW=$WORK/raw
	mkdir -p "$RAW"
fi

# ---------------------------------------------------------------------------
# Python helper (stdlib only): plans the size segments and writes the report.
# ---------------------------------------------------------------------------
cat >"$WORK/helper.py" <<'PYEOF'
import json, os, statistics, sys

def parse_size(s):
    s = s.strip()
    mul = 1
    if s and s[-1] in "kKmMgG":
        mul = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[s[-1].lower()]
        s = s[:-1]
    if not s.isdigit():
        raise SystemExit("bad size %r" % s)
    return int(s) * mul

def human(b):
    for unit, sh in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << sh and b % (1 << sh) == 0:
            return "%d %s" % (b >> sh, unit)
    return "%d B" % b

def grid(minb, maxb, factor):
    # Same sequence as collcheck (perf_next_size) and mpi_allreduce.
    out, s = [], minb
    while s <= maxb:
        if s // 4 > 0:
            out.append(s)
        n = int(s * factor)
        s = n if n > s else s + 1
    return out

def plan(env):
    minb, maxb = parse_size(env["MINBYTES"]), parse_size(env["MAXBYTES"])
    factor = float(env["FACTOR"])
    if factor <= 1:
        raise SystemExit("-f must be > 1")
    if minb > maxb:
        raise SystemExit("-b must not be larger than -e")
    sizes = grid(minb, maxb, factor)
    extra = None
    if env["INCLUDE_MAX"] == "1" and maxb // 4 > 0 and (not sizes or sizes[-1] != maxb):
        extra = maxb
    small, mid = parse_size(env["SMALL_MAX"]), parse_size(env["MID_MAX"])

    def tier(s):
        if s <= small:
            n, w = env["SMALL_ITERS"], env["SMALL_WARMUP"]
        elif s <= mid:
            n, w = env["MID_ITERS"], env["MID_WARMUP"]
        else:
            n, w = env["LARGE_ITERS"], env["LARGE_WARMUP"]
        return (env["ITERS"] or n, env["WARMUP"] or w)

    segs = []
    for s in sizes:
        t = tier(s)
        if segs and (segs[-1][3], segs[-1][4]) == t:
            segs[-1][1] = s
        else:
            segs.append([s, s, factor, t[0], t[1], False])
    if extra is not None:
        t = tier(extra)
        segs.append([extra, extra, factor, t[0], t[1], True])
    for b, e, f, n, w, x in segs:
        print(b, e, "%g" % f, n, w, int(x))

def load(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None

def report(manifest, mode, header_json):
    hdr = json.load(open(header_json))
    nranks = int(hdr["nranks"])
    factor = 2.0 * (nranks - 1) / nranks if nranks > 1 else 0.0
    runs = []
    with open(manifest) as fh:
        for line in fh:
            kind, side, rep, seg, rc, jpath, epath, n, w, cmd = line.rstrip("\n").split("\t", 9)
            runs.append(dict(kind=kind, side=side, rep=int(rep), seg=int(seg), rc=int(rc),
                             json=jpath, err=epath, n=int(n), w=int(w), cmd=cmd))
    problems = []
    times = {}    # (side, mode, size) -> [time_us per rep]
    iters = {}    # size -> (n, w)
    extras = set()
    sizes = set()
    wrong_rows = []
    for r in runs:
        doc = load(r["json"])
        if r["rc"] != 0 or doc is None:
            why = "exit status %d" % r["rc"]
            if r["rc"] == 124:
                why += " (killed by timeout)"
            if doc is None:
                why += ", no parseable JSON on stdout"
            problems.append("%s %s run failed (%s): %s" % (r["side"], r["kind"], why, r["cmd"]))
            if doc is None:
                continue
        if not doc.get("results") and (doc.get("wrong") or 0) > 0:
            wrong_rows.append((r, "total", doc["wrong"]))
        for row in doc.get("results", []):
            size = int(row["size"])
            for m in ("out_of_place", "in_place"):
                wr = row[m].get("wrong", -1)
                if wr is not None and wr > 0:
                    wrong_rows.append((r, "%d B %s" % (size, m), wr))
            if r["kind"] != "timed":
                continue
            sizes.add(size)
            iters[size] = (r["n"], r["w"])
            if r["seg"] < 0:
                extras.add(size)
            for m in ("out_of_place", "in_place"):
                times.setdefault((r["side"], m, size), []).append(float(row[m]["time_us"]))
    for r, where, wr in wrong_rows:
        problems.append("%s reports wrong=%s at %s: %s" % (r["side"], wr, where, r["cmd"]))

    def med(side, m, size):
        v = times.get((side, m, size), [])
        return (statistics.median(v), v) if v else (None, v)

    def busbw(size, t):
        return size / (t * 1e3) * factor if t else None

    def fmt(x, spec, width):
        return (spec % x).rjust(width) if x is not None else "n/a".rjust(width)

    def spread(v):
        if len(v) < 2:
            return None
        m = statistics.median(v)
        return 100.0 * (max(v) - min(v)) / m if m else None

    def table(m, title):
        print(title)
        cols = ("size", "bytes", "coll time_us", "MPI time_us", "coll busbw", "MPI busbw",
                "busbw ratio", "latency ratio", "iters", "coll spread", "MPI spread")
        sub = ("", "", "(median)", "(median)", "(GB/s)", "(GB/s)", "coll/MPI", "coll/MPI",
               "(-n/-w)", "(max-min)", "(max-min)")
        widths = (9, 11, 13, 13, 11, 11, 12, 14, 10, 12, 12)
        print("  ".join(c.rjust(wd) for c, wd in zip(cols, widths)))
        print("  ".join(c.rjust(wd) for c, wd in zip(sub, widths)))
        print("  ".join("-" * wd for wd in widths))
        out = {}
        for size in sorted(sizes):
            tc, vc = med("coll", m, size)
            tm, vm = med("mpi", m, size)
            bc, bm = busbw(size, tc), busbw(size, tm)
            br = bc / bm if bc is not None and bm else None
            lr = tc / tm if tc is not None and tm else None
            out[size] = (tc, tm, bc, bm, br, lr)
            sc, sm = spread(vc), spread(vm)
            n, w = iters.get(size, (0, 0))
            label = human(size) + ("*" if size in extras else "")
            cells = (label.rjust(widths[0]), str(size).rjust(widths[1]),
                     fmt(tc, "%.2f", widths[2]), fmt(tm, "%.2f", widths[3]),
                     fmt(bc, "%.4f", widths[4]), fmt(bm, "%.4f", widths[5]),
                     fmt(br, "%.3fx", widths[6]), fmt(lr, "%.3fx", widths[7]),
                     ("%d/%d" % (n, w)).rjust(widths[8]),
                     fmt(sc, "%.1f%%", widths[9]), fmt(sm, "%.1f%%", widths[10]))
            print("  ".join(cells))
        if extras:
            print("  * not on the -b/-f grid; measured because it is -e (INCLUDE_MAX=1)")
        return out

    def targets(res, label):
        big = [(s, res[s][4]) for s in sorted(res) if s >= 64 << 20]
        lines = []
        if not big or any(r is None for _, r in big):
            v1 = "N/A"
            d1 = "no complete size >= 64 MiB measured"
        else:
            ok = all(r >= 1.3 for _, r in big)
            v1 = "PASS" if ok else "FAIL"
            d1 = "measured coll/MPI busbw: " + ", ".join("%s %.3fx" % (human(s), r) for s, r in big)
            d1 += "; min %.3fx" % min(r for _, r in big)
        lines.append("  [%s] busbw at >= 64 MiB >= 1.3x Open MPI  (%s; %s)" % (v1, label, d1))
        # The middle of the curve, where the kernel's buffers and the caches decide.
        mid = [(s, res[s][4]) for s in sorted(res) if s >= 64 << 10]
        if not mid or any(r is None for _, r in mid):
            vm, dm = "N/A", "no complete size >= 64 KiB measured"
        else:
            vm = "PASS" if all(r >= 1.3 for _, r in mid) else "FAIL"
            worst = min(mid, key=lambda t: t[1])
            dm = "min %.3fx at %s" % (worst[1], human(worst[0]))
            low = [human(s) for s, r in mid if r < 1.3]
            if low:
                dm += "; under 1.3x at " + ", ".join(low)
        lines.append("  [%s] busbw at every size >= 64 KiB >= 1.3x Open MPI  (%s; %s)" %
                     (vm, label, dm))
        r8 = res.get(8)
        if r8 is None or r8[5] is None:
            v2, d2 = "N/A", "8 B not measured"
        else:
            v2 = "PASS" if r8[5] <= 0.8 else "FAIL"
            d2 = "measured coll/MPI time: %.3fx (coll %.2f us, MPI %.2f us)" % (r8[5], r8[0], r8[1])
        lines.append("  [%s] 8-byte latency <= 0.8x Open MPI      (%s; %s)" % (v2, label, d2))
        return lines

    other = "in_place" if mode == "out_of_place" else "out_of_place"
    name = {"out_of_place": "out-of-place", "in_place": "in-place (MPI_IN_PLACE)"}
    print()
    prim = table(mode, "== PRIMARY: %s, %d ranks, median of %d repetitions per side ==" %
                 (name[mode], nranks, int(hdr["reps"])))
    print()
    sec = table(other, "== secondary (for information): %s ==" % name[other])
    print()
    print("== SUMMARY (targets judged on %s) ==" % name[mode])
    for l in targets(prim, name[mode]):
        print(l)
    print("  for information, the same checks on %s:" % name[other])
    for l in targets(sec, name[other]):
        print("  " + l)
    print()
    print("Reading: busbw ratio > 1 means coll moves data faster; latency ratio < 1 means coll")
    print("is quicker (time coll / time MPI). spread = (max-min)/median over the repetitions.")

    # stderr of every run, deduplicated
    seen = {}
    for r in runs:
        try:
            with open(r["err"], errors="replace") as fh:
                for line in fh:
                    line = line.rstrip()
                    if line:
                        key = (r["side"], line)
                        seen[key] = seen.get(key, 0) + 1
        except OSError:
            pass
    print()
    print("== stderr of the runs (deduplicated, count in brackets) ==")
    if not seen:
        print("  (none)")
    for (side, line), c in sorted(seen.items()):
        print("  %-4s [%d] %s" % (side, c, line[:300]))
    print()
    print("== problems ==")
    if not problems:
        print("  none: every run exited 0 and no run reported wrong > 0")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0

if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(os.environ)
    elif sys.argv[1] == "report":
        sys.exit(report(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif sys.argv[1] == "field":
        doc = load(sys.argv[2])
        print("" if doc is None else doc.get(sys.argv[3], ""))
PYEOF
PY="python3 $WORK/helper.py"

export MINBYTES MAXBYTES FACTOR ITERS WARMUP SMALL_MAX MID_MAX SMALL_ITERS SMALL_WARMUP \
	MID_ITERS MID_WARMUP LARGE_ITERS LARGE_WARMUP INCLUDE_MAX
if ! $PY plan >"$WORK/plan" 2>"$WORK/plan.err"; then
	echo "allreduce_vs_mpi.sh: $(cat "$WORK/plan.err")" >&2
	exit 2
fi
if [ ! -s "$WORK/plan" ]; then
	echo "allreduce_vs_mpi.sh: no sizes between $MINBYTES and $MAXBYTES" >&2
	exit 2
fi

# ---------------------------------------------------------------------------
# Build the MPI side.
# ---------------------------------------------------------------------------
MPIBIN=$WORK/mpi_allreduce
BUILD_CMD="$MPICC -O2 -Wall -Wextra -o $MPIBIN $HERE/mpi_allreduce.c"
[ -n "$MPI_BIN" ] && BUILD_CMD="cp $MPI_BIN $MPIBIN"
if ! $BUILD_CMD 2>"$WORK/build.err"; then
	echo "allreduce_vs_mpi.sh: building mpi_allreduce failed:" >&2
	cat "$WORK/build.err" >&2
	exit 2
fi

# Measure a private copy of collcheck: a rebuild of build/ during the run (core/ is
# being worked on) must not change the binary between repetitions. The front end
# starts its ranks from /proc/self/exe, so they run the copy too.
COLLBIN=$WORK/collcheck
cp "$COLLCHECK" "$COLLBIN"
COLL_SUM=$(sha256sum "$COLLBIN" | cut -c1-16)

MPIRUN_ARGS="--allow-run-as-root --oversubscribe -np $NRANKS --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
if [ -n "$MPIRUN_EXTRA" ]; then
	MPIRUN_ARGS="$MPIRUN_ARGS $MPIRUN_EXTRA"
fi

# ---------------------------------------------------------------------------
# Header.
# ---------------------------------------------------------------------------
git_rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git_dirty=$(git -C "$ROOT" status --porcelain -- core cmd 2>/dev/null | tr '\n' ' ')
echo "# allreduce_vs_mpi: coll vs Open MPI all-reduce, float sum, $NRANKS local ranks"
echo "# date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)   host: $(hostname)   cpus: $(nproc)"
echo "# kernel:      $(uname -sr)"
echo "# coll:        git $git_rev${git_dirty:+ (uncommitted in core/ cmd/: $git_dirty)}"
echo "# collcheck:   $COLLCHECK (built $(date -u -r "$COLLCHECK" +%Y-%m-%dT%H:%M:%SZ), sha256 $COLL_SUM..., run from the copy $COLLBIN)"
echo "# coll cmd:    COLL_SOCKET_IFNAME='$COLL_SOCKET_IFNAME' $COLLBIN allreduce --engine coll -N $NRANKS -b B -e E -f F -n N -w W -c 0 -d float -o sum --json"
echo "# mpi build:   $BUILD_CMD"
echo "# mpi cmd:     $MPIRUN $MPIRUN_ARGS $MPIBIN -b B -e E -f F -n N -w W -c 0 -d float -o sum --json"
echo "# mpi library: $("$MPIRUN" --version 2>/dev/null | head -n1)"
echo "# sizes:       $MINBYTES .. $MAXBYTES, factor $FACTOR; repetitions per side: $REPS (alternating, order swapped every repetition)"
echo "# segments (one invocation each per side and repetition; B E F N W extra):"
sed 's/^/#   /' "$WORK/plan"
echo "# raw outputs: $RAW${OUTDIR:+ (kept)}"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; anything else using the CPUs distorts the results)"
echo "#"

MANIFEST=$WORK/manifest
: >"$MANIFEST"
FAILED=0

# run KIND SIDE REP SEG B E F N W CHECK
run_one() {
	local kind=$1 side=$2 rep=$3 seg=$4 b=$5 e=$6 f=$7 n=$8 w=$9 c=${10}
	local tag="$kind.$side.r$rep.s$seg"
	local out="$RAW/$tag.json" err="$RAW/$tag.err" rc=0 cmd t0 t1
	if [ "$side" = coll ]; then
		cmd="$COLLBIN allreduce --engine coll -N $NRANKS -b $b -e $e -f $f -n $n -w $w -c $c -d float -o sum --json"
	else
		cmd="$MPIRUN $MPIRUN_ARGS $MPIBIN -b $b -e $e -f $f -n $n -w $w -c $c -d float -o sum --json"
	fi
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	timeout -k 10 "$RUN_TIMEOUT" $cmd >"$out" 2>"$err" </dev/null || rc=$?
	t1=$(date +%s.%N)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$side" "$rep" "$seg" "$rc" \
		"$out" "$err" "$n" "$w" "$cmd" >>"$MANIFEST"
	printf '  %-6s %-4s rep %s seg %2s  %10s..%-10s n=%-5s w=%-4s %6.1fs  rc=%s\n' "$kind" "$side" \
		"$rep" "$seg" "$b" "$e" "$n" "$w" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" "$rc"
	if [ "$rc" -ne 0 ]; then
		FAILED=1
		echo "    FAILED: $cmd" >&2
		sed 's/^/    | /' "$err" | tail -n 20 >&2
	fi
}

# Percentage of CPU time used by anything over one second, while this script
# itself is idle: other work on the machine distorts the measurements.
cpu_busy() {
	local a b
	a=$(head -n1 /proc/stat)
	sleep 1
	b=$(head -n1 /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x); split(b, y); tot = 0; idle = 0
		for (i = 2; i <= n; i++) tot += y[i] - x[i]
		idle = (y[5] - x[5]) + (y[6] - x[6])
		printf "%.0f", (tot > 0 ? 100 * (tot - idle) / tot : 0)
	}'
}

start=$(date +%s)
echo "# progress (idle check: CPU busy % over 1 s while no benchmark runs; should be ~0):"
if [ "$VERIFY" = 1 ]; then
	# One checked pass over every size (1 iteration, no warmup): #wrong must be 0.
	seg=0
	while read -r b e f n w x; do
		for side in coll mpi; do
			run_one verify "$side" 0 "$seg" "$b" "$e" "$f" 1 0 1
		done
		seg=$((seg + 1))
	done <"$WORK/plan"
fi
for rep in $(seq 1 "$REPS"); do
	if [ $((rep % 2)) -eq 1 ]; then order="coll mpi"; else order="mpi coll"; fi
	echo "  idle check before rep $rep: $(cpu_busy)% busy"
	seg=0
	while read -r b e f n w x; do
		s=$seg
		[ "$x" = 1 ] && s=-1
		for side in $order; do
			run_one timed "$side" "$rep" "$s" "$b" "$e" "$f" "$n" "$w" 0
		done
		seg=$((seg + 1))
	done <"$WORK/plan"
done
echo "  idle check after the last rep: $(cpu_busy)% busy"
echo "# benchmark time: $(($(date +%s) - start)) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! cmp -s "$COLLCHECK" "$COLLBIN"; then
	echo "# note: $COLLCHECK changed during the run (rebuilt?); the copy taken at the start was measured"
fi

# Effective Open MPI yield setting, as the MPI program read it through MPI_T.
first_mpi=$(awk -F'\t' '$1 == "timed" && $2 == "mpi" && $5 == 0 { print $6; exit }' "$MANIFEST")
if [ -n "$first_mpi" ]; then
	y=$($PY field "$first_mpi" yield_when_idle)
	echo "# Open MPI mpi_yield_when_idle in effect (MPI_T): $y  (1 = ranks yield the CPU while waiting)"
fi

printf '{"nranks": %s, "reps": %s}\n' "$NRANKS" "$REPS" >"$WORK/header.json"
rc=0
$PY report "$MANIFEST" "$MODE" "$WORK/header.json" || rc=$?
if [ "$FAILED" -ne 0 ] || [ "$rc" -ne 0 ]; then
	exit 1
fi
exit 0
