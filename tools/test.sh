#!/bin/bash
# Set up and run every test: the -Werror build with the ctest suite (less the
# soak label: ctest -L soak runs the fault-tolerance scenarios 50 times; and
# the scale label: ctest -L scale, 250 netns hosts, 10-20 minutes), the
# same suite under ASan+UBSan, the style check, and each fuzzer for a while.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
jobs=$(nproc)
fuzz_secs=${COLL_FUZZ_SECONDS:-6}

echo "== style: function length"
tools/check-style.sh

echo "== build (-Werror) and test"
cmake -S . -B build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLL_WERROR=ON >/dev/null
cmake --build build-ci -j"$jobs" >/dev/null
(cd build-ci && ctest --output-on-failure -j1 -LE 'soak|scale')

# The package test (t0203) runs once, on the release build above: a package
# of the sanitized build is never shipped, and CI stays within 30 minutes.
# So do the tests of what is shipped rather than of what runs: the layering
# probes (each compiles one header against include paths the sanitizers do
# not change), the completions (the option tables printed, then each shell)
# and install (where the files go).
# Four more, long and run for what other tests here also run, are left to
# the release pass: the tree launch's kill and loss paths (t0310; t0311 runs
# the relays), a Slurm node's death (t0504; t0501-t0503 run the launcher),
# a real Prometheus scraping (t0911; t0910 runs the listener) and the
# screen in tmux (t0119; t0863 runs the screen and its keys).
# For the same reason each fault scenario runs once here (COLL_FT_REPS=1):
# the sanitizers look at the code each run takes, and the release pass above
# repeats them (twice) for the timing faults; the soak label runs t0110-t0113
# 50 times.
echo "== build with ASan+UBSan (-Werror) and test"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCOLL_WERROR=ON -DCOLL_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
(cd build-asan && COLL_FT_REPS=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j1 -LE 'soak|scale' \
	-E 't0203-deb|t0201-completions|t0202-install|^layering/|t0310-collrun-ssh-tree|t0504-collrun-slurmnodes-nodedeath|t0911-colltop-prometheus|t0119-colltop-tty')

echo "== fuzz each parser for ${fuzz_secs}s"
CC=clang cmake -S . -B build-fuzz -DCOLL_FUZZ=ON -DCOLL_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzzers >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One fuzzer per core at a time, each on its own copy of its corpus; the
# verdicts are read once all have run.
fuzz_one() {
	local f=$1 name
	name=$(basename "$f"); name=${name#fuzz_}
	mkdir -p "$work/$name"
	[ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/$name/"
	local rc=0
	"$f" -max_total_time="$fuzz_secs" -timeout=10 -print_final_stats=0 "$work/$name" \
		>"$work/$name.log" 2>&1 || rc=$?
	echo "$rc" >"$work/$name.rc"
}
for f in build-fuzz/fuzz/fuzz_*; do
	fuzz_one "$f" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
for f in build-fuzz/fuzz/fuzz_*; do
	name=$(basename "$f"); name=${name#fuzz_}
	[ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ] ||
		{ tail -40 "$work/$name.log" || true; echo "fuzzer $name found a crash"; exit 1; }
	echo "fuzz_$name: $(grep -o 'Done [0-9]* runs' "$work/$name.log"), no crash"
done
echo "all tests passed"
