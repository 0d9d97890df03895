#!/bin/bash
# The evidence rule (issue 34, finding 1; docs/SECURITY.md): another user's
# process that claims a rank of root's job (COLL_JOBID, COLL_RANK in its
# environment, a status page of its own) is listed as ignored and never
# named in root's verdict; so is a process of root's own that claims the job
# but was not started by its collrun. --match takes only root's processes
# unless --user names another user.
. "$(dirname "$0")/lib.sh"
attacker_init
collstack() { "$BIN/collstack" "$@"; }
state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
cp "$COLL_BUILD/tests/stack_pager" "$ATK_DIR/pager"
chmod 755 "$ATK_DIR/pager"
# Wait (up to 30 s) until DIR holds N pages.
wait_pages() {
	for _ in $(seq 300); do [ "$(ls "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0; sleep 0.1; done
	return 1
}

# Root's job of 2 ranks, both waiting in allreduce seq 9: nobody is behind.
"$BIN/collrun" -n 2 "$ATK_DIR/pager" 9 5 >"$TMP/job.out" 2>&1 &
echo $! >>"$TMP/pids"
check "root's job published its 2 pages" wait_pages "$COLL_STATUS_DIR" 2
ID=$(ls "$COLL_JOB_DIR" | head -1); ID=${ID%.json}
check "root's job has a record ($ID)" test -n "$ID"

# The impostor: rank 2 of 3 at seq 8 in train_step, with its own page, stopped.
as_atk env COLL_JOBID="$ID" COLL_RANK=2 COLL_SIZE=3 COLL_STATUS_DIR="$PUB" \
	"$ATK_DIR/pager" 9 2 >/dev/null 2>&1 &
check "the impostor published its page" wait_pages "$PUB" 1
IMP=$(pgrep -u "$ATK" -f "$ATK_DIR/pager")
echo "$IMP" >>"$TMP/pids"
kill -STOP "$IMP"

# Both of root's ranks wait in one op: once its pages stand still, that is a
# hang inside it with no rank late (exit 1), and no culprit.
settled --job "$ID"
nculprit() { grep -c '^=> ' "$TMP/o"; }
collstack --job "$ID" --no-color >"$TMP/o" 2>"$TMP/e"
code=$?
expect_code 1 "$code" "--job: a hang with no rank late"
check "--job: the impostor does not make a culprit" test "$(nculprit)" = 0
check "--job: the impostor is listed as ignored, with its user" \
	grep -q "^ignored: .*pid $IMP of user $ATK claims job $ID, which is root's" "$TMP/o"
check "--job: the verdict never names it" sh -c "! grep -v '^ignored:' '$TMP/o' | grep -q 'pid $IMP'"
check "--job: the 2 real ranks are read" grep -q '^collstack: 2 ranks on 1 host' "$TMP/o"
collstack --job "$ID" --json >"$TMP/j" 2>/dev/null
check "--json: the impostor under \"ignored\", not among the tasks" python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))
assert any("pid %s of user" % sys.argv[2] in s for s in r["ignored"]), r.get("ignored")
assert all(t["pid"] != int(sys.argv[2]) for t in r["tasks"])
assert r["culprits"] == [], r["culprits"]' "$TMP/j" "$IMP"

# Root's own process that claims the job but was not started by its collrun.
env COLL_JOBID="$ID" COLL_RANK=1 COLL_SIZE=2 sleep 600 &
SL=$!
echo "$SL" >>"$TMP/pids"
for _ in $(seq 100); do grep -q COLL_JOBID "/proc/$SL/environ" 2>/dev/null && break; sleep 0.1; done
collstack --job "$ID" --no-color >"$TMP/o" 2>&1
check "--job with a stray process of root's claiming rank 1: no culprit" test "$(nculprit)" = 0
check "... it is ignored: not started by the job's collrun" \
	grep -q "^ignored: .*pid $SL of user root claims job $ID but was not started by its collrun, collcheck or Slurm" "$TMP/o"
kill "$SL"

# A setuid-root launcher named collrun, run by the other user: its child runs
# with root's effective uid and the other user's real one, under a "collrun"
# of effective uid root. Neither speaks for root's job.
cat >"$TMP/suid.c" <<'EOC'
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) { pid_t p = fork(); (void)argc;
	if (p == 0) { execv(argv[1], argv + 1); _exit(127); }
	waitpid(p, 0, 0); return 0; }
EOC
mkdir -p -m 755 "$TMP/suid"
cc -o "$TMP/suid/collrun" "$TMP/suid.c" && chmod 4755 "$TMP/suid/collrun"
as_atk "$TMP/suid/collrun" /usr/bin/env COLL_JOBID="$ID" COLL_RANK=2 COLL_SIZE=3 /bin/sleep 600 &
SU=""
for _ in $(seq 100); do
	SU=$(pgrep -U "$ATK_UID" -x sleep) && grep -q COLL_JOBID "/proc/$SU/environ" 2>/dev/null && break
	sleep 0.1
done
echo "$SU" >>"$TMP/pids"
if [ -n "$SU" ] && grep -q "^Uid:[[:space:]]*$ATK_UID[[:space:]]*0" "/proc/$SU/status"; then
	collstack --job "$ID" --no-color >"$TMP/o" 2>&1
	check "--job with a setuid child claiming rank 2: no culprit" test "$(nculprit)" = 0
	check "... it is ignored: a setuid program speaks for no one" \
		grep -q "^ignored: .*pid $SU runs as user root but was started by user $ATK (a setuid program)" "$TMP/o"
	check "... and only the 2 real ranks are read" grep -q '^collstack: 2 ranks on 1 host' "$TMP/o"
else
	echo "# no setuid here (nosuid mount?): the setuid case is not run"
fi
[ -n "$SU" ] && kill -9 "$SU" 2>/dev/null

# --match: root's processes only, unless --user names the other user.
collstack --match "^$ATK_DIR/pager" --no-color >"$TMP/o" 2>&1
check "--match: the other user's process is ignored, --user named" \
	grep -q "^ignored: .*pid $IMP belongs to user $ATK, not root: give --user" "$TMP/o"
check "--match: root's 2 processes read" grep -q '^collstack: 2 ranks on 1 host' "$TMP/o"
collstack --match "^$ATK_DIR/pager" --user "$ATK" --no-color >"$TMP/o" 2>&1
check "--match --user $ATK: only that user's process" grep -q '^collstack: 1 rank on 1 host' "$TMP/o"
check "--match --user $ATK: it is read" grep -q "pid $IMP" "$TMP/o"
check "the impostor is left stopped, as it was" test "$(state_of "$IMP")" = T

# A job collcheck started itself (its ranks are collcheck's children) is read.
kill "$(cat "$TMP/pids" | head -1)" 2>/dev/null
rm -f "$COLL_JOB_DIR"/*.json
COLL_FAULT=1@20:hang "$BIN/collcheck" allreduce -N 2 -b 8 -e 8 -n 1000000 -w 0 >/dev/null 2>&1 &
echo $! >>"$TMP/pids"
for _ in $(seq 300); do
	collstack --no-color >"$TMP/o" 2>&1
	grep -q 'is in allreduce seq 20' "$TMP/o" && break
	sleep 0.1
done
check "collcheck's own job: both ranks read, rank 1 named" sh -c "grep -q '^collstack: 2 ranks on 1 host' '$TMP/o' && grep -q '^rank 1 (.*) is in allreduce seq 20' '$TMP/o'"

# Root reads the other user's own collrun job by naming the user: its record
# is in that user's job directory, its ranks that user's.
cp "$BIN/collrun" "$ATK_DIR/collrun" && chmod 755 "$ATK_DIR/collrun"
as_atk mkdir -m 700 "$ATK_DIR/shm"
as_atk env TMPDIR="$ATK_DIR" COLL_STATUS_DIR="$ATK_DIR/shm" "$ATK_DIR/collrun" -n 2 "$ATK_DIR/pager" 9 1 \
	>/dev/null 2>&1 &
for _ in $(seq 300); do [ "$(ls "$ATK_DIR/shm" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
AID=$(ls "$ATK_DIR/coll-$ATK_UID/jobs" 2>/dev/null | head -1); AID=${AID%.json}
TMPDIR=$ATK_DIR COLL_JOB_DIR= collstack --job "$AID" --no-color >"$TMP/o" 2>&1
expect_code 3 $? "--job of another user's job without --user: not root's"
TMPDIR=$ATK_DIR COLL_JOB_DIR= settled --job "$AID" --user "$ATK"
TMPDIR=$ATK_DIR COLL_JOB_DIR= collstack --job "$AID" --user "$ATK" --no-color >"$TMP/o" 2>&1
expect_code 1 $? "--job $AID --user $ATK: the other user's job, a culprit"
check "... its 2 ranks read and rank 1 named" sh -c "grep -q '^collstack: 2 ranks on 1 host' '$TMP/o' && grep -q '^rank 1 (.*) is at seq 8 outside any collective' '$TMP/o'"
TMPDIR=$ATK_DIR COLL_JOB_DIR= collstack --user "$ATK" --no-color >"$TMP/o" 2>&1
check "--user $ATK alone: that user's newest job" grep -q '^collstack: 2 ranks on 1 host' "$TMP/o"

# Bad --user, and --user from a user who is not root.
collstack --user no-such-user-$$ --pid 1 >"$TMP/o" 2>&1
expect_code 2 $? "--user with an unknown name"
check "... says so in one line" grep -q "^collstack: --user 'no-such-user-$$': no such user here" "$TMP/o"
as_atk "$BIN/collstack" --user root --pid 1 >"$TMP/o" 2>&1
expect_code 2 $? "--user root from another user"
check "... only root may" grep -q "only root may read another user's processes" "$TMP/o"
finish
