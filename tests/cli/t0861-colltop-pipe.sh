#!/bin/bash
# colltop's batch output read by a reader that goes away (colltop -b | head
# -1) ends quietly with exit 141, as a shell shows SIGPIPE, the workers
# stopped and no page left; a full disk says "No space left on device", exit
# 3 (issue 37, item 5).
. "$(dirname "$0")/lib.sh"
top() { "$BIN/colltop" --np 2 --no-gpu --interval 0.3 "$@"; }

top -b -n 3 2>"$TMP/e" | head -1 >"$TMP/o"
expect_code 141 "${PIPESTATUS[0]}" "-b -n 3 | head -1"
check "-b | head -1: its one line" grep -q '^colltop: 2 ranks on 1 host' "$TMP/o"
check "-b | head -1: nothing on stderr" test ! -s "$TMP/e"
cat "$TMP/e"

top --json -n 3 2>"$TMP/e" | head -1 >"$TMP/o"
expect_code 141 "${PIPESTATUS[0]}" "--json -n 3 | head -1"
check "--json | head -1: one JSON line" python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' "$TMP/o"
check "--json | head -1: nothing on stderr" test ! -s "$TMP/e"
cat "$TMP/e"

# Without an end: colltop -b | head stops by itself, at once.
start=$SECONDS
top -b 2>"$TMP/e" | head -1 >/dev/null
expect_code 141 "${PIPESTATUS[0]}" "-b | head -1, no -n"
check "... within a few intervals" test $((SECONDS - start)) -lt 15
check "... quietly" test ! -s "$TMP/e"

if [ -w /dev/full ]; then
	top -b -n 2 >/dev/full 2>"$TMP/e"
	expect_code 3 $? "-b >/dev/full"
	check "a full disk: said in one line" test "$(cat "$TMP/e")" = \
		"colltop: cannot write standard output: No space left on device"
	cat "$TMP/e"
fi
for _ in $(seq 50); do [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq 0 ] && break; sleep 0.1; done
check "the workers stopped: no status page left" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq 0
finish
