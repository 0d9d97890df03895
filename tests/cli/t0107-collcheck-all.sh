#!/bin/bash
# collcheck alone: env, links and all-reduce with local ranks; collcheck links;
# and collcheck env as ranks of collrun (rank 0 reports by itself).
. "$(dirname "$0")/lib.sh"

collcheck -N 2 >"$TMP/o" 2>"$TMP/e"
code=$?
check "collcheck alone ran (exit $code: 0, or 1 for a slow pair on a busy machine)" test "$code" -le 1
check "the host line" grep -q "^$(hostname) " "$TMP/o"
check "the links matrix of 2 ranks" grep -q '^links: GB/s each way' "$TMP/o"
check "the all-reduce sweep up to 2 MiB, no wrong element" awk '$1 == 2097152 && $5 == 0 { f = 1 } END { exit !f }' "$TMP/o"

collcheck links -N 4 -s 64K --iters 3 --json >"$TMP/j" 2>"$TMP/e"
code=$?
check "links -N 4 --json ran (exit $code)" test "$code" -le 1
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
bw = d["links"]["bw_gbs"]
lat = d["links"]["lat_us"]
assert len(bw) == 4 and all(len(r) == 4 for r in bw)
for i in range(4):
    for j in range(4):
        if i == j:
            assert bw[i][j] is None
        else:
            assert bw[i][j] > 0 and lat[i][j] > 0, (i, j, bw[i][j], lat[i][j])
            assert bw[i][j] == bw[j][i]
assert "allreduce" not in d
print("links ok")
EOPY
check "every pair of 4 ranks measured, symmetric, positive" grep -q 'links ok' "$TMP/py"

collrun -n 3 --label "$BIN/collcheck" env >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "collcheck env as 3 ranks of collrun"
check "rank 0 printed the report" grep -q '^\[0\] collcheck: 1 host, 3 ranks' "$TMP/o"
check "the other ranks printed nothing" sh -c "! grep -q '^\[[12]\]' '$TMP/o'"

# No way to run the workers: a clear line and exit 3.
COLL_SOCKET_IFNAME=nosuchif0 collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "no interface to rendezvous on"
check "... named" grep -q 'COLL_SOCKET_IFNAME=nosuchif0 matches no interface' "$TMP/e"
finish
