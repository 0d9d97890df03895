#!/bin/bash
# What another user can put in front of collrun (issue 34, finding 7): the
# job directory's parent $TMPDIR/coll-<uid> made first by them (records then
# go to $XDG_RUNTIME_DIR/coll/jobs, said once, and collstack still finds the
# job), and a FIFO given as --hostfile or -F (refused in one line, within the
# 5 s a pipe gets; -F at once), while bash's <(...) still works.
. "$(dirname "$0")/lib.sh"
attacker_init
unset COLL_JOB_DIR
export TMPDIR=$PUB XDG_RUNTIME_DIR=$TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
as_atk mkdir -m 777 "$PUB/coll-0"

"$BIN/collrun" -n 1 sleep 600 >"$TMP/o" 2>"$TMP/e" &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do ls "$XDG_RUNTIME_DIR"/coll/jobs/*.json >/dev/null 2>&1 && break; sleep 0.1; done
check "the record went to \$XDG_RUNTIME_DIR/coll/jobs" sh -c "ls '$XDG_RUNTIME_DIR'/coll/jobs/*.json"
check "collrun said so once, naming the squatter's uid" \
	grep -q "^collrun: warning: $PUB/coll-0 belongs to uid $ATK_UID, not you .*: the job record is in $XDG_RUNTIME_DIR/coll/jobs/[0-9a-f]*.json instead; remove $PUB/coll-0 (as root)$" "$TMP/e"
check "... in one line" test "$(wc -l <"$TMP/e")" -eq 1
"$BIN/collstack" --no-color >"$TMP/s" 2>&1
check "collstack finds the job there" grep -q '^collstack: 1 rank on 1 host' "$TMP/s"
check "nothing was written into the squatter's directory" test -z "$(ls -A "$PUB/coll-0")"

# A FIFO held open by its writer, as --hostfile and as -F.
as_atk mkfifo "$PUB/hosts"
as_atk python3 -c 'import os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR); time.sleep(600)' "$PUB/hosts" &
for _ in $(seq 100); do [ -p "$PUB/hosts" ] && pgrep -u "$ATK" python3 >/dev/null && break; sleep 0.1; done
t0=$(date +%s)
collrun --hostfile "$PUB/hosts" true >"$TMP/o" 2>&1
expect_code 2 $? "--hostfile FIFO"
check "... named, in one line" grep -q "^collrun: hostfile '$PUB/hosts' is a pipe that stayed silent for 5 s: give a file of host names" "$TMP/o"
check "... within the pipe's 5 s and a margin" test $(($(date +%s) - t0)) -le 30
collrun -F "$PUB/hosts" -H a,b true >"$TMP/o" 2>&1
expect_code 2 $? "-F FIFO"
check "... refused at once" grep -q "^collrun: -F '$PUB/hosts' is a FIFO, not a file: give an ssh_config file" "$TMP/o"
collrun --label --hostfile <(echo localhost) -n 1 echo hi >"$TMP/o" 2>&1
expect_code 0 $? "--hostfile <(...) still works"
check "... and runs" grep -q '^\[0\] hi' "$TMP/o"
finish
