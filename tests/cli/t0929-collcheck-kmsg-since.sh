#!/bin/bash
# collcheck env --since: the kernel log's records before the time given are
# left out (kernel times count from boot, /proc/stat's btime in the fixture
# tree says when that was), and so are lines with no time (said); times ago
# and local times; bad values refused.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
NOW=$(date +%s)
BOOT=$((NOW - 3 * 3600))
printf 'cpu  1 0 0 0\nbtime %s\n' "$BOOT" >"$FIX/proc/stat"
mkdir -p "$FIX/dev"
# An Xid 79 10 s after boot (3 h ago), a fatal AER 1 min ago; one line without a time.
{
	printf '3,1,10000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=a, GPU has fallen off the bus.\n'
	printf '3,2,%s000000,-;pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0\n' $((3 * 3600 - 60))
	printf 'NVRM: Xid (PCI:0000:01:00): 43, pid=1, name=a, Ch 00000008\n'
} >"$FIX/dev/kmsg"
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" "$@"; }

fx env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "since boot (the fixture tree's dev/kmsg)"
check "the old Xid is found" grep -q "Xid 79 on GPU 0 (0000:01:00)" "$TMP/o"
check "the new AER error too" grep -q "PCIe AER: 1 fatal error from GPU 0 (0000:01:00.0)" "$TMP/o"
fx env --since 2h >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--since 2h"
check "the Xid of 3 h ago is left out" sh -c "! grep -q 'Xid 79' '$TMP/o'"
check "the AER error of 1 min ago is kept" grep -q "PCIe AER: 1 fatal error from GPU 0" "$TMP/o"
check "a line without a time is left out (it could be of any age)" sh -c "! grep -q 'Xid 43' '$TMP/o'"
fx env --since 30s -v >"$TMP/o" 2>"$TMP/e"
check "--since 30s: nothing, and the untimed line said" grep -q "^  kmsg  *0 records of .* since 20[0-9-]*T[0-9:]*, 0 events (lines with no time left out: give --since a log with times)" "$TMP/o"
fx env --since "$(date -d @$((NOW - 4 * 3600)) +%Y-%m-%dT%H:%M)" >"$TMP/o" 2>"$TMP/e"
check "a local time before boot keeps all" grep -q "Xid 79 on GPU 0" "$TMP/o"
fx env --since "$(date -d @$((NOW - 3600)) '+%Y-%m-%d %H:%M:%S')" >"$TMP/o" 2>"$TMP/e"
check "a local time with seconds cuts the old Xid" sh -c "! grep -q 'Xid 79' '$TMP/o' && grep -q 'fatal error from GPU 0' '$TMP/o'"
for bad in 2x yesterday -1h 2026-13-01T00:00 2026-11-28T10 ''; do
	collcheck env --since "$bad" >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "--since '$bad' refused"
done
check "... saying what to give" grep -q "give a time ago (2h, 30m, 1d) or a local time (2026-11-28T10:00)" "$TMP/e"
finish
