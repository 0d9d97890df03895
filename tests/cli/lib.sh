# Shared helpers for tests/cli/t*.sh: a private temp dir and status-page dir per
# test, removed by a trap however the test ends, and small assertions.
set -u
BIN=${COLL_BIN:?set COLL_BIN to the cmd directory of a build}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/coll-test.XXXXXX")
export COLL_STATUS_DIR=$TMP/shm COLL_JOB_DIR=$TMP/jobs
mkdir -p -m 700 "$COLL_STATUS_DIR" "$COLL_JOB_DIR"
PATH=$BIN:$PATH
collrun() { "$BIN/collrun" "$@"; }
collcheck() { "$BIN/collcheck" "$@"; }
# tree_pids PID: PID and all its descendants. A job started with
# "collrun ... &" files the pid of the subshell running the function above,
# and killing that alone left collrun and its ranks running.
tree_pids() {
	local c
	echo "$1"
	for c in $(env -u LD_PRELOAD pgrep -P "$1" 2>/dev/null); do tree_pids "$c"; done
}
cleanup() {
	# Kill anything this test started that is still around, then the files.
	local all
	all=$(for p in $(cat "$TMP"/pids 2>/dev/null); do tree_pids "$p"; done)
	for p in $all; do kill -9 "$p" 2>/dev/null; done
	cleanup_users
	rm -rf "$TMP"
}
trap cleanup EXIT
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok - $*"; }
not_ok() { fails=$((fails + 1)); echo "not ok - $*"; }
check() { # check DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
expect_code() { # expect_code WANT GOT DESCRIPTION
	if [ "$1" = "$2" ]; then ok "$3 (exit $2)"; else not_ok "$3: exit $2, wanted $1"; fi
}
contains() { grep -q -- "$2" "$1"; }
pid_of_rank() { # the pid of rank $1 in the newest job record
	python3 -c 'import json,glob,os,sys
f=max(glob.glob(os.environ["COLL_JOB_DIR"]+"/*.json"),key=os.path.getmtime)
print([r["pid"] for r in json.load(open(f))["ranks"] if r["rank"]==int(sys.argv[1])][0])' "$1"
}
# settled ARGS...: a hang's pages have stood still: collstack ARGS (a selection)
# sees a problem (exit 1), or 10 s have passed. collstack judges a job whose
# pages moved within the last 0.25 s (1 s for NCCL's) as one that advances.
settled() {
	local until=$((SECONDS + 10))
	until "$BIN/collstack" "$@" --no-fr-dump >/dev/null 2>&1; [ $? = 1 ] || [ $SECONDS -ge $until ]; do
		sleep 0.1
	done
}
finish() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}
# A second, unprivileged local user for the tests of what root's tools read
# (tests/cli/t06xx-*): made here, its processes killed and the user removed by
# the trap however the test ends. Without root the test reports itself
# skipped (77). as_atk CMD... runs CMD as that user (no process of root's
# stays between: $! of "as_atk CMD &" is CMD's).
ATK=""
attacker_init() {
	[ "$(id -u)" -eq 0 ] || { echo "skip: creating a second user needs root"; exit 77; }
	command -v useradd >/dev/null && command -v setpriv >/dev/null ||
		{ echo "skip: no useradd/setpriv"; exit 77; }
	ATK=collatk$$
	useradd -M -d /nonexistent -s /bin/sh "$ATK" >/dev/null 2>&1 ||
		{ echo "cannot create user $ATK"; exit 1; }
	echo "$ATK" >>"$TMP/users"
	chmod 755 "$TMP"
	ATK_UID=$(id -u "$ATK")
	ATK_DIR=$TMP/atk
	mkdir -p "$ATK_DIR" && chown "$ATK" "$ATK_DIR"
	# A directory everyone may write, sticky, as /dev/shm and /tmp are.
	PUB=$TMP/pub
	mkdir -p "$PUB" && chmod 1777 "$PUB"
}
# setpriv, not runuser: runuser stays as a parent of root's that stops when
# its child is stopped (as su does), so it neither reaps the child nor dies
# with it, and the user could not be removed.
as_atk() {
	setpriv --reuid="$ATK" --regid="$ATK" --init-groups \
		env -i PATH=/usr/bin:/bin HOME="$ATK_DIR" "$@"
}
cleanup_users() {
	local u
	for u in $(cat "$TMP"/users 2>/dev/null); do
		pkill -9 -u "$u" 2>/dev/null; pkill -9 -U "$u" 2>/dev/null
		# A process of the user may still be exiting: userdel refuses until it is gone.
		for _ in $(seq 50); do userdel "$u" 2>/dev/null && break; sleep 0.1; done
	done
}
