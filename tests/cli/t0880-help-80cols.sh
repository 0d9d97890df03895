#!/bin/bash
# Every tool's and collcheck subcommand's --help fits 80 columns, its option
# names never run into their text, and no internal option (--worker, those
# "set by" a front end) is listed (issue 37, item 10). It fails until every
# tool's table hides its internal options (help NULL).
. "$(dirname "$0")/lib.sh"
cmds=("collrun" "collstack" "colltop" "collcheck")
for s in all env links allreduce allgather reducescatter broadcast reduce alltoall; do
	cmds+=("collcheck $s")
done
for c in "${cmds[@]}"; do
	# shellcheck disable=SC2086 # "collcheck all" is a tool and its subcommand
	"$BIN"/$c --help >"$TMP/h" 2>"$TMP/e"
	expect_code 0 $? "$c --help"
	check "$c --help: on standard output, nothing on standard error" test -s "$TMP/h" -a ! -s "$TMP/e"
	wide=$(LC_ALL=C.UTF-8 awk 'length($0) > 80 { print length($0) ": " $0 }' "$TMP/h")
	check "$c --help: every line within 80 columns${wide:+: $wide}" test -z "$wide"
	# An option's name and its text stand apart: the text starts in one column after two
	# spaces, or (a name too long for its column) alone on the next line.
	run=$(awk '/^  (-[[:alnum:]],|    --)/ { s = substr($0, 3); sub(/^ +/, "", s)
		if (s ~ /  / && !(substr($0, 27, 2) == "  " && substr($0, 29, 1) != " ")) print }' "$TMP/h" | head -3)
	check "$c --help: option names apart from their text${run:+: $run}" test -z "$run"
	check "$c --help: lists -h and -V" grep -q -- '-V, --version' "$TMP/h"
	internal=$(grep -E -- '--worker|--control-port|\(set by the' "$TMP/h")
	check "$c --help: no internal option${internal:+: $internal}" test -z "$internal"
done
finish
