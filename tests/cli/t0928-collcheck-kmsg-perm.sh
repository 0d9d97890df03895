#!/bin/bash
# collcheck env run by a user who may not read the kernel log
# (kernel.dmesg_restrict, no CAP_SYSLOG): the fact says "skipped: needs root or
# CAP_SYSLOG" and collcheck says so plainly, as info, exit 0; root reads it.
. "$(dirname "$0")/lib.sh"
attacker_init
as_atk mkdir -m 700 "$ATK_DIR/shm" "$ATK_DIR/jobs"
runas() {
	as_atk env TMPDIR="$ATK_DIR" COLL_STATUS_DIR="$ATK_DIR/shm" COLL_JOB_DIR="$ATK_DIR/jobs" "$@"
}
if [ "$(cat /proc/sys/kernel/dmesg_restrict 2>/dev/null)" = 1 ]; then
	runas "$BIN/collcheck" env >"$TMP/o" 2>"$TMP/e"
	expect_code 0 $? "the log unreadable: no problem found"
	check "said plainly, as info" grep -q "INFO *kernel log skipped: needs root or CAP_SYSLOG (/dev/kmsg: Operation not permitted): Xid, AER and NIC events not checked" "$TMP/o"
	check "no error output" test ! -s "$TMP/e"
	runas "$BIN/collcheck" env -v >"$TMP/o" 2>"$TMP/e"
	check "the fact says why" grep -q "^  kmsg  *skipped: needs root or CAP_SYSLOG" "$TMP/o"
	runas "$BIN/collcheck" env --json >"$TMP/j" 2>"$TMP/e"
	check "--json: the finding is info" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = [f for f in d["hosts"][0]["findings"] if f["key"] == "kmsg"]
assert f and f[0]["severity"] == "INFO" and "CAP_SYSLOG" in f[0]["message"], f
assert d["exit"] == 0' "$TMP/j"
else
	echo "# kernel.dmesg_restrict is 0 here: any user reads the log"
	runas "$BIN/collcheck" env -v >"$TMP/o" 2>"$TMP/e"
	check "the log is read" grep -q "^  kmsg  *[0-9]* records of the kernel log since boot" "$TMP/o"
fi
# Root (CAP_SYSLOG) reads it, where the container lets it.
if dd if=/dev/kmsg iflag=nonblock bs=8192 count=1 of=/dev/null 2>/dev/null; then
	collcheck env -v >"$TMP/o" 2>"$TMP/e"
	check "root reads the kernel log" grep -q "^  kmsg  *[0-9]* records of the kernel log since boot, [0-9]* events" "$TMP/o"
fi
finish
