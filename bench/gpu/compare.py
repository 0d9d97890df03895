#!/usr/bin/env python3
"""Side by side: two nccl-tests-style outputs (nccl-tests' *_perf and collcheck)
of the same sweep. Rows are matched by size; ratios are B over A, so for
busbw above 1 means B is faster, for time below 1 means B is faster.

usage: compare.py TITLE LABEL_A FILE_A LABEL_B FILE_B
"""
import sys


def rows(path):
    out = {}
    for line in open(path, errors="replace"):
        f = line.split()
        if not f or not f[0].isdigit() or len(f) < 13:
            continue
        try:
            out[int(f[0])] = {
                "time": float(f[5]), "busbw": float(f[7]), "wrong": f[8],
                "itime": float(f[9]), "ibusbw": float(f[11]), "iwrong": f[12],
            }
        except ValueError:
            continue
    return out


def ratio(b, a):
    return "%.3f" % (b / a) if a > 0 and b > 0 else "-"


def human(n):
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return "%d%s" % (n // k, unit)
    return str(n)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    title, la, fa, lb, fb = sys.argv[1:]
    a, b = rows(fa), rows(fb)
    sizes = sorted(set(a) & set(b))
    print("## %s: %s (A) against %s (B), out-of-place; in-place busbw ratio last" % (title, la, lb))
    print("| size | A time us | B time us | B/A time | A busbw GB/s | B busbw GB/s | B/A busbw | B/A busbw in-place | #wrong A/B |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for s in sizes:
        x, y = a[s], b[s]
        print("| %s | %.2f | %.2f | %s | %.2f | %.2f | %s | %s | %s/%s |" % (
            human(s), x["time"], y["time"], ratio(y["time"], x["time"]), x["busbw"],
            y["busbw"], ratio(y["busbw"], x["busbw"]), ratio(y["ibusbw"], x["ibusbw"]),
            x["wrong"], y["wrong"]))
    if not sizes:
        print("(no sizes in common: one of the runs failed; see its log)")
    print()


if __name__ == "__main__":
    main()
