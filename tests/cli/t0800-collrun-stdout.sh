#!/bin/bash
# collrun's stdout (issue 37, item 5): a reader that goes away (| head) ends
# the job quietly with 141 and stops the ranks; a full disk is said as
# such (exit 3), never "Resource temporarily unavailable"; a stdout left
# non-blocking by another program sharing it is waited on, not failed.
. "$(dirname "$0")/lib.sh"

# Rank 0 writes on past what the pipe holds; head takes one line and goes.
# (timeout: before the fix collrun ran on, its output dropped, until its ranks ended.)
timeout 60 "$BIN/collrun" -n 2 sh -c 'echo $$ >"$1/pid.$COLL_RANK"; echo first
	[ $COLL_RANK = 0 ] && exec yes; exec sleep 600' rank "$TMP" 2>"$TMP/e" | head -1 >"$TMP/o"
code=${PIPESTATUS[0]}
expect_code 141 "$code" "| head -1: collrun ends as if by SIGPIPE"
check "... saying nothing" test ! -s "$TMP/e"
check "... after one line" test "$(cat "$TMP/o")" = first
check "... its ranks stopped" sh -c "! kill -0 $(cat "$TMP"/pid.* | tr '\n' ' ') 2>/dev/null"

"$BIN/collrun" -n 2 sh -c 'echo hi' >/dev/full 2>"$TMP/e"
expect_code 3 $? "> /dev/full"
check "... one line" test "$(wc -l <"$TMP/e")" -eq 1
check "... that says the disk is full" grep -q '^collrun: cannot write standard output: No space left on device$' "$TMP/e"

# Our stdout: a pipe whose description is O_NONBLOCK (someone else's doing),
# read only once it is full. Every byte arrives, and the flag is left as it was.
python3 - "$BIN/collrun" >"$TMP/py" 2>&1 <<'PY'
import fcntl, os, subprocess, sys, termios, array, time
r, w = os.pipe()
fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
p = subprocess.Popen([sys.argv[1], "-n", "2", "sh", "-c",
    'head -c 300000 /dev/zero | tr "\\0" x; echo'], stdout=w, stderr=subprocess.PIPE)
buf = array.array("i", [0])
deadline = time.time() + 60
# Wait until the pipe is full (or collrun gave up): the condition, not a delay.
while p.poll() is None and time.time() < deadline:
    fcntl.ioctl(r, termios.FIONREAD, buf)
    if buf[0] >= 65536:
        break
    time.sleep(0.01)
flag_kept = fcntl.fcntl(w, fcntl.F_GETFL) & os.O_NONBLOCK
os.close(w)
data = b""
while True:
    chunk = os.read(r, 1 << 16)
    if not chunk:
        break
    data += chunk
err = p.stderr.read().decode()
code = p.wait()
print("code", code, "x", data.count(b"x"), "kept", bool(flag_kept))
print("err:" + err.strip().replace("\n", " | "))
PY
check "non-blocking stdout, full: collrun waits and ends 0 ($(head -1 "$TMP/py"))" \
	grep -q '^code 0 x 600000 kept True$' "$TMP/py"
check "... and says nothing ($(tail -1 "$TMP/py"))" grep -qx err: "$TMP/py"
finish
