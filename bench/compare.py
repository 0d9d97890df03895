#!/usr/bin/env python3
"""compare.py: bench/compare.sh's reader and table (stdlib only).

  compare.py parse BENCH SIDE REP RAW TSV   append RAW's metrics to TSV
  compare.py table TSV                      print the markdown table

TSV rows: bench, metric, side (before, after or ref), rep, value. A
reference (Open MPI, pdsh, gdb, top) is measured by every call of its bench,
on either build's turn, so its cell is the median of all those calls.
"""
import glob
import json
import os
import re
import statistics
import sys

# (bench, metric): (unit, lower_is_better, reference tool or None), in table order.
METRICS = {
    ("allreduce", "8 B time, out of place"): ("us", True, "Open MPI"),
    ("allreduce", "4 KiB time, out of place"): ("us", True, "Open MPI"),
    ("allreduce", "2 MiB busbw, out of place"): ("GB/s", False, "Open MPI"),
    ("launch", "wall time, median of the runs"): ("s", True, "pdsh"),
    ("launch", "client CPU, median"): ("ms", True, "pdsh"),
    ("init", "wall time, 1024 ranks"): ("s", True, None),
    ("init", "root bytes sent"): ("B", True, None),
    ("init", "root peak RSS"): ("KiB", True, None),
    ("collstack", "per process, all at once"): ("ms", True, "gdb"),
    ("collstack", "per process, --threads 1"): ("ms", True, "gdb"),
    ("collstack", "longest pause of a process"): ("ms", True, None),
    ("collstack", "most processes of the scale rows"): ("s", True, None),
    ("colltop", "worker CPU, mean of the hosts"): ("% core", True, "top"),
    ("colltop", "worker CPU, median of the hosts"): ("% core", True, "top"),
    ("colltop", "dashboard CPU"): ("% core", True, None),
    ("colltop", "bytes sent per host, median"): ("B/s", True, None),
}


def emit(out, bench, metric, side, rep, value):
    out.append((bench, metric, side, rep, value))


def parse_allreduce(raw, side, rep, out):
    """raw is the -o directory of one allreduce_vs_mpi.sh call."""
    names = {8: ("8 B time, out of place", "time_us"),
             4096: ("4 KiB time, out of place", "time_us"),
             2 << 20: ("2 MiB busbw, out of place", "busbw")}
    for path in sorted(glob.glob(os.path.join(raw, "timed.*.json"))):
        who = os.path.basename(path).split(".")[1]  # coll or mpi
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        for row in doc.get("results", []):
            name = names.get(int(row["size"]))
            if name:
                emit(out, "allreduce", name[0], side if who == "coll" else "ref", rep,
                     float(row["out_of_place"][name[1]]))


def parse_launch(raw, side, rep, out):
    for line in open(raw):
        f = line.split()
        # hosts tool median min ratio cpu_ms cpu_ms_per_host
        if len(f) == 7 and f[0].isdigit() and f[1] in ("collrun", "pdsh"):
            who = side if f[1] == "collrun" else "ref"
            emit(out, "launch", "wall time, median of the runs", who, rep, float(f[2]))
            emit(out, "launch", "client CPU, median", who, rep, float(f[5]))


def parse_init(raw, side, rep, out):
    for line in open(raw):
        f = line.split()
        # "median N wall_s root_bytes rss_kib most_by_one_root roots" (bench_init_scale)
        if len(f) >= 5 and f[0] == "median":
            emit(out, "init", "wall time, 1024 ranks", side, rep, float(f[2]))
            emit(out, "init", "root bytes sent", side, rep, float(f[3]))
            emit(out, "init", "root peak RSS", side, rep, float(f[4]))


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_collstack(raw, side, rep, out):
    scale = None
    for line in open(raw):
        if line.startswith("| gdb "):
            c = cells(line)
            emit(out, "collstack", "per process, all at once", "ref", rep, float(c[2]))
            emit(out, "collstack", "per process, --threads 1", "ref", rep, float(c[2]))
        elif line.startswith("| collstack --pid (all), parallel"):
            emit(out, "collstack", "per process, all at once", side, rep, float(cells(line)[2]))
        elif line.startswith("| collstack --pid (all) --threads 1"):
            emit(out, "collstack", "per process, --threads 1", side, rep, float(cells(line)[2]))
        elif line.startswith("collstack pause of one process: longest"):
            m = re.search(r"longest ([0-9.]+) ms", line)
            emit(out, "collstack", "longest pause of a process", side, rep, float(m.group(1)))
        elif re.match(r"^\| \d+ \| [0-9.]+ \| [0-9.]+ \|$", line.strip()):
            scale = float(cells(line)[1])
    if scale is not None:
        emit(out, "collstack", "most processes of the scale rows", side, rep, scale)


def parse_colltop(raw, side, rep, out):
    for line in open(raw):
        c = cells(line)
        if line.startswith("| worker CPU, % of one core (median"):
            emit(out, "colltop", "worker CPU, median of the hosts", side, rep, float(c[1]))
            emit(out, "colltop", "worker CPU, median of the hosts", "ref", rep, float(c[2]))
            emit(out, "colltop", "worker CPU, mean of the hosts", "ref", rep, float(c[2]))
        elif line.startswith("| worker CPU, % of one core (mean"):
            emit(out, "colltop", "worker CPU, mean of the hosts", side, rep, float(c[1]))
        elif line.startswith("| dashboard CPU"):
            emit(out, "colltop", "dashboard CPU", side, rep, float(c[1]))
        elif line.startswith("| bytes sent per second (median)"):
            emit(out, "colltop", "bytes sent per host, median", side, rep,
                 float(c[1].split()[0]))


def fmt(v):
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3f" % v


def spread(v):
    """min-max and (max-min)/median over the repetitions."""
    if not v:
        return "n/a"
    m = statistics.median(v)
    rel = (max(v) - min(v)) / m * 100 if m else 0.0
    return "%s-%s (%.0f%%)" % (fmt(min(v)), fmt(max(v)), rel)


def verdict(b, a, lower_better):
    """Whether the two builds' ranges overlap; if not, which way after moved."""
    if not b or not a:
        return "n/a"
    if len(b) < 2 or len(a) < 2:
        return "one run: no spread"
    if min(a) <= max(b) and min(b) <= max(a):
        return "yes"
    better = (statistics.median(a) < statistics.median(b)) == lower_better
    return "**no: after %s**" % ("better" if better else "worse")


def table(tsv):
    vals = {}
    for line in open(tsv):
        bench, metric, side, rep, value = line.rstrip("\n").split("\t")
        vals.setdefault((bench, metric, side), []).append(float(value))
    print("| benchmark | metric | unit | reference | before | after | after/before "
          "| spread before | spread after | ranges overlap |")
    print("|---|---|---|---|---:|---:|---:|---|---|---|")
    for (bench, metric), (unit, lower, ref) in METRICS.items():
        b = vals.get((bench, metric, "before"), [])
        a = vals.get((bench, metric, "after"), [])
        r = vals.get((bench, metric, "ref"), [])
        if not (a or b or r):
            continue
        mb = statistics.median(b) if b else None
        ma = statistics.median(a) if a else None
        ratio = "%.3f" % (ma / mb) if mb and ma is not None else "n/a"
        refc = "%s %s" % (ref, fmt(statistics.median(r))) if ref and r else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            bench, metric, unit, refc, fmt(mb), fmt(ma), ratio, spread(b), spread(a),
            verdict(b, a, lower)))


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "parse":
        bench, side, rep, raw, tsv = sys.argv[2:]
        out = []
        globals()["parse_" + bench](raw, side, rep, out)
        with open(tsv, "a") as fh:
            for row in out:
                fh.write("%s\t%s\t%s\t%s\t%r\n" % row)
        return 0 if out else 1
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
