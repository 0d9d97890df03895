#!/bin/bash
# collcheck links on 4 hosts where node03's link is slowed (tbf on the bridge
# side of its veth): the pairs with node03 and node03 itself are named, the
# other pairs are not, and it exits 1.
. "$(dirname "$0")/lib.sh"
. "$BED/netbed.env"
IFP=$PREFIX
[ ${#PREFIX} -gt 10 ] && IFP=${PREFIX:0:6}$(printf '%04x' $(($(printf %s "$PREFIX" | cksum | cut -d' ' -f1) % 65536)))
DEV=${IFP}v3
unslow() { tc qdisc del dev "$DEV" root 2>/dev/null; }
trap 'unslow; cleanup' EXIT

collcheck links -F "$CFG" -H "$HOSTS" -s 1M --iters 3 >"$TMP/o0" 2>"$TMP/e"
code=$?
check "links on 4 even hosts ran (exit $code)" test "$code" -le 1

# Four hosts and the front end share two cores here: healthy pairs vary up to
# 5x in bandwidth and latency. The slowed link is 100x slower, so the test
# sets thresholds (--config) that only it crosses.
printf 'link_bw_factor = 0.1\nlink_lat_factor = 1000\n' >"$TMP/conf"
tc qdisc add dev "$DEV" root tbf rate 100mbit burst 32kbit latency 400ms
collcheck links -F "$CFG" -H "$HOSTS" -s 1M --iters 3 --config "$TMP/conf" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "one slow host"
for p in "node01 (rank 0) - node03 (rank 2)" "node02 (rank 1) - node03 (rank 2)" "node03 (rank 2) - node04 (rank 3)"; do
	check "pair $p named" grep -q "WARN   pair $p: " "$TMP/o"
done
check "no pair without node03 named" test "$(grep -c 'pair ' "$TMP/o")" -eq 3
check "node03 named as the host with slow links" grep -q '^node03  WARN  *rank 2: 3 of its 3 links are slow' "$TMP/o"
check "the others OK" test "$(grep -c -E '^node0[124]  OK$' "$TMP/o")" -eq 3
check "the matrix" grep -q '^links: GB/s each way' "$TMP/o"
finish
