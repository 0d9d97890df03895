#!/bin/bash
# A host cut off the network (ip link set eth0 down in its namespace): no
# reset, no end of stream, only silence. The root's keep-alive names its two
# ranks as dead, the six others shrink and finish with correct results; once
# the link is back, collrun collects the cut-off ranks' own failure (they
# lost the root) and exits non-zero.
. "$(dirname "$0")/lib.sh"
NETBED="$COLL_SRC/tests/netbed/netbed.sh"
FT=$COLL_BIN/../tests/ft_rank
relink() { bash "$NETBED" exec "$BED" 3 ip link set eth0 up 2>/dev/null; }
trap 'relink; cleanup' EXIT

"$BIN/collrun" --label -k -F "$CFG" -H "$HOSTS" -N 2 --timeout 120 env COLL_KEEPALIVE_MS=100 \
	COLL_KEEPALIVE_LIMIT=20 COLL_TIMEOUT=60 FT_PACE_MS=20 "$FT" kill 300 "$MARK" \
	>"$TMP/out" 2>&1 &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c "ft: rank [0-7] running" "$TMP/out")" -eq 8 ] && break; sleep 0.1; done
sleep 0.5
start=$(date +%s)
bash "$NETBED" exec "$BED" 3 ip link set eth0 down
for _ in $(seq 300); do [ "$(grep -c 'done 300 iterations' "$TMP/out")" -eq 6 ] && break; sleep 0.1; done
took=$(($(date +%s) - start))
relink
wait $pid
code=$?
check "collrun exits non-zero (exit $code)" test "$code" -ne 0 -a "$code" -ne 124
check "the six others finished on 6 ranks" \
	test "$(grep -c -E '^\[[0-36-7] node0[124]\] ft: rank [0-36-7] done 300 iterations on 6 ranks' "$TMP/out")" -eq 6
check "each of them named a rank of node03 as silent" \
	test "$(grep -c -E 'ft: rank [0-36-7] op failed .*rank [45] \(host node03, pid [0-9]*\) stopped answering' "$TMP/out")" -eq 6
check "no wrong result" test "$(grep -c WRONG "$TMP/out")" -eq 0
check "found and recovered within 30 s (took $took s)" test "$took" -lt 30
check "nothing left behind on any host" test "$(leftovers)" -eq 0
[ "$fails" -eq 0 ] || cat "$TMP/out"
finish
