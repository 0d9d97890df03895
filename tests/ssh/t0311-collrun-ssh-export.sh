#!/bin/bash
# collrun -x over SSH, flat and through the tree's relays: the user's
# variables (tokens, keys) reach every remote rank whole, a value with a
# newline and a percent sign too, and no process's command line on any host
# holds them (ps shows argv to everyone: they travel on the agent's stdin).
. "$(dirname "$0")/lib.sh"

secret=tok-$RANDOM$RANDOM-$$
export T_SECRET=$secret T_MULTI=$'line one\nline 2 %41 100%'
for t in 0 1; do
	"$BIN/collrun" --label -F "$CFG" -H "$HOSTS" --tree $t -x T_SECRET -x T_MULTI -x T_GIVEN=given-value \
		sh -c 'printf "%s|%s|%s\n" "$T_SECRET" "$T_MULTI" "$T_GIVEN" | tr "\n" "~"; echo; echo up; sleep 3' \
		>"$TMP/o" 2>"$TMP/e" &
	pid=$!
	echo $pid >>"$TMP/pids"
	for _ in $(seq 150); do [ "$(grep -c ' up$' "$TMP/o")" -ge 4 ] && break; sleep 0.1; done
	check "--tree $t: 4 ranks up" test "$(grep -c ' up$' "$TMP/o")" -eq 4
	check "--tree $t: no process's arguments hold the value, on any host" test "$(pgrep -fc -- "$secret")" -eq 0
	check "--tree $t: ... while the ranks still ran" kill -0 $pid
	wait $pid
	expect_code 0 $? "--tree $t: the job"
	check "--tree $t: every rank has the three variables whole" \
		test "$(grep -cF "] $secret|line one~line 2 %41 100%|given-value~" "$TMP/o")" -eq 4
done
# Too long for one line of an agent's stdin: refused before anything starts.
T_BIG=$(head -c 20000 /dev/zero | tr '\0' x) "$BIN/collrun" -F "$CFG" -H "$HOSTS" -x T_BIG true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "-x of 20000 bytes"
check "-x of 20000 bytes: said, with what to do" grep -q "^collrun: -x T_BIG: its value is 20000 bytes, over 16384: put it in a file" "$TMP/e"
finish
