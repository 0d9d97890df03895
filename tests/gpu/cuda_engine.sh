#!/bin/bash
# coll's own CUDA engine on every GPU here (2 or more; GPUS=N for fewer),
# both paths: every collective, every datatype, every op where it reduces,
# out of place and in place, sizes from 8 B to 4 MiB (and odd sizes for the
# unaligned tails), roots 0 and 1, on the ipc path (peers' memory mapped,
# coll's kernels) and the staged path (COLL_CUDA_P2P=0: pinned host memory,
# coll over TCP); the copying collectives also with each copy direction
# forced (COLL_CUDA_COPY) and the rooted ones each way (COLL_CUDA_ROOTED),
# each asserted from the ranks' header. #wrong must be 0 in every row. Then
# the deadline: the last rank stopped in a sweep, rank 0 must give up after
# -T 5 s with a clear message.
#   tests/gpu/cuda_engine.sh BUILD OUT
set -u
BUILD=$1 OUT=$2
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CC="$BUILD/cmd/collcheck"
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
SUM="$OUT/cuda_engine.md"
fail=0

echo "$GPUS GPUs" >"$SUM"
echo "| path | collective | sizes | root | rows | #wrong | exit |" >>"$SUM"
echo "|---|---|---|---:|---:|---:|---:|" >>"$SUM"
run() { # run PATH COLLECTIVE SIZES ROOT ARGS...
	local path=$1 k=$2 sizes=$3 root=$4 p2p=1 log rc rows wrong how=${COLL_CUDA_ROOTED:-}
	local copy=${COLL_CUDA_COPY:-}
	shift 4
	[ "$path" = staged ] && p2p=0
	log="$OUT/check-$path${how:+-$how}${copy:+-$copy}-$k-$sizes-r$root.txt"
	# shellcheck disable=SC2068
	COLL_CUDA_P2P=$p2p timeout 600 "$CC" "$k" -N "$GPUS" --engine cuda -n 1 -w 1 -d all -r "$root" $@ \
		>"$log" 2>&1
	rc=$?
	rows=$(grep -c '^ *[0-9]' "$log")
	wrong=$(awk '/^ *[0-9]/ { w += ($9 == "N/A" ? 0 : $9) + ($13 == "N/A" ? 0 : $13) } END { print w + 0 }' "$log")
	echo "| $path${how:+ ($how)}${copy:+ (copy $copy)} | $k | $sizes | $root | $rows | $wrong | $rc |" >>"$SUM"
	grep -q "^#  Rank  [01] .*, $path" "$log" || { echo "$log: not on the $path path" >>"$SUM"; fail=1; }
	if [ -n "$how" ]; then
		grep -q "^#  Rank  [01] .*, rooted $how" "$log" || { echo "$log: not rooted $how" >>"$SUM"; fail=1; }
	fi
	if [ -n "$copy" ]; then
		grep -q "^#  Rank  [01] .*, copy $copy" "$log" || { echo "$log: not copy $copy" >>"$SUM"; fail=1; }
	fi
	[ "$rc" -eq 0 ] && [ "$wrong" -eq 0 ] && [ "$rows" -gt 0 ] || fail=1
}
for path in ipc staged; do
	for k in allreduce allgather reducescatter broadcast reduce alltoall; do
		case $k in allreduce | reducescatter | reduce) ops="-o all" ;; *) ops="" ;; esac
		run $path $k pow8 0 -b 8 -e 4M -f 8 $ops
		case $k in
		allreduce | broadcast | reduce)
			run $path $k odd 1 -b 1000 -e 3000000 -f 7 $ops ;;
		esac
	done
done
# Broadcast and reduce both ways among 3 or more GPUs: spread (the pipeline
# at every size) and direct (every rank reads the root). With 2 there is no choice.
[ "$GPUS" -ge 3 ] || echo "rooted spread and direct: not run, $GPUS GPUs" >>"$SUM"
for how in spread direct; do
	[ "$GPUS" -ge 3 ] || break
	for k in broadcast reduce; do
		case $k in reduce) ops="-o all" ;; *) ops="" ;; esac
		COLL_CUDA_ROOTED=$how run ipc $k pow8 0 -b 8 -e 4M -f 8 $ops
		COLL_CUDA_ROOTED=$how run ipc $k odd 1 -b 1000 -e 3000000 -f 7 $ops
	done
done

# The copying collectives with each direction forced: every rank writes its
# peers' outputs (push) or reads their inputs (pull), where auto picks by
# collective.
for copy in push pull; do
	for k in allgather broadcast alltoall; do
		COLL_CUDA_COPY=$copy run ipc $k pow8 0 -b 8 -e 4M -f 8
	done
	COLL_CUDA_COPY=$copy run ipc broadcast odd 1 -b 1000 -e 3000000 -f 7
done

# A value the engine does not know is refused, naming the variable and the choices.
for v in COLL_CUDA_ROOTED=sideways COLL_CUDA_COPY=sideways; do
	env "$v" timeout 120 "$CC" broadcast -N 2 --engine cuda -b 8 -e 8 -n 1 -w 0 >"$OUT/bad-${v%%=*}.txt" 2>&1
	rc=$?
	echo "bad value $v: exit $rc, $(grep -m1 -o "$v: use [a-z, ]*" "$OUT/bad-${v%%=*}.txt")" >>"$SUM"
	[ "$rc" -ne 0 ] && grep -q "$v: use " "$OUT/bad-${v%%=*}.txt" || fail=1
done

# The deadline: the last rank stopped mid-sweep; rank 0's kernels are told to stop.
"$CC" allreduce -N "$GPUS" --engine cuda -b 256M -e 256M -n 100000 -w 0 -c 0 -T 5 \
	>"$OUT/abort.out" 2>"$OUT/abort.err" &
front=$!
sleep 6
r1=$(pgrep -P "$front" | sort -n | tail -1)
t0=$(date +%s%N)
kill -STOP "$r1"
wait "$front"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$r1" 2>/dev/null
kill -9 "$r1" 2>/dev/null
{
	echo
	echo "deadline: collcheck exit $rc, $ms ms after the last rank (pid $r1) was stopped"
	echo '```'
	cat "$OUT/abort.err"
	echo '```'
} >>"$SUM"
grep -q 'did not finish the collectives in 5000 ms' "$OUT/abort.err" && [ "$rc" -ne 0 ] || fail=1
echo "exit $fail" >>"$SUM"
cat "$SUM"
exit $fail
