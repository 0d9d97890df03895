#!/bin/bash
# A program that cannot run is said once, before any rank starts (issue 37,
# item 14): '' ran PATH's first directory in every rank.
. "$(dirname "$0")/lib.sh"

one_line() { # one_line CODE PATTERN DESCRIPTION ARGS...
	local want=$1 pat=$2 d=$3; shift 3
	collrun "$@" >"$TMP/o" 2>"$TMP/e"
	expect_code "$want" $? "$d"
	check "... in one line: $(head -1 "$TMP/e")" sh -c 'test $(wc -l <"$1") -eq 1 &&
		grep -q -- "$2" "$1"' one_line "$TMP/e" "$pat"
	check "... no rank started" test ! -s "$TMP/o"
}
mkdir "$TMP/dir"
printf 'echo hi\n' >"$TMP/noexec"
one_line 2 "^collrun: the program's name is empty: give a program to run$" "collrun -n 2 ''" -n 2 ''
one_line 2 "^collrun: '$TMP/dir' is a directory, not a program$" "a directory" -n 2 "$TMP/dir"
one_line 3 "^collrun: cannot run '$TMP/noexec': Permission denied" "a file not executable" -n 2 "$TMP/noexec"
one_line 3 "^collrun: cannot find program 'no-such-prog-37'" "a program not in PATH" -n 2 no-such-prog-37
# A directory in PATH named like the program is passed over, as execvp does.
mkdir -p "$TMP/p1/tool37" "$TMP/p2"
printf '#!/bin/sh\necho found\n' >"$TMP/p2/tool37"
chmod +x "$TMP/p2/tool37"
PATH=$TMP/p1:$TMP/p2:$PATH collrun -n 1 tool37 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a directory of PATH's passed over"
check "... the program found after it" grep -qx found "$TMP/o"
finish
