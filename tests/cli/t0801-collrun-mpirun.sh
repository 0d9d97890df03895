#!/bin/bash
# mpirun's habits work in collrun (issue 37, item 6): -np N, -hostfile FILE
# (Open MPI's format), -x VAR[=VALUE] to every rank, --tag-output; and only
# before the program's name: the program's own options are its own.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/hosts" <<'EOH'
# an Open MPI hostfile
localhost slots=3   # this machine
EOH
collrun -hostfile "$TMP/hosts" -np 3 sh -c 'echo "r$COLL_RANK of $COLL_SIZE"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-hostfile FILE -np 3"
check "... 3 ranks ran" test "$(sort "$TMP/o" | tr '\n' ' ')" = "r0 of 3 r1 of 3 r2 of 3 "
collrun --hostfile "$TMP/hosts" -np 4 true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "the hostfile's 3 slots are kept to"
collrun -np 2 -oversubscribe -hostfile "$TMP/hosts" true >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-oversubscribe, one dash as mpirun takes it"
collrun --host localhost:4 -npernode 2 sh -c 'echo $COLL_LOCAL_SIZE' >"$TMP/o" 2>"$TMP/e"
check "--host and -npernode, mpirun's names for -H and -N" test "$(tr '\n' ' ' <"$TMP/o")" = "2 2 "

# -x NAME=VALUE, -x NAME (its value here); coll's own variables are refused
# (the id holds the job's secret, which must never ride a command line).
FROM_HERE='a b;$(c)' collrun -n 2 -x NCCL_DEBUG=INFO -x FROM_HERE \
	sh -c 'echo "$COLL_RANK $NCCL_DEBUG $FROM_HERE"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "-x NCCL_DEBUG=INFO -x FROM_HERE"
check "every rank got both, as given ($(tr '\n' '|' <"$TMP/o"))" \
	test "$(sort "$TMP/o" | tr '\n' '|')" = '0 INFO a b;$(c)|1 INFO a b;$(c)|'
env -u NOT_SET_HERE "$BIN/collrun" -x NOT_SET_HERE true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "-x of a variable not set here"
check "... one line saying what to give" \
	grep -q '^collrun: -x NOT_SET_HERE: NOT_SET_HERE is not set here: give -x NOT_SET_HERE=VALUE$' "$TMP/e"
collrun -x '1BAD=x' true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "-x with no variable's name"
for v in COLL_RANK=9 COLL_UNIQUE_ID MASTER_PORT=1; do
	COLL_UNIQUE_ID=x collrun -x "$v" true >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "-x $v, which collrun sets itself"
	check "... one line saying so" grep -q "^collrun: -x ${v%%=*}: collrun sets ${v%%=*} for each rank itself: leave it out$" "$TMP/e"
done

# On a remote host the agent sets -x's variables (as -e), then puts the
# installation's bin first: -x PATH (mpirun's habit) keeps --prefix's dirs.
hold() { echo $BASHPID >>"$TMP/pids"; printf 'coll1:x\n'; exec sleep 60; }
"$BIN/collrun" --agent --uid-stdin --path /opt/pfx/bin -e PATH=/usr/bin:/bin -- \
	sh -c 'echo "$PATH"' >"$TMP/rec" 2>"$TMP/e" < <(hold)
check "remote: -x PATH and --prefix's bin first ($(grep '^o ' "$TMP/rec"))" \
	grep -qx 'o /opt/pfx/bin:/usr/bin:/bin' "$TMP/rec"

# --tag-output labels (a pipe is not labelled by default).
collrun -np 2 --tag-output echo hi >"$TMP/o" 2>"$TMP/e"
check "--tag-output labels every line" test "$(sort "$TMP/o" | tr '\n' '|')" = '[0] hi|[1] hi|'

# After the program's name, -np and -x are the program's.
collrun -n 1 echo -np 2 -x Y >"$TMP/o"
check "the program's own -np and -x reach it" test "$(cat "$TMP/o")" = "-np 2 -x Y"
# -x for --exclude is gone in collrun: --exclude still leaves hosts out.
collrun -H localhost:2,127.0.0.1:2 --exclude 127.0.0.1 -n 2 true >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--exclude, long"
finish
