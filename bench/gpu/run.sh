#!/bin/bash
# Build, check and compare on a GPU machine, in one call:
#   bench/gpu/run.sh BUILD OUT [NCCL_TESTS_SRC]
# BUILD: a coll build tree (cmd/collcheck), with lib/ holding any libraries the
# machine lacks (libssh2, libjansson, libdw, libelf). NCCL_TESTS_SRC: a checkout
# of github.com/NVIDIA/nccl-tests; it is built here (MPI=0, for this GPU's
# compute capability) unless its build/ already has the binaries. OUT gets
# every log and summary.md with every table.
#
# What runs, with GPUS = the GPUs visible (2 or more), NCCL_NVLS_ENABLE=0:
#  1. correctness: every collective, every datatype (and op where it reduces),
#     8 B to 4 MiB, on both engines (NCCL and coll's own): #wrong must be 0;
#  2. every collective 8 B to MAXB (1G) on NCCL: nccl-tests' *_perf -g GPUS
#     against collcheck --engine nccl -N GPUS, side by side;
#  3. all-reduce on coll's own engine (TCP over loopback, host memory) against
#     iperf3 --bidir -P K over loopback, when IPERF3 names an iperf3 binary.
set -u
BUILD=$(cd "${1:?usage: run.sh BUILD OUT [NCCL_TESTS_SRC]}" && pwd)
OUT=${2:?usage: run.sh BUILD OUT [NCCL_TESTS_SRC]}
NT=${3:-}
MAXB=${MAXB:-1G}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CC="$BUILD/cmd/collcheck"
SUM="$OUT/summary.md"
HERE=$(cd "$(dirname "$0")" && pwd)
fail=0

GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{
	echo "# coll GPU bench, $(date -u +%FT%TZ), $(hostname)"
	echo
	echo '```'
	nvidia-smi -L
	nvidia-smi topo -m 2>/dev/null | head -8
	echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
	echo '```'
	echo
} >"$SUM"
if [ "$GPUS" -lt 2 ]; then
	echo "need 2 GPUs or more, found $GPUS" | tee -a "$SUM" >&2
	exit 3
fi

# nccl-tests, built here for this GPU.
if [ -n "$NT" ]; then
	if [ ! -x "$NT/build/all_reduce_perf" ]; then
		cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
		t0=$(date +%s)
		make -C "$NT" -j"$(nproc)" MPI=0 CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
			NVCC_GENCODE="-gencode=arch=compute_$cap,code=sm_$cap" src.build \
			>"$OUT/nccl-tests-build.log" 2>&1 &&
			echo "nccl-tests built in $(($(date +%s) - t0)) s for sm_$cap" >>"$SUM" ||
			{ echo "nccl-tests did not build: see nccl-tests-build.log" >>"$SUM"; NT=; }
	fi
fi

# 1. Correctness on both engines.
echo "## Correctness (#wrong summed over every row)" >>"$SUM"
echo "| collective | engine | rows | #wrong | exit |" >>"$SUM"
echo "|---|---|---:|---:|---:|" >>"$SUM"
for k in allreduce allgather reducescatter broadcast reduce alltoall; do
	case $k in allreduce | reducescatter | reduce) ops="-o all" ;; *) ops="" ;; esac
	for eng in nccl coll; do
		log="$OUT/check-$k-$eng.txt"
		# shellcheck disable=SC2086
		"$CC" $k -N "$GPUS" --engine $eng -b 8 -e 4M -f 8 -n 1 -w 1 -d all $ops >"$log" 2>&1
		rc=$?
		rows=$(grep -c '^ *[0-9]' "$log")
		wrong=$(awk '/^ *[0-9]/ { w += ($9 == "N/A" ? 0 : $9) + ($13 == "N/A" ? 0 : $13) } END { print w + 0 }' "$log")
		echo "| $k | $eng | $rows | $wrong | $rc |" >>"$SUM"
		[ "$rc" -eq 0 ] && [ "$wrong" -eq 0 ] && [ "$rows" -gt 0 ] || fail=1
	done
done
echo >>"$SUM"

# 2. NCCL through collcheck against nccl-tests.
perf_name() {
	case $1 in
	allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;;
	reducescatter) echo reduce_scatter_perf ;; broadcast) echo broadcast_perf ;;
	reduce) echo reduce_perf ;; alltoall) echo alltoall_perf ;;
	esac
}
for k in allreduce allgather reducescatter broadcast reduce alltoall; do
	"$CC" $k -N "$GPUS" --engine nccl -b 8 -e "$MAXB" -f 2 -n "$ITERS" -w "$WARMUP" -c 0 \
		>"$OUT/perf-$k-collcheck.txt" 2>&1 || fail=1
	if [ -n "$NT" ]; then
		"$NT/build/$(perf_name $k)" -b 8 -e "$MAXB" -f 2 -g "$GPUS" -n "$ITERS" -w "$WARMUP" -c 0 \
			>"$OUT/perf-$k-nccl-tests.txt" 2>&1 || fail=1
		python3 "$HERE/compare.py" "$k, $GPUS GPUs" "nccl-tests $(perf_name $k) -g $GPUS" \
			"$OUT/perf-$k-nccl-tests.txt" "collcheck $k --engine nccl -N $GPUS" \
			"$OUT/perf-$k-collcheck.txt" >>"$SUM"
	fi
done

# 3. coll's TCP engine over loopback against iperf3.
if [ -n "${IPERF3:-}" ] && [ -x "$IPERF3" ]; then
	echo "## TCP over loopback: iperf3 --bidir (per direction) and coll's all-reduce busbw" >>"$SUM"
	port=5301
	echo "| streams | iperf3 GB/s per direction |" >>"$SUM"
	echo "|---:|---:|" >>"$SUM"
	for k in 1 2 4 8; do
		"$IPERF3" -s -p $((port + k)) -1 >/dev/null 2>&1 &
		sleep 0.5
		"$IPERF3" -c 127.0.0.1 -p $((port + k)) --bidir -P $k -t 5 -J >"$OUT/iperf3-P$k.json" 2>&1
		wait
		gbs=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['end']; print('%.2f' % (min(e['sum_sent']['bits_per_second'], e['sum_sent_bidir_reverse']['bits_per_second']) / 8e9))" "$OUT/iperf3-P$k.json" 2>/dev/null || echo -)
		echo "| $k | $gbs |" >>"$SUM"
	done
	echo >>"$SUM"
	for spec in "1 1" "auto"; do
		if [ "$spec" = auto ]; then env_=""; tag=auto; else env_="COLL_NSOCKS=1 COLL_NTHREADS=1"; tag=single; fi
		# shellcheck disable=SC2086
		env $env_ "$CC" allreduce -N 2 --engine coll -b 8 -e 256M -f 4 -n 10 -w 3 -c 0 \
			>"$OUT/tcp-allreduce-$tag.txt" 2>&1 || fail=1
	done
	python3 "$HERE/compare.py" "all-reduce over TCP loopback, 2 ranks" "one socket, one thread" \
		"$OUT/tcp-allreduce-single.txt" "automatic sockets and threads" \
		"$OUT/tcp-allreduce-auto.txt" >>"$SUM"
fi
echo "exit $fail" >>"$SUM"
cat "$SUM"
exit $fail
