#!/bin/bash
# Exit codes, fail-fast, --timeout, and clear errors for bad input.
. "$(dirname "$0")/lib.sh"

collrun -n 3 --grace 0.5 sh -c 'if [ $COLL_RANK = 2 ]; then exit 7; fi; sleep 30' >"$TMP/o" 2>"$TMP/e"
expect_code 7 $? "the failing rank's code is collrun's"
check "the failing rank is named" grep -q 'rank 2 (pid [0-9]*) exited with code 7' "$TMP/e"

start=$(date +%s)
collrun -n 3 --grace 0.5 sh -c 'if [ $COLL_RANK = 1 ]; then kill -9 $$; fi; sleep 30' >"$TMP/o" 2>"$TMP/e"
code=$?
expect_code 137 $code "a rank killed by a signal gives 128+signal"
check "the signal is named" grep -q 'rank 1 (pid [0-9]*) was killed by signal 9 (SIGKILL)' "$TMP/e"
check "the others were stopped quickly" test $(($(date +%s) - start)) -lt 15

# A rank that exits but leaves a child holding its output is still stopped.
start=$(date +%s)
collrun -n 2 --grace 0.5 sh -c 'sleep 300 & exit 1' >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a rank whose child keeps its output open"
check "collrun does not wait for that child" test $(($(date +%s) - start)) -lt 10

start=$(date +%s)
collrun -n 2 --timeout 1 sleep 30 >"$TMP/o" 2>"$TMP/e"
expect_code 124 $? "--timeout stops the job"
check "--timeout is reported" grep -q 'ran past --timeout' "$TMP/e"
check "--timeout is prompt" test $(($(date +%s) - start)) -lt 10

collrun -n 2 /nonexistent/prog >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a missing program cannot run"
check "the missing program is named" grep -q "cannot find program '/nonexistent/prog'" "$TMP/e"
# Found and executable, but execve fails (its interpreter is missing): each
# rank says which program and why, and the job ends with 127.
printf '#!/nonexistent/interp\necho hi\n' >"$TMP/badint"
chmod +x "$TMP/badint"
collrun -n 2 --label "$TMP/badint" >"$TMP/o" 2>"$TMP/e"
expect_code 127 $? "a program whose interpreter is missing"
check "each rank names it and why" test "$(grep -cF "] collrun: cannot execute $TMP/badint: no such file (a script's #! interpreter may be missing)" "$TMP/e")" -eq 2

for bad in "-n 0 true" "-n x true" "--bogus true" "-n" "" "--timeout -1 true"; do
	# shellcheck disable=SC2086
	collrun $bad >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "usage error for '$bad'"
	check "one clear line for '$bad'" test "$(grep -c '^collrun: ' "$TMP/e")" -eq 1
done
check "no status pages or job records left" test -z "$(find "$COLL_STATUS_DIR" "$COLL_JOB_DIR" -type f)"
finish
