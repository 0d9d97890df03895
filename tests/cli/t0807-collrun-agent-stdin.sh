#!/bin/bash
# The agent reads the user's -x variables from its stdin (envwire.h), as the
# SSH launch sends them: values with a newline and a percent sign come whole;
# a bad escape, a line over the agent's bound, or too many lines are each
# said in one line, exit 3, and the program is never run.
. "$(dirname "$0")/lib.sh"
agent() { "$BIN/collrun" --agent --uid-stdin --env-stdin -- sh -c 'touch "$0"; printf "%s|%s\n" "$A" "$B"' "$TMP/ran"; }

# stdin stays open a moment: its end stops the program (the launcher went away).
(printf 'coll1:x\nenv A=b%%0ac\nenv B=%%25\n.\n'; sleep 3) | agent >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "two variables"
check "... the program has them whole" test "$(grep '^o ' "$TMP/o" | tr '\n' '~')" = "o b~o c|%~"

rm -f "$TMP/ran"
printf 'coll1:x\nenv A=%%zz\n.\n' | agent >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a bad escape"
check "... said" grep -q "^collrun --agent: a bad variable line on stdin" "$TMP/e"
check "... the program never ran" test ! -e "$TMP/ran"

(printf 'coll1:x\nenv A='; head -c 70000 /dev/zero | tr '\0' a; printf '\n.\n') | agent >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a line over 64 KiB"
check "... said as too long" grep -q "^collrun --agent: a variable line on stdin is over 65536 bytes" "$TMP/e"

(printf 'coll1:x\n'; for i in $(seq 4097); do echo "env V$i=x"; done; echo .) | agent >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "4097 variables"
check "... said" grep -q "^collrun --agent: over 4096 variables on stdin" "$TMP/e"

printf 'coll1:x\nenv A=b\n' | agent >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "no end line"
check "... said" grep -q "^collrun --agent: the variables on stdin did not end" "$TMP/e"
check "... the program never ran" test ! -e "$TMP/ran"
finish
