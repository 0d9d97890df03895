#!/bin/bash
# A job whose collrun was SIGKILLed leaves its record and status pages
# (issue 37, item 4): collstack says what is left and how to remove it, exit
# 3 (it said only "no process of the job was found"). A collrun killed but
# not reaped (a zombie) is gone too; ranks still running after their collrun
# are named, with the flag that reads them.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" --no-color --no-fr-dump "$@"; }
ranks_of() { env -u LD_PRELOAD pgrep -f "^[^ ]*collcheck allreduce -b 8 -e 8 -n 99999$1"; }

# start_job TAG: a collrun job under a parent that does not reap it (a
# script's Python), its collrun's pid in $CR, its id in $ID, pages written.
start_job() {
	python3 -c 'import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.pid, flush=True)
time.sleep(120)' "$BIN/collrun" -n 2 "$BIN/collcheck" allreduce -b 8 -e 8 -n "99999$1" -w 0 \
		>"$TMP/cr.$1" &
	echo $! >>"$TMP/pids"
	for _ in $(seq 300); do [ -s "$TMP/cr.$1" ] && [ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 2 ] && break; sleep 0.1; done
	CR=$(cat "$TMP/cr.$1")
	ID=$(basename "$(ls "$COLL_JOB_DIR"/*.json | head -1)" .json)
}

# 1. collrun SIGKILLed, left a zombie by its parent: the ranks end, the files stay.
start_job 1
check "job started" test -n "$CR" -a -n "$ID"
kill -9 "$CR"
for _ in $(seq 100); do ranks_of 1 >/dev/null || break; sleep 0.1; done
ranks_of 1 >/dev/null
check "its ranks are gone" test $? -ne 0
# A rank that sees its collrun gone may remove its own page on the way out, or
# die first: count what is left once the ranks are gone.
np=$(ls "$COLL_STATUS_DIR" | grep -c "^coll\.$ID\.")
case $np in
0) want="job $ID: its collrun (pid $CR) is gone and none of its processes runs here; its record ($COLL_JOB_DIR/$ID.json) is left over: remove it with rm $COLL_JOB_DIR/$ID.json" ;;
1) want="job $ID: its collrun (pid $CR) is gone and none of its processes runs here; its record ($COLL_JOB_DIR/$ID.json) and 1 status page are left over: remove them with rm $COLL_JOB_DIR/$ID.json $COLL_STATUS_DIR/coll.$ID.\*" ;;
*) want="job $ID: its collrun (pid $CR) is gone and none of its processes runs here; its record ($COLL_JOB_DIR/$ID.json) and $np status pages are left over: remove them with rm $COLL_JOB_DIR/$ID.json $COLL_STATUS_DIR/coll.$ID.\*" ;;
esac
collstack --job "$ID" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--job of a job whose collrun is a zombie"
check "... says what is left and how to remove it" grep -qx "collstack: $want" "$TMP/e"
check "... nothing on stdout" test ! -s "$TMP/o"
collstack >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "plain collstack"
check "... the same line" grep -qx "collstack: $want" "$TMP/e"
collstack --json >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--json: the same exit"
check "the files are left alone" test -f "$COLL_JOB_DIR/$ID.json" -a "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq "$np"
sh -c "$(sed -n 's/.*remove \(them\|it\) with //p' "$TMP/e")"
check "the command given removes them" test -z "$(ls "$COLL_JOB_DIR" "$COLL_STATUS_DIR" | grep coll\\.\\\|json)"

# 1b. No command to paste when a path is more than plain words (a record and
# its status directory are their owner's words: a quote in one made the rm
# command run what followed it), nor a glob that would take another user's page.
ID3=fedcba9876543210
SD3="$TMP/sd x'; touch $TMP/PWNED; '"
mkdir -p "$SD3" "$TMP/sd4"
touch "$SD3/coll.$ID3.0"
printf '{"version": 1, "jobid": "%s", "launcher": "local", "launcher_pid": %d, "status_dir": "%s", "nranks": 1, "ranks": []}\n' \
	"$ID3" "$CR" "$SD3" >"$COLL_JOB_DIR/$ID3.json"
collstack --job "$ID3" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--job of a gone job whose status directory holds a quote"
check "... no rm to paste, the place named" grep -q "are left over in '.*': remove them by hand$" "$TMP/e"
check "... and no rm at all" sh -c "! grep -q ' rm ' '$TMP/e'"
rm -f "$COLL_JOB_DIR/$ID3.json"
touch "$TMP/sd4/coll.$ID3.0" "$TMP/sd4/coll.$ID3.other"
chown nobody "$TMP/sd4/coll.$ID3.other"
printf '{"version": 1, "jobid": "%s", "launcher": "local", "launcher_pid": %d, "status_dir": "%s", "nranks": 1, "ranks": []}\n' \
	"$ID3" "$CR" "$TMP/sd4" >"$COLL_JOB_DIR/$ID3.json"
collstack --job "$ID3" >"$TMP/o" 2>"$TMP/e"
check "a glob that would match another user's page is not offered" \
	grep -q "1 status page are left over in $TMP/sd4: remove them by hand$" "$TMP/e"
rm -f "$COLL_JOB_DIR/$ID3.json"

# 2. Ranks that outlived their collrun: named, with --pid to read them.
ID2=0123456789abcdef
printf '{"version": 1, "jobid": "%s", "launcher": "local", "launcher_pid": %d, "status_dir": "%s", "nranks": 1, "ranks": []}\n' \
	"$ID2" "$CR" "$COLL_STATUS_DIR" >"$COLL_JOB_DIR/$ID2.json"
COLL_JOBID=$ID2 COLL_RANK=0 sleep 60 &
ORPH=$!
echo $ORPH >>"$TMP/pids"
for _ in $(seq 100); do grep -q COLL_JOBID "/proc/$ORPH/environ" 2>/dev/null && break; sleep 0.05; done
collstack --job "$ID2" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "--job whose collrun is gone, a rank still running"
check "... names it with the flag that reads it" grep -qx "collstack: job $ID2: its collrun (pid $CR) is gone but 1 of its processes still runs here: read them with collstack --pid $ORPH" "$TMP/e"
finish
