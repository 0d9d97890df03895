#!/bin/bash
# [rank] labels on a terminal only (issue 37, item 8): to a file or a pipe
# the ranks' output is theirs, so collcheck --json under collrun is one JSON
# document; --label (mpirun's --tag-output) and --no-label decide otherwise.
. "$(dirname "$0")/lib.sh"

collrun -n 4 collcheck allreduce -e 64K --json >"$TMP/r.json" 2>"$TMP/e"
expect_code 0 $? "collrun -n 4 collcheck allreduce --json > r.json"
check "r.json is one valid JSON document" python3 -m json.tool "$TMP/r.json" >/dev/null

collrun -n 2 sh -c 'echo out; echo err >&2' 2>&1 | sort >"$TMP/o"
check "to a pipe: no labels" test "$(tr '\n' ' ' <"$TMP/o")" = "err err out out "
collrun -n 2 --label sh -c 'echo out; echo err >&2' >"$TMP/o" 2>"$TMP/e"
check "--label: stdout labelled" test "$(sort "$TMP/o" | tr '\n' ' ')" = "[0] out [1] out "
check "--label: stderr labelled" test "$(sort "$TMP/e" | tr '\n' ' ')" = "[0] err [1] err "

# On a terminal (script gives collrun a pty): labelled, unless --no-label.
tty_run() { script -qec "$BIN/collrun $*" /dev/null </dev/null | tr -d '\r' | sort; }
tty_run -n 2 echo hi >"$TMP/t"
check "on a terminal: labelled ($(tr '\n' ' ' <"$TMP/t"))" test "$(tr '\n' ' ' <"$TMP/t")" = "[0] hi [1] hi "
tty_run -n 2 --no-label echo hi >"$TMP/t"
check "on a terminal with --no-label: not labelled" test "$(tr '\n' ' ' <"$TMP/t")" = "hi hi "
finish
