#!/bin/bash
# MSG_ZEROCOPY (COLL_ZEROCOPY): with it forced on, the large sends of every
# collective go out pinned, not copied, and every element still arrives right
# (a transfer waits for the kernel's notices before its buffers may change;
# one datatype and op, since zero-copy moves bytes: every datatype and op of
# every collective is t0101's and t0120's); on loopback the kernel copies
# anyway and says so, and "auto" stops asking after the first op on each
# connection; off means never; a bad setting stops init with its name; a link
# closed mid-op with notices outstanding is retried.
. "$(dirname "$0")/ftlib.sh"

# zc_lines FILE: how many transfers sent zero-copy, by the ranks' TRACE lines.
zc_lines() { grep -c 'sends of [a-z]* seq [0-9]* to rank [0-9]* were zero-copy' "$1"; }

for k in allreduce reducescatter allgather broadcast reduce alltoall; do
	COLL_ZEROCOPY=1 COLL_ZEROCOPY_MIN_BYTES=65536 COLL_DEBUG=TRACE collrun -n 3 --no-label \
		collcheck $k --engine coll -b 256K -e 1M -f 4 -n 2 -w 1 -r 1 >"$TMP/$k" 2>"$TMP/$k.err"
	expect_code 0 $? "$k on 3 ranks with zero-copy forced on"
	check "$k: no wrong element anywhere" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n == 0 }' "$TMP/$k"
	check "$k: sends went out zero-copy ($(zc_lines "$TMP/$k.err") transfers)" test "$(zc_lines "$TMP/$k.err")" -ge 10
	check "$k: the kernel said it copied them (loopback)" grep -q 'were zero-copy (the kernel copied)' "$TMP/$k.err"
done

# Striped over lanes, with zero-copy on each lane's connection.
COLL_NTHREADS=2 COLL_NSOCKS=2 COLL_ZEROCOPY=1 COLL_ZEROCOPY_MIN_BYTES=65536 COLL_DEBUG=TRACE \
	collrun -n 2 --no-label collcheck allreduce --engine coll -b 1M -e 16M -f 4 -n 2 -w 1 \
	>"$TMP/lanes" 2>"$TMP/lanes.err"
expect_code 0 $? "zero-copy over 4 lanes"
check "lanes: no wrong element" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n == 0 }' "$TMP/lanes"
check "lanes: zero-copy sends on lane threads too" test "$(zc_lines "$TMP/lanes.err")" -ge 20

# auto: tries once per connection, hears "copied", and copies from then on.
COLL_DEBUG=TRACE collrun -n 2 --no-label collcheck allreduce --engine coll -b 4M -e 4M -n 20 -w 0 \
	>"$TMP/auto" 2>"$TMP/auto.err"
expect_code 0 $? "auto on loopback"
check "auto: each rank turns zero-copy off on its connection" \
	test "$(grep -c 'the kernel copied zero-copy sends anyway (a loopback or virtual link): this connection copies from now on' "$TMP/auto.err")" -eq 2
check "auto: zero-copy stopped after the first ops ($(zc_lines "$TMP/auto.err") of 42 transfers)" \
	test "$(zc_lines "$TMP/auto.err")" -le 4
COLL_DEBUG=TRACE collrun -n 2 --no-label collcheck allreduce --engine coll -b 512K -e 512K -n 5 -w 0 \
	>"$TMP/small" 2>"$TMP/small.err"
expect_code 0 $? "auto below COLL_ZEROCOPY_MIN_BYTES"
check "auto: ops under 1 MiB always copy" test "$(zc_lines "$TMP/small.err")" -eq 0

COLL_ZEROCOPY=0 COLL_DEBUG=TRACE collrun -n 2 --no-label collcheck allreduce --engine coll -b 4M -e 4M -n 3 -w 0 \
	>"$TMP/off" 2>"$TMP/off.err"
expect_code 0 $? "COLL_ZEROCOPY=0"
check "off: no zero-copy send" test "$(zc_lines "$TMP/off.err")" -eq 0

for bad in COLL_ZEROCOPY=yes COLL_ZEROCOPY_MIN_BYTES=0 COLL_ZEROCOPY_MIN_BYTES=1M; do
	env "$bad" "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "$bad stops the job"
	check "$bad: named with what to do" grep -q "${bad%%=*}=${bad#*=} is not .*: set" "$TMP/e"
done

# A link closed in a 1 MiB op with zero-copy notices outstanding: retried, right after.
for i in $(seq "$REPS"); do
	COLL_ZEROCOPY=1 COLL_ZEROCOPY_MIN_BYTES=65536 COLL_DEBUG=WARN COLL_FAULT=2@4:close \
		ft "$TMP/out" -n 4 "$FT" close 6
	expect_code 0 $? "run $i: a zero-copy op survives a closed link"
	check "run $i: every rank finished right after one retry" \
		test "$(count "$TMP/out" 'ft: rank [0-3] done 6 iterations, retries 1$')" -eq 4
done
finish
