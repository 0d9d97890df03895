#!/bin/bash
# Root's colltop against another local user (issue 34, findings 2, 5 and 7).
# 1. A stranger on colltop's control port: an AUTH_FAIL whose text holds
#    terminal escapes (title, OSC 52 clipboard, screen clear), then a silent
#    connection held open, half a header, and more silent ones than colltop
#    handshakes at once. The keys still work (h, -, and q ends colltop in a
#    bounded wait) and no escape of the stranger's reaches stderr (saved
#    while the screen is up and replayed to the terminal after): its words
#    come out cleaned, once.
# 2. Status pages in a shared directory: one the stranger forged claiming
#    root's pid 1 is not listed as a job by root's colltop; one of the
#    stranger's own live process is, with the stranger named as its user.
# 3. A flood of the stranger's valid pages (live processes of theirs, more
#    than colltop reads a host) written before and after a victim's job:
#    root's colltop still shows every rank of the victim's job (a share per
#    user), and at most the share of the stranger's.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "skipped: no tmux"; exit 77; }
attacker_init
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WV=$(sed -n 's/^#define WIRE_VERSION \([0-9]*\).*/\1/p' "$SRC/core/net/include/wire.h")
SOCK=colltop-stranger-$$
tm() { tmux -L "$SOCK" "$@"; }
SHM=/dev/shm/coll-t0603-$$
trap 'tm kill-server 2>/dev/null; rm -rf "$SHM"; cleanup' EXIT
screen() { tm capture-pane -p -t top; }
wait_screen() { # wait_screen REGEX [SECONDS]
	for _ in $(seq $((${2:-10} * 10))); do screen | grep -qE -- "$1" && return 0; sleep 0.1; done
	screen >"$TMP/last"
	return 1
}
wait_file() { for _ in $(seq $((${2:-10} * 10))); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# The stranger: connect to PORT and do STEP (fail: an AUTH_FAIL with escapes;
# hold: a silent connection, half a header, and 12 more silent ones), then
# hold everything open.
cat >"$ATK_DIR/atk.py" <<'EOF'
import socket, struct, sys, time
port, ver, step, done = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
MAGIC = 0x4c4c4f43
held = []
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    held.append(s)
    return s
if step == "fail":
    msg = b"\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[31mred"
    pay = struct.pack("<iiH", -5, -1, len(msg)) + msg
    conn().sendall(struct.pack("<IBBHI", MAGIC, ver, 4, 0, len(pay)) + pay)
else:
    conn()
    conn().sendall(struct.pack("<IB", MAGIC, ver))
    for _ in range(12):
        conn()
open(done, "w").write("sent\n")
time.sleep(60)
EOF
chmod 644 "$ATK_DIR/atk.py"

tm new-session -d -s top -x 140 -y 30 "env TERM=xterm-256color LANG=C.UTF-8 sh -c 'echo \$\$ >$TMP/ct; \
	exec $BIN/colltop --np 2 --no-gpu' 2>$TMP/err; echo \$? >$TMP/rc; sleep 60"
check "colltop starts" wait_screen '^colltop  2 ranks on 1 host' 20
CT=$(cat "$TMP/ct")
PORT=$(ps --ppid "$CT" -o args= | sed -n 's/.* --control-port \([0-9]*\).*/\1/p' | head -1)
check "the control port is on the workers' command line" test -n "$PORT"

as_atk python3 "$ATK_DIR/atk.py" "$PORT" "$WV" fail "$ATK_DIR/fail" &
echo $! >>"$TMP/pids"
check "the stranger's AUTH_FAIL went out" wait_file "$ATK_DIR/fail"
check "refused, shown on the screen" wait_screen 'refused 1 control connection' 5
as_atk python3 "$ATK_DIR/atk.py" "$PORT" "$WV" hold "$ATK_DIR/hold" &
echo $! >>"$TMP/pids"
check "the stranger holds its connections open" wait_file "$ATK_DIR/hold"
tm send-keys -t top h
check "h under attack: the help" wait_screen '^ colltop keys' 5
tm send-keys -t top x
check "any key leaves the help" wait_screen '^RANK\^ +HOST' 5
tm send-keys -t top -
check "- under attack reaches the workers" wait_screen "every 0.5 s" 10
tm send-keys -t top q
check "q under attack: colltop ends" wait_file "$TMP/rc" 15
check "... with exit 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "stderr holds no ESC byte" sh -c "! grep -qP '\\x1b' '$TMP/err'"
check "stderr says the refusals once, the stranger's words cleaned" \
	grep -qF "sent a refusal during authentication: '\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x1b[31mred'" "$TMP/err"
check "... in one line" test "$(grep -c '^colltop: refused [0-9]* control connections\? that did not prove' "$TMP/err")" = 1
[ "$fails" -eq 0 ] || { echo "stderr:"; cat -v "$TMP/err"; cat "$TMP/last" 2>/dev/null; }

# 2. Pages in a shared directory: forged (pid 1, root's) and the stranger's own.
cat >"$ATK_DIR/page.py" <<'EOF'
import os, socket, struct, sys, time
d, job = sys.argv[1], int(sys.argv[2], 16)
pid = os.getpid() if sys.argv[3] == "self" else int(sys.argv[3])
host = socket.gethostname().encode()
p = bytearray(512)
struct.pack_into("<IIIIQQiiii", p, 0, 0x50545343, 3, 512, 0, job, 0x77, 0, 2, pid, 3)
struct.pack_into("<QQ", p, 48, 7, 6)
p[104:104 + len(host)] = host
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # ranks, one page each
struct.pack_into("<i", p, 36, max(n, 2))
for r in range(n):
    struct.pack_into("<i", p, 32, r)
    with open("%s/coll.%016x.%016x.%d" % (d, job, 0x77, r), "wb") as f:
        f.write(p)
if sys.argv[3] == "self":  # a live process of the writer's, as long as the test needs
    open(sys.argv[5] if len(sys.argv) > 5 else d + "/../atk/page.done", "w").write("%d\n" % pid)
    time.sleep(60)
EOF
chmod 644 "$ATK_DIR/page.py"
as_atk python3 "$ATK_DIR/page.py" "$PUB" f00d000000000001 1
as_atk python3 "$ATK_DIR/page.py" "$PUB" f00d000000000002 self &
echo $! >>"$TMP/pids"
check "the stranger's own page is written" wait_file "$ATK_DIR/page.done"
COLL_STATUS_DIR=$PUB "$BIN/colltop" --once --json --np 2 --no-gpu >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "colltop --once --json as root over the shared directory"
python3 - "$TMP/j" "$ATK" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
jobs = {j["job"]: j for l in open(sys.argv[1]) for j in json.loads(l)["jobs"]}
print(("ok " if "f00d000000000001" not in jobs else "BAD ") + "the forged page (pid 1) is no job: %s" % sorted(jobs))
j = jobs.get("f00d000000000002")
print(("ok " if j and j.get("user") == sys.argv[2] else "BAD ") + "the stranger's own live job, with its user: %s" % j)
EOF
check "root's colltop lists only pages a live process of their owner backs" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"

# 3. The victim's pages between two floods: read after one of them, whichever order a directory lists.
mkdir -p "$SHM" && chmod 1777 "$SHM"
as_atk python3 "$ATK_DIR/page.py" "$SHM" f00d000000000003 self 4200 "$ATK_DIR/flood.done" &
echo $! >>"$TMP/pids"
check "the stranger's first flood of pages is written" wait_file "$ATK_DIR/flood.done" 30
python3 "$ATK_DIR/page.py" "$SHM" beef000000000001 self 2 "$TMP/victim.done" &
echo $! >>"$TMP/pids"
check "the victim's job's pages are written" wait_file "$TMP/victim.done"
as_atk python3 "$ATK_DIR/page.py" "$SHM" f00d000000000004 self 4200 "$ATK_DIR/flood2.done" &
echo $! >>"$TMP/pids"
check "the stranger's second flood of pages is written" wait_file "$ATK_DIR/flood2.done" 30
COLL_STATUS_DIR=$SHM "$BIN/colltop" --once --json --np 2 --no-gpu >"$TMP/j3" 2>"$TMP/e3"
expect_code 0 $? "colltop --once --json as root over the flooded directory"
python3 - "$TMP/j3" >"$TMP/py3" 2>&1 <<'EOF'
import json, sys
jobs = {j["job"]: j for l in open(sys.argv[1]) for j in json.loads(l)["jobs"]}
v = jobs.get("beef000000000001")
print(("ok " if v and len(v["ranks"]) == 2 else "BAD ") + "the victim's 2 ranks: %s" %
      (v and v["ranks"]))
n = sum(len(jobs[f]["ranks"]) for f in ("f00d000000000003", "f00d000000000004") if f in jobs)
print(("ok " if 0 < n <= 1024 else "BAD ") + "the floods, at most the stranger's share: %d" % n)
EOF
check "a stranger's flood of pages does not hide the victim's job" sh -c "! grep -q '^BAD' '$TMP/py3'"
cat "$TMP/py3"
finish
