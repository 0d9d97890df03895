#!/bin/bash
# collrun's options (issue 37, items 9 and 10): -T/--timeout as everywhere
# else (-t still taken, not listed); --help lists -x, --label, --oversubscribe.
. "$(dirname "$0")/lib.sh"

collrun -T 0.5 -n 1 sleep 30 >"$TMP/o" 2>"$TMP/e"
expect_code 124 $? "-T 0.5"
collrun -t 0.5 -n 1 sleep 30 >"$TMP/o" 2>"$TMP/e"
expect_code 124 $? "-t 0.5, the old letter"
collrun --help >"$TMP/h"
expect_code 0 $? "--help"
check "-T, --timeout listed" grep -q '^ *-T, --timeout SECONDS' "$TMP/h"
check "-t not listed" sh -c "! grep -q '^ *-t[, ]' '$TMP/h'"
for o in '-x VAR\[=VALUE\]' '--label' '--no-label' '--oversubscribe' '--exclude HOSTS'; do
	check "$o listed" grep -q -- "^ *\(-., \)\?$o " "$TMP/h"
done
check "--exclude has no -x" sh -c "! grep -q -- '-x, --exclude' '$TMP/h'"
collrun -x node3 -n 1 true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "-x HOST, the old exclusion"
check "... points to --exclude" grep -q "to leave out a host, give --exclude node3$" "$TMP/e"
"$BIN/collcheck" env -f 4 >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "collcheck -f N, the old fanout"
check "... did you mean --fanout" grep -q "^collcheck env: unknown option '-f'; did you mean --fanout?$" "$TMP/e"
check "the summary says what reaches remote ranks" grep -q 'remote ranks also get the -x variables' "$TMP/h"
finish
