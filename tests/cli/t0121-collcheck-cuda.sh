#!/bin/bash
# --engine cuda where it cannot run: built without the CUDA toolkit (CI) or
# without a GPU (no libcuda.so.1). Every rank exits 3 with one line naming
# the reason, quickly, with no crash or sanitizer report and no rows; usage
# errors name the new engine. tests/gpu/cuda_engine.sh tests it on GPUs.
. "$(dirname "$0")/lib.sh"

cache=${COLL_BUILD:+$COLL_BUILD/CMakeCache.txt}
if [ -n "$cache" ] && [ -f "$cache" ] && ! grep -q '^COLL_CUDA:STRING=OFF$' "$cache" &&
	grep -q '^COLL_NVCC:FILEPATH=/' "$cache"; then
	why='no CUDA driver (libcuda.so.1)'
	have=kernels
else
	why='coll was built without the CUDA toolkit (nvcc): rebuild with it'
	have=none
fi
echo "# this build has $have; expecting: $why"

if [ "$have" = kernels ] && ldconfig -p | grep -q 'libcuda\.so\.1 '; then
	echo "# skipped the no-GPU checks: this machine has a CUDA driver (tests/gpu/cuda_engine.sh runs there)"
else
	for k in allreduce allgather reducescatter broadcast reduce alltoall; do
		timeout 60 "$BIN/collcheck" $k -N 2 -b 8 -e 1M -n 1 -w 0 --engine cuda >"$TMP/o" 2>"$TMP/e"
		expect_code 3 $? "$k --engine cuda cannot run here"
		check "$k: one line per rank naming the reason" test "$(grep -c "^\[[01]\] collcheck: cannot run on coll's CUDA engine: rank [01]: $why" "$TMP/e")" -eq 2
		check "$k: no rows" test "$(grep -c '^ *[0-9]' "$TMP/o")" -eq 0
		check "$k: no crash or sanitizer report" sh -c "! grep -Eqi 'sanitizer|runtime error|segmentation|core dumped|abort' '$TMP/e'"
	done
	timeout 60 "$BIN/collrun" -n 3 "$BIN/collcheck" allreduce -b 8 -e 64 --engine cuda >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "3 ranks under collrun"
	check "each of 3 ranks says why once" test "$(grep -c "collcheck: cannot run on coll's CUDA engine: rank [012]: $why" "$TMP/e")" -eq 3
	COLL_CUDA_P2P=0 timeout 60 "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 --engine cuda >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "the staged path asked for cannot run either"
	check "it says the same" grep -q "rank 0: $why" "$TMP/e"
	if [ "$have" = kernels ]; then
		# A choice the engine does not know is named before it looks for a GPU.
		for v in COLL_CUDA_ROOTED=sideways COLL_CUDA_COPY=sideways; do
			env "$v" timeout 60 "$BIN/collcheck" broadcast -N 2 -b 8 -e 8 --engine cuda >"$TMP/o" 2>"$TMP/e"
			expect_code 3 $? "$v is refused"
			check "$v: each rank names it and the choices" test "$(grep -c "rank [01]: $v: use [a-z]*, [a-z]* or auto" "$TMP/e")" -eq 2
		done
	fi
fi

# auto is unchanged: NCCL where it can run, else coll's own; never the CUDA engine.
timeout 60 "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 -n 1 -w 0 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "auto runs"
if ldconfig -p | grep -q 'libcuda\.so\.1 '; then
	check "auto runs NCCL or coll's own" grep -Eq '^# collcheck allreduce: 2 ranks, engine (coll|nccl)' "$TMP/o"
else
	check "auto runs coll's own without a GPU" grep -q '^# collcheck allreduce: 2 ranks, engine coll' "$TMP/o"
fi
collcheck reduce --engine cuda --on-failure shrink >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "--engine cuda --on-failure shrink is a usage error"
check "it says why not" grep -q "^collcheck reduce: --on-failure shrink needs --engine coll: the CUDA engine" "$TMP/e"
collcheck reduce --engine gpu >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "--engine gpu is a usage error"
check "an unknown engine lists cuda" grep -q "use auto, coll, nccl or cuda" "$TMP/e"
collcheck alltoall --help >"$TMP/o" 2>&1
check "--help names cuda" grep -q 'auto|coll|nccl|cuda' "$TMP/o"
check "no status pages left" test -z "$(ls "$COLL_STATUS_DIR")"
finish
