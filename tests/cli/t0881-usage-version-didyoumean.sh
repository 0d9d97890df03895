#!/bin/bash
# Every tool and subcommand answers -V and --version, and a mistyped
# subcommand or long option is refused in one line naming the likely one,
# exit 2 (issue 37, item 14).
. "$(dirname "$0")/lib.sh"
V=$("$BIN/collrun" --version)
for c in collrun collstack colltop collcheck "collcheck all" "collcheck env" "collcheck links" \
	"collcheck allreduce" "collcheck alltoall"; do
	for v in -V --version; do
		# shellcheck disable=SC2086 # "collcheck all" is a tool and its subcommand
		out=$("$BIN"/$c $v 2>"$TMP/e")
		expect_code 0 $? "$c $v"
		check "$c $v: '${c%% *} ${V##* }'" test "$out" = "${c%% *} ${V##* }" -a ! -s "$TMP/e"
	done
done

"$BIN/collcheck" allreduc >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "collcheck allreduc"
check "... did you mean allreduce, in the error line" \
	grep -qx "collcheck: unknown command 'allreduc'; did you mean allreduce?" "$TMP/e"
check "... then the usage only" test "$(wc -l <"$TMP/e")" -eq 2 -a ! -s "$TMP/o"
"$BIN/collcheck" lnks >/dev/null 2>"$TMP/e"
expect_code 2 $? "collcheck lnks"
check "... did you mean links" grep -q "did you mean links?" "$TMP/e"
"$BIN/collcheck" frobnicate >/dev/null 2>"$TMP/e"
expect_code 2 $? "collcheck frobnicate"
check "... nothing close: no guess, the commands listed" \
	sh -c "! grep -q 'did you mean' '$TMP/e' && grep -q '^  allreduce ' '$TMP/e'"

"$BIN/collcheck" allreduce --iter 3 >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "collcheck allreduce --iter 3"
check "... did you mean --iters, in the error line" \
	grep -qx "collcheck allreduce: unknown option '--iter'; did you mean --iters?" "$TMP/e"
"$BIN/collrun" --hsots h1 true >/dev/null 2>"$TMP/e"
expect_code 2 $? "collrun --hsots"
check "... did you mean --hosts" grep -q "unknown option '--hsots'; did you mean --hosts?" "$TMP/e"
"$BIN/collstack" --jsno >/dev/null 2>"$TMP/e"
expect_code 2 $? "collstack --jsno"
check "... did you mean --json" grep -q "did you mean --json?" "$TMP/e"
"$BIN/colltop" --qwertyuiop >/dev/null 2>"$TMP/e"
expect_code 2 $? "colltop --qwertyuiop"
check "... nothing close: no guess" sh -c "grep -q \"unknown option '--qwertyuiop'\$\" '$TMP/e'"
"$BIN/collcheck" env --work >/dev/null 2>"$TMP/e"
expect_code 2 $? "collcheck env --work"
check "... an internal option is never offered" sh -c "! grep -q 'did you mean --worker' '$TMP/e'"
# Bytes from the command line are escaped before the terminal.
"$BIN/collcheck" $'all\e[2Jreduce' >/dev/null 2>"$TMP/e"
expect_code 2 $? "a command holding an escape"
check "... escaped" sh -c "! grep -q \$'\\e' '$TMP/e'"
finish
