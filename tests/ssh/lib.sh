# Helpers for the multi-host tests: the CLI helpers plus the bed's files.
. "$(dirname "$0")/../cli/lib.sh"
BED=${NETBED_DIR:?}
if [ -f "$BED/unavailable" ] || [ ! -f "$BED/ssh_config" ]; then
	echo "skipped: no network-namespace test bed (needs root)"
	exit 77
fi
CFG=$BED/ssh_config
NET=$(sed -n 's/^\tHostName \(10\.213\.[0-9]*\)\.1$/\1/p' "$CFG")
HOSTS="node[01-04]"
# A marker only this test's processes carry, to look for leftovers on every host.
MARK=coll-test-$$-$RANDOM
leftovers() { pgrep -f "$MARK" | grep -v "^$$\$" | wc -l; }
# Ranks on the bed's hosts write their status pages in the shared /dev/shm
# (COLL_STATUS_DIR is not theirs), and a rank killed by a test leaves its
# page: at the end, pages that came during the test and whose process is
# gone are removed (a live one belongs to someone else's job).
SHM_BEFORE=$(ls /dev/shm 2>/dev/null | grep '^coll\.' | sort)
shm_cleanup() {
	local f pid
	for f in $(comm -13 <(echo "$SHM_BEFORE") <(ls /dev/shm 2>/dev/null | grep '^coll\.' | sort)); do
		[ -f "/dev/shm/$f" ] && [ ! -L "/dev/shm/$f" ] && [ -O "/dev/shm/$f" ] || continue
		pid=$(od -An -t d4 -j 40 -N 4 "/dev/shm/$f" 2>/dev/null | tr -d ' ')
		for _ in $(seq 20); do [ -n "$pid" ] && [ "$pid" -gt 0 ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		[ -n "$pid" ] && [ "$pid" -gt 0 ] && kill -0 "$pid" 2>/dev/null && continue
		rm -f "/dev/shm/$f"
	done
}
eval "cleanup_cli() $(declare -f cleanup | tail -n +2)"
cleanup() { cleanup_cli; shm_cleanup; }
