#!/bin/bash
# collstack on hangs below the host, from coll's NCCL profiler plugin's kernel
# events, on a machine without GPUs: four stand-in ranks
# (tests/stack/nccl_standin.py, STANDIN_CASE) call the plugin as NCCL 2.28
# does; every rank enqueued all-reduce seq 9 and waits in synchronize(), so
# the host side says nothing. Then: (a) rank 2's kernel never began: it is
# named, alone; (b) every kernel began, none ended: hung inside, no rank
# late, exit 1, nobody blamed, the kernel's algorithm and protocol said
# (escaped), and with NVML's stand-in (tests/stack/nvml_standin.c) the GPUs
# busy at low power;
# (c) every kernel ended and the hosts still wait: said, exit 1; (d) rank 3
# all-reduces half the bytes: the odd one named, alone, by the pages and by
# the flight recorder.
. "$(dirname "$0")/lib.sh"
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
preload=()
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) preload=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0) ;;
esac
H=$(hostname)

# ranks CASE HASH [ENV...]: four stand-ins in this case, in a communicator of its own.
ranks() {
	local c=$1 h=$2
	shift 2
	for r in 0 1 2 3; do
		env "${preload[@]}" RANK=$r WORLD_SIZE=4 STANDIN_CASE="$c" STANDIN_HASH="$h" "$@" \
		    python3 "$COLL_SRC/tests/stack/nccl_standin.py" >"$TMP/$c.r$r.out" 2>&1 &
		echo $! >>"$TMP/pids"
		echo $! >>"$TMP/$c.pids"
	done
}
# use CASE: its pids, one list and one comma-separated; its communicator.
use() {
	mapfile -t pids <"$TMP/$1.pids"
	all=$(IFS=,; echo "${pids[*]}")
	C="comm NCCL 0x$(printf %016x "$2")"
}
# judge [ARGS...]: collstack on the four, again until it finds a problem (the
# pages must have stood still for a second) or 6 s have passed; its exit in $code.
judge() {
	local until=$((SECONDS + 6))
	while :; do
		"$BIN/collstack" --pid "$all" --no-color ${nofr-"--no-fr-dump"} "$@" >"$TMP/o" 2>"$TMP/e"
		code=$?
		[ $code != 0 ] || [ $SECONDS -ge $until ] && break
		sleep 0.2
	done
}
blamed() { grep -c '^=> ' "$TMP/o"; }

# The four cases at once, each its own communicator, so that their pages
# stand still together. (d)'s flight recorder dumps are a real job's made four
# ranks', rank 3's last all-reduce half the size.
mkdir -p "$TMP/fr"
python3 - "$COLL_SRC/tests/stack/fr_torch/x_0" "$TMP/fr/x_" <<'PY'
import copy, pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
d["pg_config"]["0"]["ranks"] = "[0, 1, 2, 3]"
for r in range(4):
    x = copy.deepcopy(d)
    for e in x["entries"]:
        if r == 3 and e["collective_seq_id"] == 6:
            e["input_sizes"] = e["output_sizes"] = [[524288]]
    pickle.dump(x, open(sys.argv[2] + str(r), "wb"), protocol=2)
PY
ranks busy 0xa1 STANDIN_ODD=2
ranks inside 0xb1 STANDIN_ALGO=$'Ri\e[2Jng'
ranks unseen 0xc1
ranks desync 0xd1 STANDIN_ODD=3 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE="$TMP/fr/d_" \
    TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$TMP/fr/pipe_" STANDIN_DUMP="$TMP/fr/x_"
for _ in $(seq 150); do
	[ "$(cat "$TMP"/*.r[0-3].out | grep -c ready)" = 16 ] && break
	sleep 0.1
done

# (a) rank 2's stream is busy: its kernel for seq 9 never began.
use busy 0xa1
judge
expect_code 1 $code "(a) a GPU that never started the op"
check "... rank 2 named, its GPU not started, the others in the kernel" grep -qxF "rank 2 ($H, pid ${pids[2]}): its GPU has not started allreduce seq 9: its stream is busy with earlier work; ranks 0-1,3 run its kernel and wait for it ($C); collstack --cuda lists what it runs" "$TMP/o"
check "... blamed alone, by the plugin" grep -qxF "=> rank 2 ($H, pid ${pids[2]}) holds the others up, behind in allreduce seq 9 of $C: named by 1 source (NCCL profiler plugin)" "$TMP/o"
check "... no bystander blamed" test "$(blamed)" = 1
check "... and no 'no rank is behind'" sh -c "! grep -q 'no rank is behind\|none behind' '$TMP/o'"
COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh judge --cuda
check "(a) --cuda: what its GPU runs, in its line" grep -qF "rank 2 ($H, pid ${pids[2]}): its GPU has not started allreduce seq 9: its stream is busy with earlier work; ranks 0-1,3 run its kernel and wait for it ($C); --cuda: its GPU runs ncclDevKernel_AllReduce_Sum_f32_RING_LL() (device 0, Active" "$TMP/o"

# (b) every kernel began, none ended; the algorithm's name carries an escape
# (a page is anyone's file): it reaches the terminal made printable.
use inside 0xb1
judge
expect_code 1 $code "(b) hung inside the kernel on every rank"
check "... said, no rank late" grep -qxE "$C: hung inside allreduce seq 9 on every rank: no rank is late; the collective library or the fabric \(all 4 kernels began, none ended in [0-9]+\.[0-9] s\)" "$TMP/o"
check "... the kernel's op, algorithm and protocol" grep -qxF "$C: the kernel: allreduce of 4194304 bytes (ncclFloat32), algorithm Ri?[2Jng, protocol LL" "$TMP/o"
check "... nobody blamed" test "$(blamed)" = 0
check "... and no 'no rank is behind'" sh -c "! grep -q 'no rank is behind\|none behind' '$TMP/o'"
check "... no NVML here: no GPU signature" sh -c "! grep -q '(NVML)' '$TMP/o'"
# NVML's stand-in: four GPUs at 100% and 150-210 W of 700 W.
LD_LIBRARY_PATH=$COLL_BUILD/tests/nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} judge
check "(b) with NVML: the GPUs' signature, spinning" grep -qxF "GPUs on $H (NVML): 4 at 100% utilisation, 150-210 W of 700 W: busy at low power, their kernels spin waiting rather than compute" "$TMP/o"

# (c) every kernel ended; the hosts still wait in synchronize().
use unseen 0xc1
judge
expect_code 1 $code "(c) kernels ended, the host never saw it"
check "... said, with the ranks that wait" grep -qxE "$C: the kernels of allreduce seq 9 ended on every rank [0-9]+\.[0-9] s ago, but the host has not seen it complete: ranks 0-3 still wait for it in their main thread" "$TMP/o"
check "... nobody blamed" test "$(blamed)" = 0

# (d) rank 3 all-reduces half the tensor: a desync every rank entered; the
# flight recorder, asked live, says so too.
use desync 0xd1
nofr="" judge
expect_code 1 $code "(d) a desync"
check "... the odd rank first, each side's op" grep -qxF "$C: desync at seq 9: rank 3 ($H, pid ${pids[3]}) calls allreduce of 2097152 bytes (ncclFloat32) where ranks 0-2 call allreduce of 4194304 bytes (ncclFloat32): every rank enters it and it hangs inside the kernel" "$TMP/o"
check "... the flight recorder's odd one" grep -qxF "flight recorder: the odd one out of the desync in process group 0: rank 3" "$TMP/o"
check "... rank 3 blamed alone, by both" grep -qxF "=> rank 3 ($H, pid ${pids[3]}) holds the others up, behind in allreduce seq 9 of $C (a desync): named by 2 sources (NCCL profiler plugin, flight recorder)" "$TMP/o"
check "... no bystander blamed" test "$(blamed)" = 1
finish
