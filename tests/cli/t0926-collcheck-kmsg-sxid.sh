#!/bin/bash
# collcheck env and the kernel log: an Xid not in coll's catalog, NVSwitch
# SXids (non-fatal a warning, fatal an error), dmesg's line format beside
# /dev/kmsg's, the log's bytes escaped before they reach a terminal, lines
# past any bound, lines another user made to look like a driver's, and a log
# that is no file.
. "$(dirname "$0")/lib.sh"

printf '4,1,1000,-;NVRM: Xid (PCI:0000:3b:00): 9999, pid=1, something new\n' >"$TMP/kunk"
COLL_KMSG_FILE=$TMP/kunk collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "an unknown Xid is a warning"
check "... said not in coll's catalog" grep -q "WARN .*Xid 9999 on 0000:3b:00, 1 time: not in coll's catalog: look it up in NVIDIA's Xid catalog" "$TMP/o"

cat >"$TMP/ksx" <<'EOK'
[  100.123456] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
[  100.223456] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error
EOK
COLL_KMSG_FILE=$TMP/ksx collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a non-fatal SXid (dmesg lines)"
check "... a warning naming the NVSwitch" grep -q "WARN .*SXid 12028 on NVSwitch 0000:05:00.0, 2 times (non-fatal): see the fabric manager's log" "$TMP/o"
printf '[  200.000000] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 24007, Fatal, Link 44 sourcetrack TCEN0 crumbstore ECC DBE Error\n' >"$TMP/ksxf"
COLL_KMSG_FILE=$TMP/ksxf collcheck env >"$TMP/o" 2>"$TMP/e"
check "a fatal SXid is an error" grep -q "ERROR .*SXid 24007 on NVSwitch 0000:06:00.0, 1 time (fatal)" "$TMP/o"

# Escapes, colours and bytes past ASCII in a line never reach the terminal as they are.
printf '3,1,1000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=\033[31mred\033]0;title\007 \xc3\xa9\xff, GPU has fallen off the bus.\n' >"$TMP/kesc"
COLL_KMSG_FILE=$TMP/kesc collcheck env >"$TMP/o" 2>"$TMP/e"
check "no escape byte reaches the terminal" sh -c "! grep -q \$(printf '\\033') '$TMP/o' && ! grep -q \$(printf '\\007') '$TMP/o'"
check "... each is a '?'" grep -q 'name=?\[31mred?\]0;title? ???, GPU has fallen off the bus' "$TMP/o"
COLL_KMSG_FILE=$TMP/kesc collcheck env --json >"$TMP/j" 2>"$TMP/e"
check "--json stays JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/j"

# A line of 200 KB, many devices: bounded, no crash.
python3 - "$TMP/kbig" <<'EOPY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("3,1,1000,-;NVRM: Xid (PCI:" + "0" * 200000 + "): 79, x\n")
    for i in range(400):
        f.write("6,%d,1000,-;mlx5_core 0000:%02x:00.0 eth%d: TX timeout detected\n" % (i + 3, i % 256, i))
EOPY
COLL_KMSG_FILE=$TMP/kbig collcheck env -v >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a huge and hostile log"
check "devices past the bound are counted, not itemized" grep -q "^  kmsg  .*(some devices not itemized)" "$TMP/o"
check "no error output" test ! -s "$TMP/e"

# Another user's program names itself (15 bytes) and its files so that the
# kernel's segfault line reads like a driver's, and a record written to
# /dev/kmsg from user space (facility 1, not the kernel's 0) reads like an
# Xid: none is an event.
cat >"$TMP/kforged" <<'EOK'
6,1,1000,-;NVRM: Xid (PCI:[4242]: segfault at 0 ip 0 sp 0 error 4 in x): 79, y[7f0000+1000]
6,2,1000,-;nvidia-nvswitch[4242]: segfault at 0 ip 0 sp 0 error 4 in : SXid (PCI:0000:05:00.0): 24007, Fatal, x[7f0000+1000]
6,3,1000,-;x AER: [4242]: segfault at 0 ip 0 sp 0 error 4 in Uncorrected (Fatal) error received: 0000:01:00.0[7f0000+1000]
6,4,1000,-;pcieport 0000:0[4242]: segfault at 0 ip 0 sp 0 error 4 in AER: (Fatal) received[7f0000+1000]
6,5,1000,-;e1000e: eth0 NI[4242]: segfault at 0 ip 0 sp 0 error 4 in Reset adapter[7f0000+1000]
6,6,1000,-;python3[4242]: segfault at 0 ip 0 sp 0 error 4 in NIC Link is Down Link down TX timeout[7f0000+1000]
6,7,1000,-;NVRM: Xid (PCI:0000:3b:00$(id)): 79, x
6,8,1000,-;a: b TX timeout[4242]: segfault at 0 ip 0 sp 0 error 4 in x[7f0000+1000]
6,10,1000,-;x 0000:3b:00 e[4242]: segfault at 0 ip 0 sp 0 error 4 in eth9 TX timeout.so[7f0000+1000]
6,11,1000,-;x 0000:3b:00: [4242]: segfault at 0 ip 0 sp 0 error 4 in Link is Down.so[7f0000+1000]
14,9,1000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.
EOK
for i in 1 2 3; do cat "$TMP/kforged"; done >"$TMP/kforged3"
COLL_KMSG_FILE=$TMP/kforged3 collcheck env -v >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "lines other users' programs make look like drivers'"
check "... are no events" grep -q "^  kmsg  *33 records of .* 0 events$" "$TMP/o"

mkfifo "$TMP/fifo"
COLL_KMSG_FILE=$TMP/fifo collcheck env -v >"$TMP/o" 2>"$TMP/e"
check "a FIFO is refused, not waited on" grep -q "^  kmsg  *skipped: .*fifo is neither the kernel log nor a file" "$TMP/o"
COLL_KMSG_FILE=$TMP/none collcheck env >"$TMP/o" 2>"$TMP/e"
check "a missing file: said, info" grep -q "INFO .*kernel log skipped: cannot open $TMP/none: No such file or directory: Xid, AER and NIC events not checked" "$TMP/o"
finish
