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
#     iperf3 --bidir -P K over loopback, when IPERF3 names an iperf3 binary;
#  4. every collective 8 B to MAXB on coll's own CUDA engine (--engine cuda,
#     peers' memory over NVLink) against --engine nccl, side by side, and the
#     busbw ratio cuda/nccl at 512 MiB and 1 GiB. Correctness (1.) runs the
#     cuda engine too, when the build has its kernels (tests/gpu/cuda_engine.sh
#     checks both of its paths).
# SKIP_NCCL_TESTS=1 leaves out 2. and 3. (CUDA=0 leaves out the cuda engine).
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
# coll's CUDA engine where this build has its kernels (COLL_CUDA found nvcc).
CUDA=${CUDA:-$(grep -qs '^COLL_NVCC:FILEPATH=/' "$BUILD/CMakeCache.txt" &&
	! grep -qs '^COLL_CUDA:STRING=OFF$' "$BUILD/CMakeCache.txt" && echo 1 || echo 0)}
ENGINES="nccl coll"
[ "$CUDA" = 1 ] && ENGINES="nccl coll cuda"

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
	for eng in $ENGINES; do
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

# 2. NCCL through collcheck against nccl-tests (collcheck's NCCL rows are 4.'s reference too).
perf_name() {
	case $1 in
	allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;;
	reducescatter) echo reduce_scatter_perf ;; broadcast) echo broadcast_perf ;;
	reduce) echo reduce_perf ;; alltoall) echo alltoall_perf ;;
	esac
}
for k in allreduce allgather reducescatter broadcast reduce alltoall; do
	[ "${SKIP_NCCL_TESTS:-0}" = 1 ] && [ "$CUDA" = 0 ] && break
	"$CC" $k -N "$GPUS" --engine nccl -b 8 -e "$MAXB" -f 2 -n "$ITERS" -w "$WARMUP" -c 0 \
		>"$OUT/perf-$k-collcheck.txt" 2>&1 || fail=1
	if [ -n "$NT" ] && [ "${SKIP_NCCL_TESTS:-0}" != 1 ]; then
		"$NT/build/$(perf_name $k)" -b 8 -e "$MAXB" -f 2 -g "$GPUS" -n "$ITERS" -w "$WARMUP" -c 0 \
			>"$OUT/perf-$k-nccl-tests.txt" 2>&1 || fail=1
		python3 "$HERE/compare.py" "$k, $GPUS GPUs" "nccl-tests $(perf_name $k) -g $GPUS" \
			"$OUT/perf-$k-nccl-tests.txt" "collcheck $k --engine nccl -N $GPUS" \
			"$OUT/perf-$k-collcheck.txt" >>"$SUM"
	fi
done

# 3. coll's TCP engine over loopback against iperf3.
if [ -n "${IPERF3:-}" ] && [ -x "$IPERF3" ] && [ "${SKIP_NCCL_TESTS:-0}" != 1 ]; then
	# The lanes (COLL_NTHREADS x COLL_NSOCKS) against iperf3 --bidir -P K, one table.
	IPERF3=$IPERF3 bash "$HERE/../tcp_vs_iperf3.sh" -B "$BUILD" -o "$OUT/tcp" -e 256M \
		-L "1:1 2:1 4:1 8:1 2:2 4:2 auto" -P "1 2 4 8" >>"$SUM" 2>&1 || fail=1
	echo >>"$SUM"
fi
# 4. coll's own CUDA engine against NCCL, both through collcheck.
if [ "$CUDA" = 1 ]; then
	echo "## coll's CUDA engine (B) against NCCL (A), busbw GB/s out of place" >>"$SUM"
	echo "| collective | 512M nccl | 512M cuda | ratio | 1G nccl | 1G cuda | ratio | 8 B nccl us | 8 B cuda us |" >>"$SUM"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|" >>"$SUM"
	for k in allreduce allgather reducescatter broadcast reduce alltoall; do
		"$CC" $k -N "$GPUS" --engine cuda -b 8 -e "$MAXB" -f 2 -n "$ITERS" -w "$WARMUP" -c 0 \
			>"$OUT/perf-$k-cuda.txt" 2>&1 || fail=1
		python3 - "$k" "$OUT/perf-$k-collcheck.txt" "$OUT/perf-$k-cuda.txt" >>"$SUM" <<'EOPY'
import sys
def rows(p):
    out = {}
    for line in open(p, errors="replace"):
        f = line.split()
        if len(f) >= 13 and f[0].isdigit():
            out[int(f[0])] = (float(f[5]), float(f[7]))
    return out
k, a, b = sys.argv[1], rows(sys.argv[2]), rows(sys.argv[3])
def at(r, s, i):
    # the largest size at or below s (gathers round each part down)
    keys = [x for x in r if x <= s]
    return r[max(keys)][i] if keys else 0.0
cells = []
for s in (512 << 20, 1 << 30):
    x, y = at(a, s, 1), at(b, s, 1)
    cells += ["%.2f" % x, "%.2f" % y, "%.3f" % (y / x) if x > 0 else "-"]
small = min(set(a) & set(b)) if set(a) & set(b) else None
cells += ["%.2f" % a[small][0], "%.2f" % b[small][0]] if small else ["-", "-"]
print("| %s | %s |" % (k, " | ".join(cells)))
EOPY
	done
	echo >>"$SUM"
	for k in allreduce allgather reducescatter broadcast reduce alltoall; do
		python3 "$HERE/compare.py" "$k, $GPUS GPUs" "collcheck $k --engine nccl" \
			"$OUT/perf-$k-collcheck.txt" "collcheck $k --engine cuda" \
			"$OUT/perf-$k-cuda.txt" >>"$SUM"
	done
fi
echo "exit $fail" >>"$SUM"
cat "$SUM"
exit $fail
