#!/bin/bash
# collcheck env and the kernel log's Xid events (COLL_KMSG_FILE, /dev/kmsg's
# record format), each class by NVIDIA's catalog: 79 (fallen off the bus) an
# error naming the GPU by its index, the memory Xids (48/63/64/94/95), NVLink
# (74), the application's own (13/31/43), in text and in --json.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" "$@"; }
xid() { # seq usec bus xid text
	printf '3,%s,%s,-;NVRM: Xid (PCI:0000:%s:00): %s, pid=%s, name=python3, %s\n' "$1" "$2" "$3" "$4" "$1" "$5"
}

# The fixture's GPU is 0000:01:00.0, GPU 0 in PCI order.
xid 1 5000000 01 79 "GPU has fallen off the bus." >"$TMP/k79"
printf ' SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n' >>"$TMP/k79"
COLL_KMSG_FILE=$TMP/k79 fx env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "Xid 79: problems found"
check "Xid 79 is an error that names the GPU" grep -q "^fixhost  ERROR .*Xid 79 on GPU 0 (0000:01:00), 1 time: GPU has fallen off the bus: drain the node and reboot it" "$TMP/o"
check "... and quotes the line" grep -q "(last: NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=python3, GPU has fallen off the bus.)" "$TMP/o"
check "continuation lines are no records" sh -c "! grep -q 'SUBSYSTEM' '$TMP/o'"

{
	xid 2 1000 3b 48 "An uncorrectable double bit error (DBE) has been detected."
	xid 3 1001 3b 48 "An uncorrectable double bit error (DBE) has been detected."
	xid 4 1002 3b 63 "Row Remapper: New row marked for remapping, reset gpu to activate."
	xid 5 1003 3b 64 "Row Remapper Error: Failed to remap row."
	xid 6 1004 3b 94 "Contained: SM (0x1). RST: No, D-RST: No"
	xid 7 1005 3b 95 "Uncontained: LTC TAG (0x2). RST: Yes, D-RST: No"
	xid 8 1006 5e 74 "NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0)"
	xid 9 1007 86 13 "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address"
	xid 10 1008 86 31 "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12340000."
	xid 11 1009 86 43 "Ch 00000008"
} >"$TMP/kall"
COLL_KMSG_FILE=$TMP/kall fx env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "memory, NVLink and application Xids"
check "a double-bit ECC error, counted" grep -q "Xid 48 on 0000:3b:00, 2 times: double-bit ECC error in GPU memory: reset the GPU" "$TMP/o"
check "a row remapping recorded" grep -q "Xid 63 on 0000:3b:00, 1 time: ECC page retirement or row remapping recorded" "$TMP/o"
check "an NVLink error" grep -q "Xid 74 on 0000:5e:00, 1 time: NVLink error: check the links (nvidia-smi nvlink -s -e)" "$TMP/o"
check "the application's fault is said so" grep -q "Xid 13 on 0000:86:00, 1 time: graphics engine exception, usually the application's" "$TMP/o"
COLL_KMSG_FILE=$TMP/kall fx env --json >"$TMP/j" 2>"$TMP/e"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
sev = {f["key"]: f["severity"] for f in d["hosts"][0]["findings"]}
want = {"48": "ERROR", "63": "WARN", "64": "ERROR", "94": "WARN", "95": "ERROR",
        "74": "ERROR", "13": "WARN", "31": "WARN", "43": "INFO"}
for x, s in want.items():
    k = [k for k in sev if k.startswith("kmsg.xid.") and k.endswith("." + x)]
    assert len(k) == 1 and sev[k[0]] == s, (x, k, sev)
assert d["hosts"][0]["facts"]["kmsg.xid.0000:3b:00.48"].startswith("2: NVRM: Xid")
print("json ok")
EOPY
check "--json: each Xid with the catalog's severity" grep -q 'json ok' "$TMP/py"

# Application-level alone: a warning for 13, info for 43.
xid 1 1000 86 43 "Ch 00000008" >"$TMP/k43"
COLL_KMSG_FILE=$TMP/k43 collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "Xid 43 alone is info"
check "... said as the application's" grep -q "INFO .*Xid 43 on 0000:86:00, 1 time: GPU stopped processing a channel (the application's fault" "$TMP/o"
finish
