#!/bin/bash
# Standard output that cannot be written (issue 37, item 5): a reader gone
# (| head -1) ends the tool quietly with exit 141, as SIGPIPE would; a full
# disk (> /dev/full) is one line naming standard output and "No space left
# on device", exit 3; a stdout someone else made non-blocking is waited on,
# never lost to nor reported as EAGAIN.
. "$(dirname "$0")/lib.sh"
# A sweep of 750 rows (about 100 KB: more than a pipe and head's read hold).
SWEEP=(allreduce --engine coll -b 8 -e 128K -d all -o all -n 1 -w 0)
"$BIN/collcheck" "${SWEEP[@]}" >"$TMP/all" 2>"$TMP/e"
expect_code 0 $? "the sweep, into a file"
ROWS=$(grep -vc '^#' "$TMP/all")
check "... $ROWS rows, over 64 KiB" test "$(wc -c <"$TMP/all")" -gt 70000

"$BIN/collcheck" "${SWEEP[@]}" 2>"$TMP/e" | head -1 >"$TMP/o"
code=${PIPESTATUS[0]}
expect_code 141 "$code" "collcheck allreduce | head -1"
check "... its first line came through" grep -q '^# collcheck allreduce' "$TMP/o"
check "... and nothing on standard error" test ! -s "$TMP/e"

"$BIN/collrun" -n 2 "$BIN/collcheck" "${SWEEP[@]}" 2>"$TMP/e" | head -1 >"$TMP/o"
code=${PIPESTATUS[0]}
expect_code 141 "$code" "collrun -n 2 collcheck allreduce | head -1"
check "... nothing on standard error" sh -c "! test -s \"$TMP/e\" || { cat \"$TMP/e\" >&2; false; }"
"$BIN/colltop" -b --iterations 2 -n 2 --no-gpu 2>"$TMP/e" | head -1 >"$TMP/o"
code=${PIPESTATUS[0]}
expect_code 141 "$code" "colltop -b --iterations 2 | head -1"
check "... nothing on standard error" sh -c "! test -s \"$TMP/e\" || { cat \"$TMP/e\" >&2; false; }"

"$BIN/collcheck" allreduce --engine coll -e 1K -n 1 -w 0 >/dev/full 2>"$TMP/e"
expect_code 3 $? "collcheck allreduce > /dev/full"
check "... one line naming standard output and the cause" \
	grep -qx 'collcheck: cannot write standard output: No space left on device' "$TMP/e"
check "... only that line" test "$(wc -l <"$TMP/e")" -eq 1
"$BIN/collrun" -n 1 echo hello >/dev/full 2>"$TMP/e"
expect_code 3 $? "collrun -n 1 echo > /dev/full"
check "... says no space" grep -qx 'collrun: cannot write standard output: No space left on device' "$TMP/e"
"$BIN/collcheck" --help >/dev/full 2>"$TMP/e"
expect_code 3 $? "collcheck --help > /dev/full"
check "... says no space" grep -q 'No space left on device' "$TMP/e"

# A non-blocking pipe of one page, full before the tool starts (filler
# written until EAGAIN): the tool's first write meets it full. Nothing is read
# until the tool has exited (its output lost: the old way) or sleeps (the only
# wait --help has is the one for room); then all of its help must come, and
# no EAGAIN be said.
"$BIN/collcheck" allreduce --help >"$TMP/help"
OUT=$TMP/got python3 - "$BIN/collcheck" allreduce --help >"$TMP/py" 2>&1 <<'EOPY'
import fcntl, os, subprocess, sys, time
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
filler = 0
try:
    while True:
        filler += os.write(w, b"x")
except BlockingIOError:
    pass
p = subprocess.Popen(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
os.close(w)
def state(pid):
    try:
        f = open("/proc/%d/stat" % pid).read()
    except OSError:
        return "gone"
    return f[f.rindex(")") + 2:].split()[0]
deadline = time.time() + 60
while p.poll() is None and state(p.pid) != "S" and time.time() < deadline:
    time.sleep(0.01)  # polling the condition above, not waiting for time
print("waited" if time.time() < deadline else "timed out")
out = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    out += chunk
err = p.stderr.read().decode(errors="replace")
print("exit", p.wait())
sys.stdout.flush()
open(os.environ["OUT"], "wb").write(out[filler:])
print("stderr", repr(err))
EOPY
check "non-blocking stdout: waited on the condition" grep -qx waited "$TMP/py"
check "... exit 0" grep -qx "exit 0" "$TMP/py"
check "... all of the help came" cmp -s "$TMP/help" "$TMP/got"
check "... nothing on standard error" grep -qx "stderr ''" "$TMP/py"
finish
