#!/bin/bash
# collstack --pid 1 as root (issue 37, item 3): init is read as any process
# (as py-spy and STAT read any pid). Where the kernel refuses to trace it,
# the line says so and why; it never tells root to run as root (it said "run
# collstack as root"). Without root the hint to run as root stays.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }

"$BIN/collstack" --pid 1 --no-color --no-fr-dump >"$TMP/o" 2>"$TMP/e"
code=$?
cat "$TMP/o" "$TMP/e" >"$TMP/all"
check "--pid 1 as root: read (0) or refused (3), exit $code" test "$code" = 0 -o "$code" = 3
check "... never 'run collstack as root'" sh -c "! grep -qiE 'run collstack as root|or as root' '$TMP/all'"
check "... task 0 is pid 1" grep -q "^collstack: 1 task on 1 host" "$TMP/o"
if [ "$code" = 3 ]; then
	check "... refused: said why, with pid 1" grep -q "^task 0 ([^ ]*, pid 1): no stacks: ptrace of pid 1 was refused though collstack runs as root with CAP_SYS_PTRACE: the kernel or a security module" "$TMP/o"
else
	check "... read: its threads in the tree" grep -q '^\[0\] (1) [0-9]* thread' "$TMP/o"
fi

# Without root, root's pid 1 is another user's: the hint to run as root stays.
if command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin \
		COLL_STATUS_DIR="$TMP/none" COLL_JOB_DIR="$TMP/none" \
		"$BIN/collstack" --pid 1 --no-color --no-fr-dump >"$TMP/o" 2>&1
	expect_code 3 $? "--pid 1 as nobody: cannot"
	check "... says to run as that user or as root" grep -q "pid 1 belongs to user root, not nobody: run collstack as that user or as root" "$TMP/o"
fi
finish
