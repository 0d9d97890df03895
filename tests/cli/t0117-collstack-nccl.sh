#!/bin/bash
# collstack on a PyTorch NCCL job's hang, every source at once, on a machine
# without GPUs: two stand-in ranks (tests/stack/nccl_standin.py) load coll's
# NCCL profiler plugin and call it as NCCL 2.28 does (rank 0 enqueues the
# sixth all-reduce and its kernel starts, rank 1 stops after five), answer
# PyTorch's dump pipe with the flight recorder dumps a real job wrote, and
# sit in Python functions; NCCL's RAS service is the stand-in of t0116 with
# the report of the same real job, in rank 0 as NCCL's runs in its ranks. collstack must name rank 1 from the
# plugin's status pages, from RAS, from the flight recorder and from the
# stacks, and say each. Then each source alone fails in its own way: a pipe
# nobody reads, a pipe that is a file, a dump never written, a dump that is
# not one, --no-fr-dump, kernel events off. The real run is tests/gpu/.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
export COLL_NCCLPROF=$COLL_BUILD/core/libnccl-profiler-coll.so
[ -f "$COLL_NCCLPROF" ] || { echo "not ok - no plugin at $COLL_NCCLPROF"; exit 1; }
FR=$COLL_SRC/tests/stack/fr_torch/x_
# A sanitized plugin needs the sanitizers' runtimes loaded first; python3 is not built with them.
preload=()
case "${COLL_TEST_CFLAGS:-}" in
*sanitize*) preload=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS=detect_leaks=0) ;;
esac
mkdir -p "$TMP/fr"

# ranks [ENV...]: start the two stand-ins with these settings, wait until both are ready.
# Rank 0 hosts the RAS stand-in, as an NCCL rank hosts NCCL's own service (collstack
# asks only a service whose socket a process of the job holds): serve points at it.
ranks() {
	rm -f "$TMP/port"
	for r in 1 0; do
		prog=("$COLL_SRC/tests/stack/nccl_standin.py")
		[ $r = 1 ] || prog=("$COLL_SRC/tests/stack/ras_server.py" json \
		    "$COLL_SRC/tests/stack/ras/verbose_status.json" "$TMP/port" 673=self 674=$p1 --then "${prog[@]}")
		env "${preload[@]}" RANK=$r WORLD_SIZE=2 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE="$TMP/fr/d_" \
		    TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$TMP/fr/pipe_" STANDIN_DUMP="$FR" "$@" \
		    python3 "${prog[@]}" >"$TMP/r$r.out" 2>&1 &
		echo $! >>"$TMP/pids"
		eval "p$r=$!"
	done
	for _ in $(seq 100); do
		grep -q ready "$TMP/r0.out" && grep -q ready "$TMP/r1.out" && break
		sleep 0.1
	done
	sleep 0.3
}
unranks() { kill -9 "$p0" "$p1" 2>/dev/null; wait "$p0" "$p1" 2>/dev/null; rm -f "$TMP"/fr/*; }
serve() { export NCCL_RAS_ADDR=127.0.0.1:$(cat "$TMP/port"); }
unserve() { unset NCCL_RAS_ADDR; }
evline=$(grep -n "^def eval_step" "$COLL_SRC/tests/stack/nccl_standin.py" | cut -d: -f1)

# 1. Every source names rank 1.
ranks
check "the plugin made a status page per rank" test "$(ls "$COLL_STATUS_DIR" | grep -c '^coll\.0000000000000000\.92906a7ad1050f54\.[01]$')" = 2
serve
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "all sources: a culprit"
check "... one line names rank 1 with all four sources" grep -qE "^=> rank 1 \($(hostname), pid $p1\) holds the others up, behind in allreduce seq 6 of comm NCCL 0x92906a7ad1050f54: named by 4 sources \(NCCL profiler plugin, NCCL RAS, flight recorder, stacks\)$" "$TMP/o"
check "... then its main thread, Python among native" grep -qE "^   its main thread, innermost first: .*eval_step \(nccl_standin.py:$((evline + 1))\) < <module> \(nccl_standin.py:[0-9]+\)" "$TMP/o"
check "... the plugin's page: rank 1 enqueued up to 5" grep -qF "rank 1 ($(hostname), pid $p1) enqueued collectives up to seq 5 and not the next, in eval_step (nccl_standin.py:$((evline + 1))); 1 rank waits in allreduce seq 6 (comm NCCL 0x92906a7ad1050f54)" "$TMP/o"
check "... RAS says the same" grep -qF "NCCL RAS: communicator 0x92906a7ad1050f54: rank 1 (pid $p1) launched AllReduce up to 5" "$TMP/o"
check "... the flight recorder, asked live, says rank 1 did not join seq 6" grep -qF "flight recorder: rank 1 did not join nccl:all_reduce seq 6" "$TMP/o"
check "... the dumps were written on request" test -s "$TMP/fr/d_0" -a -s "$TMP/fr/d_1"
check "... rank 0 is not blamed" sh -c "! grep -q '^=> rank 0' '$TMP/o'"
check "... nothing on stderr" test ! -s "$TMP/e"
collstack --pid "$p0,$p1" --json >"$TMP/j" 2>"$TMP/e"
check "--json: the culprit, the NCCL pages and the queued op" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["rank"] for c in d["culprits"]] == [1], d["culprits"]
pg = {t["rank"]: t["pages"][0] for t in d["tasks"]}
assert pg[0]["seq_started"] == 6 and pg[0]["nccl"] == {"kernel": True, "seq_kernel": 6, "kind_kernel": 1,
    "dtype": "ncclFloat32", "algo": "Ring", "proto": "LL"}, pg[0]
assert pg[1]["seq_started"] == 5 and pg[1]["seq_done"] == 5 and pg[1]["state"] == 2, pg[1]
assert pg[0]["comm"] == "92906a7ad1050f54" and pg[0]["bytes"] == 4 << 20, pg[0]
assert {t["rank"]: t["in_comm"] for t in d["tasks"]} == {0: 1, 1: 0}' "$TMP/j"
unserve

# --cuda, with a stand-in for cuda-gdb that answers as cuda-gdb 13.0 did on an H200.
COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh collstack --pid "$p0,$p1" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "--cuda: each rank's kernel, device, status and the function it is in" grep -qxF "rank 0 ($(hostname), pid $p0) GPU kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL() (device 0, Active, in ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE)" "$TMP/o"
COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh STANDIN_CUDA=none collstack --pid "$p0" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "--cuda: no kernels said as none" grep -qxF "rank 0 ($(hostname), pid $p0) GPU kernels: none" "$TMP/o"
COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh STANDIN_CUDA=refused collstack --pid "$p0" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "--cuda: the debugger's refusal in its own words" grep -qxF "rank 0 ($(hostname), pid $p0) GPU kernels not listed: cuda-gdb listed no kernel table: ptrace: Operation not permitted." "$TMP/o"
COLL_CUDA_GDB=$COLL_SRC/tests/stack/cuda_gdb_standin.sh STANDIN_CUDA=slow timeout 30 "$BIN/collstack" --pid "$p0" --no-color --cuda --no-fr-dump -T 8 >"$TMP/o" 2>&1
check "--cuda: a debugger that never answers is stopped at -T/4, and said" grep -qF "rank 0 ($(hostname), pid $p0) GPU kernels not listed: cuda-gdb gave no answer in the time -T leaves it" "$TMP/o"
check "... and the rank is still running, not stopped" sh -c "kill -0 $p0 && [ \"\$(awk '{print \$3}' /proc/$p0/stat)\" != T ]"
COLL_CUDA_GDB=/nonexistent/cuda-gdb collstack --pid "$p0" --no-color --cuda --no-fr-dump >"$TMP/o" 2>&1
check "--cuda: no debugger: said, with the fix" grep -qF "GPU kernels not listed: no cuda-gdb here (set COLL_CUDA_GDB, or put it on PATH)" "$TMP/o"

# 2. --no-fr-dump: the job is not asked; three sources remain.
rm -f "$TMP"/fr/d_*
collstack --pid "$p0,$p1" --no-color --no-fr-dump >"$TMP/o" 2>&1
expect_code 1 $? "--no-fr-dump"
check "... no dump asked for" test ! -e "$TMP/fr/d_0"
check "... plugin and stacks name rank 1" grep -qE "^=> rank 1 .*: named by 2 sources \(NCCL profiler plugin, stacks\)$" "$TMP/o"
unranks

# 3. The pipe's far end: nobody reads it, it is a plain file, no dump comes, the dump is junk.
ranks STANDIN_DUMP=never
collstack --pid "$p0,$p1" --no-color -T 8 >"$TMP/o" 2>&1
expect_code 1 $? "requests never answered"
check "... said per rank, with the file and the wait" grep -qF "rank 0 (pid $p0): asked for a dump; none was written to $TMP/fr/d_0 within 1.0 s" "$TMP/o"
check "... the other sources still name rank 1" grep -qE "^=> rank 1 .*\(NCCL profiler plugin, stacks\)$" "$TMP/o"
unranks
ranks STANDIN_DUMP=garbage
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>&1
check "a dump that is not a pickle: said" grep -qF "rank 1 (pid $p1): its dump $TMP/fr/d_1 is not a flight recorder dump: a container closes with no MARK open at byte 2" "$TMP/o"
unranks
ranks STANDIN_DUMP=nopipe TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$TMP/fr/none_"
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>&1
check "a pipe that was never made: said" grep -qF "rank 1 (pid $p1): its dump pipe $TMP/fr/none_1.pipe does not exist" "$TMP/o"
unranks
# A plain file where the pipe should be: never written to.
ranks STANDIN_DUMP=nopipe TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$TMP/fr/file_"
echo keep >"$TMP/fr/file_1.pipe"
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>&1
check "a file at the pipe's name: refused" grep -qF "rank 1 (pid $p1): ignored: its dump pipe $TMP/fr/file_1.pipe is not a named pipe (owned by user $(id -un)): left alone" "$TMP/o"
check "... and left as it was" test "$(cat "$TMP/fr/file_1.pipe")" = keep
unranks
# A pipe with no reader (O_NONBLOCK open fails with ENXIO): made here, no process reads it.
ranks STANDIN_DUMP=nopipe TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$TMP/fr/dead_"
mkfifo "$TMP/fr/dead_1.pipe"
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>&1
check "a pipe nobody reads: said" grep -qF "rank 1 (pid $p1): its dump pipe $TMP/fr/dead_1.pipe has no reader" "$TMP/o"
unranks

# The flight recorder off by PyTorch's newer name, on by the older: the newer wins, as in PyTorch.
ranks TORCH_FR_BUFFER_SIZE=0 TORCH_NCCL_TRACE_BUFFER_SIZE=2000
collstack --pid "$p0,$p1" --no-color >"$TMP/o" 2>&1
check "TORCH_FR_BUFFER_SIZE=0 wins over TORCH_NCCL_TRACE_BUFFER_SIZE: not asked" grep -qF "rank 1 (pid $p1): its flight recorder is off (TORCH_FR_BUFFER_SIZE or TORCH_NCCL_TRACE_BUFFER_SIZE is 0)" "$TMP/o"
check "... and no dump written" test ! -e "$TMP/fr/d_1"
unranks

# 4. Kernel events off (COLL_NCCL_KERNEL_EVENTS=0): enqueue counts alone still name rank 1.
ranks COLL_NCCL_KERNEL_EVENTS=0
collstack --pid "$p0,$p1" --no-color --no-fr-dump >"$TMP/o" 2>&1
expect_code 1 $? "enqueue events only"
check "... rank 1 named by the plugin" grep -qE "^=> rank 1 .*behind in allreduce seq 6 of comm NCCL 0x92906a7ad1050f54: named by 2 sources \(NCCL profiler plugin, stacks\)$" "$TMP/o"
collstack --pid "$p0,$p1" --json --no-fr-dump >"$TMP/j" 2>&1
check "... the pages say no kernel event came" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert all(t["pages"][0]["nccl"]["kernel"] is False for t in d["tasks"]), d["tasks"]' "$TMP/j"
unranks
finish
