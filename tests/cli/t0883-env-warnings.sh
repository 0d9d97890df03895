#!/bin/bash
# A COLL_* setting the tools would quietly ignore is said once, in one line
# naming the variable, its value (escaped) and what is used instead; a name
# that is a slip for a known one is named with it; a rank never repeats what
# its front end said (issue 37, item 15).
. "$(dirname "$0")/lib.sh"
RUN=("$BIN/collrun" -n 1 true)

COLL_STATUS_DIR=/nonexistent "${RUN[@]}" 2>"$TMP/e"
expect_code 0 $? "COLL_STATUS_DIR=/nonexistent"
check "... one line: the variable, the value, what is used" \
	grep -qx "collrun: warning: COLL_STATUS_DIR is '/nonexistent', not a directory: using /dev/shm" "$TMP/e"
check "... only that line" test "$(wc -l <"$TMP/e")" -eq 1
COLL_DEBUG=bogus "${RUN[@]}" 2>"$TMP/e"
expect_code 0 $? "COLL_DEBUG=bogus"
check "... one line: accepted values, what happens" \
	grep -qx "collrun: warning: COLL_DEBUG is 'bogus', not WARN, INFO or TRACE: nothing is logged" "$TMP/e"
COLL_DEBUG=info COLL_STATUS_DIR=$TMP/shm COLL_TIMEOUT=30 "${RUN[@]}" 2>"$TMP/e"
check "good values: no warning" sh -c "! grep -q warning '$TMP/e'"
COLL_TIMEOUT=10m "${RUN[@]}" 2>"$TMP/e"
check "COLL_TIMEOUT=10m: the default is used, and said" \
	grep -qx "collrun: warning: COLL_TIMEOUT is '10m', not a number from 0.001 to 604800: using 300" "$TMP/e"
COLL_DEBUG=$'\e]52;c;eA==\a' "${RUN[@]}" 2>"$TMP/e"
check "a value with escapes is escaped" sh -c "grep -q 'COLL_DEBUG is' '$TMP/e' && ! grep -q \$'\\e' '$TMP/e'"

# Names: a slip is named with the one it is likely to be; others are none of coll's business.
env COLL_STATUSDIR=/x COLL_DEBGU=INFO COLL_MY_OWN_THING=1 "${RUN[@]}" 2>"$TMP/e"
check "COLL_STATUSDIR: did you mean COLL_STATUS_DIR" \
	grep -qx "collrun: warning: 'COLL_STATUSDIR' is not a coll variable; did you mean COLL_STATUS_DIR?" "$TMP/e"
check "COLL_DEBGU: did you mean COLL_DEBUG" grep -q "'COLL_DEBGU' is not a coll variable; did you mean COLL_DEBUG?" "$TMP/e"
check "a name close to none: nothing" sh -c "! grep -q COLL_MY_OWN_THING '$TMP/e'"
check "one line each" test "$(wc -l <"$TMP/e")" -eq 2

# A job: collrun says it once, its ranks (coll tools themselves) say nothing.
COLL_DEBUG=bogus "$BIN/collrun" -n 3 "$BIN/collcheck" allreduce --engine coll -b 8 -e 8 -n 1 -w 0 \
	>/dev/null 2>"$TMP/e"
expect_code 0 $? "a job with COLL_DEBUG=bogus"
check "... warned once, by collrun" test "$(grep -c 'COLL_DEBUG is' "$TMP/e")" -eq 1
COLL_DEBUG=bogus "$BIN/collcheck" allreduce --engine coll -N 3 -b 8 -e 8 -n 1 -w 0 >/dev/null 2>"$TMP/e"
check "collcheck alone: warned once, by its front end" test "$(grep -c 'COLL_DEBUG is' "$TMP/e")" -eq 1
# Each tool checks: collstack and colltop read the pages too.
COLL_STATUS_DIR=/nonexistent "$BIN/collstack" --pid $$ --no-color >/dev/null 2>"$TMP/e"
check "collstack warns too" grep -q "^collstack: warning: COLL_STATUS_DIR is '/nonexistent'" "$TMP/e"
finish
