#!/bin/bash
# collstack --pid with none of its processes running here says "no such
# process" and exits 3 (it could not run), naming no culprit; one gone among
# others running is still a finding, listed gone (issue 37, item 3).
. "$(dirname "$0")/lib.sh"
# A pid that was just in use and is now free: a child reaped.
sleep 0 &
GONE=$!
wait $GONE
while kill -0 "$GONE" 2>/dev/null; do sleep 0.05; done

"$BIN/collstack" --pid "$GONE" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--pid of a process that is gone"
check "... one line naming it" test "$(wc -l <"$TMP/e")" -eq 1
check "... says no such process" grep -q "^collstack: no such process: --pid $GONE: none of them runs on this host" "$TMP/e"
check "... no verdict" test ! -s "$TMP/o"
"$BIN/collstack" --pid "$GONE" --json >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "... the same with --json"

# One running, one gone: both are tasks, the gone one named gone.
sleep 30 &
LIVE=$!
echo $LIVE >>"$TMP/pids"
"$BIN/collstack" --no-color --pid "$LIVE,$GONE" >"$TMP/o" 2>&1
code=$?
check "... with one running, it runs (exit $code)" test "$code" -le 1
check "... and lists the gone one" grep -q "pid $GONE is not running here" "$TMP/o"
kill $LIVE; wait $LIVE 2>/dev/null
finish
