#!/bin/bash
# colltop takes top's and htop's letters (issue 37, items 9, 10, 12, 14): -d in
# tenths of a second as htop (-d 10 is 1 s), --interval in seconds, -n N
# iterations as top, --np N workers; --bytes below one float is refused in
# one line, not silently made 4; internal options are not in --help.
. "$(dirname "$0")/lib.sh"
top() { "$BIN/colltop" --no-gpu "$@"; }
interval_s() { python3 -c 'import json,sys; print(*[json.loads(l)["interval_s"] for l in open(sys.argv[1])])' "$1"; }

top --json -n 2 --np 2 -d 3 >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "-d 3 -n 2"
check "-n 2: two frames" test "$(wc -l <"$TMP/j")" -eq 2
check "-d 3 is 0.3 s, as htop: $(interval_s "$TMP/j")" test "$(interval_s "$TMP/j")" = "0.3 0.3"
check "--np 2: two workers" test "$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["size"])' "$TMP/j")" = 2
top --once --np 1 -d 10 >"$TMP/o" 2>&1
expect_code 0 $? "-d 10"
check "-d 10 is 1 s" grep -q '^colltop: 1 rank on 1 host  #1  every 1 s' "$TMP/o"
top --once --np 1 --interval 0.5 >"$TMP/o" 2>&1
check "--interval 0.5 is 0.5 s" grep -q '^colltop: 1 rank on 1 host  #1  every 0.5 s' "$TMP/o"

top -d 0 --once >"$TMP/o" 2>&1
expect_code 2 $? "-d 0"
check "-d 0: said in tenths" grep -q "^colltop: -d '0': the interval in tenths of a second, 1 to 36000, as htop (-d 10 is 1 s; --interval takes seconds)" "$TMP/o"
top -d 0.5 --once >"$TMP/o" 2>&1
expect_code 2 $? "-d 0.5 (under a tenth)"
top --interval 0 --once >"$TMP/o" 2>&1
expect_code 2 $? "--interval 0"
check "--interval 0: said" grep -q '^colltop: --interval must be a number from 0.1 to 3600' "$TMP/o"
top -n 0 >"$TMP/o" 2>&1
expect_code 2 $? "-n 0"
check "-n 0: said" grep -q "^colltop: -n/--iterations must be an integer from 1 to 1000000000" "$TMP/o"

for b in 0 3; do
	top --bytes $b --once >"$TMP/o" 2>&1
	expect_code 2 $? "--bytes $b"
	check "--bytes $b: said in one line" grep -q "^colltop: --bytes $b: the probe is one float (4 bytes) at least" "$TMP/o"
done
top --once --np 1 --bytes 4 >"$TMP/o" 2>&1
expect_code 0 $? "--bytes 4"
check "--bytes 4: the probe is 4 bytes" grep -q 'probe 4 x1' "$TMP/o"

"$BIN/colltop" --help >"$TMP/h"
expect_code 0 $? "--help"
check "--help: no internal option" sh -c "! grep -qE -- '--worker|--control-port' '$TMP/h'"
check "--help: -d in tenths" grep -qE -- '^ +-d, --delay TENTHS ' "$TMP/h"
check "--help: -n iterations" grep -qE -- '^ +-n, --iterations N ' "$TMP/h"
check "--help: the usage line and summary fit 80 columns" sh -c "sed -n '1,/^options:/p' '$TMP/h' | awk 'length > 80 { exit 1 }'"
finish
