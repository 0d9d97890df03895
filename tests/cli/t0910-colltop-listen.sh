#!/bin/bash
# colltop --listen: /metrics in Prometheus's text format while colltop runs in
# batch mode (promtool finds it clean), / and the errors (404, 405, 400, 431),
# strangers holding connections open or sending junk do not stall a scrape
# past its deadline, --json mode serves too, and bad values, or a port
# another program has, are said in one line before any worker starts.
. "$(dirname "$0")/lib.sh"

# port_of FILE: the port colltop said it serves on (waits up to 20 s).
port_of() {
	local until=$((SECONDS + 20)) p=""
	while [ -z "$p" ] && [ $SECONDS -lt $until ]; do
		p=$(sed -n 's/^colltop: serving Prometheus metrics on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$1")
		[ -n "$p" ] || sleep 0.1
	done
	echo "$p"
}

"$BIN/colltop" -b --np 2 --no-gpu -d 3 --listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
PORT=$(port_of "$TMP/err")
check "it says where it serves" test -n "$PORT"
[ -n "$PORT" ] || { cat "$TMP/err"; finish; exit; }

python3 - "$PORT" "$TMP" >"$TMP/py" 2>&1 <<'EOPY'
import socket, sys, time, urllib.request, urllib.error
port, tmp = int(sys.argv[1]), sys.argv[2]
base = "http://127.0.0.1:%d" % port

def get(path, method="GET", timeout=4):
    req = urllib.request.Request(base + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()

# The probe's series come once the first frames are in (bounded).
until = time.time() + 30
while True:
    st, hd, body = get("/metrics")
    if "coll_probe_latency_seconds{" in body and "coll_network_receive_bytes_total{" in body:
        break
    assert time.time() < until, "no probe series in 30 s:\n" + body
    time.sleep(0.2)
assert st == 200, st
assert hd["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", hd["Content-Type"]
open(tmp + "/metrics.txt", "w").write(body)
for fam in ["coll_top_up", "coll_top_frames_total", "coll_probe_latency_seconds",
            "coll_probe_busbw_bytes_per_second", "coll_probe_lateness_seconds",
            "coll_probe_straggler", "coll_probe_lost", "coll_network_receive_bytes_total",
            "coll_job_seq", "coll_job_rank_retries_total"]:
    assert "# TYPE %s " % fam in body, fam
assert 'coll_probe_lost{host="' in body and 'rank="1"} 0' in body, body
print("families ok")

st, _, body = get("/")
assert st == 200 and "/metrics" in body, (st, body)
assert get("/nope")[0] == 404
st, hd, _ = get("/metrics", "POST")
assert st == 405 and "GET" in hd["Allow"], st
st, _, body = get("/metrics", "HEAD")
assert st == 200 and body == "", (st, body)
print("routes ok")

def raw(data, timeout=4):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out
assert raw(b"GARBAGE\r\n\r\n").startswith(b"HTTP/1.1 400 "), "junk"
assert raw(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000).startswith(b"HTTP/1.1 431 "), "431"
print("junk ok")

# A stranger holds 40 connections open, some silent, some half a header;
# scrapes by others still answer at once, well inside the read deadline.
held = []
for i in range(40):
    s = socket.create_connection(("127.0.0.1", port), timeout=4)
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
for i in range(5):
    t0 = time.time()
    st, _, body = get("/metrics", timeout=3)
    took = time.time() - t0
    assert st == 200 and "coll_top_up 1" in body, st
    assert took < 2, "a scrape took %.2f s with connections held" % took
# A slow client coming after them (half a header, then the rest) is served
# once theirs are past the grace they had to send a request (bounded).
until = time.time() + 5
while True:
    s = socket.create_connection(("127.0.0.1", port), timeout=4)
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\n")
        time.sleep(0.05)
        s.sendall(b"\r\n")
        got = s.recv(64)
    except OSError:
        got = b""
    s.close()
    if got.startswith(b"HTTP/1.1 200 "):
        break
    assert time.time() < until, "a slow client never served: %r" % got
    time.sleep(0.1)
for s in held:
    s.close()
# Frames keep coming: the workers never waited on any of it.
f1 = int([l for l in get("/metrics")[2].splitlines() if l.startswith("coll_top_frames_total ")][0].split()[1])
until = time.time() + 10
while int([l for l in get("/metrics")[2].splitlines() if l.startswith("coll_top_frames_total ")][0].split()[1]) <= f1:
    assert time.time() < until, "frames stopped"
    time.sleep(0.1)
print("held ok")
EOPY
cat "$TMP/py"
check "/metrics: the families, its content type" grep -q 'families ok' "$TMP/py"
check "/, 404, 405, HEAD" grep -q 'routes ok' "$TMP/py"
check "junk: 400, a header past 8 KiB: 431" grep -q 'junk ok' "$TMP/py"
check "connections held open stall no scrape, nor the workers" grep -q 'held ok' "$TMP/py"
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/metrics.txt" >"$TMP/pt" 2>&1
	expect_code 0 $? "promtool check metrics"
	check "... with nothing to say" test ! -s "$TMP/pt"
	cat "$TMP/pt"
else
	echo "# promtool not installed (tools/deps.sh installs it): not checked"
fi
# A stranger churning connections (thousands a second from a process of its
# own, 512 kept open, never a byte sent) beside 20 scrapes: every scrape
# answered, none cut off by a newcomer.
python3 - "$PORT" >"$TMP/py" 2>&1 <<'EOPY'
import subprocess, sys, time, urllib.request
port = int(sys.argv[1])
churner = subprocess.Popen([sys.executable, "-c", """
import collections, socket, sys
q = collections.deque()
while True:
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", %d))
    q.append(s)
    if len(q) > 512:
        q.popleft().close()
    if len(q) == 256:
        print("churning", flush=True)
""" % port], stdout=subprocess.PIPE, text=True)
assert churner.stdout.readline().startswith("churning")
bad = []
for i in range(20):
    try:
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
        if "coll_top_up 1" not in body:
            bad.append("short body")
    except Exception as e:
        bad.append(repr(e))
    time.sleep(0.05)
churner.kill()
churner.wait()
print("failed scrapes: %d %s" % (len(bad), bad[:3]))
if not bad:
    print("churn ok")
EOPY
cat "$TMP/py"
check "a stranger churning connections fails no scrape" grep -q 'churn ok' "$TMP/py"
check "the batch text still goes to stdout" grep -q '^RANK ' "$TMP/out"
kill "$(head -1 "$TMP/pids")"

# --json mode serves too.
"$BIN/colltop" --json --np 2 --no-gpu -d 3 --listen localhost:0 >"$TMP/jout" 2>"$TMP/jerr" &
echo $! >>"$TMP/pids"
JPORT=$(port_of "$TMP/jerr")
python3 - "$JPORT" >"$TMP/py" 2>&1 <<'EOPY'
import sys, time, urllib.request
until = time.time() + 30
while True:
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=4).read().decode()
    if "coll_probe_latency_seconds{" in body:
        break
    assert time.time() < until, body
    time.sleep(0.2)
print("json ok")
EOPY
check "--json mode serves /metrics" grep -q 'json ok' "$TMP/py"
kill "$(tail -1 "$TMP/pids")"

# Bad values: one line, exit 2, before any worker.
for v in abc 70000 '1.2.3.4.5:80' '[::1' ':' '127.0.0.1:'; do
	"$BIN/colltop" -b -n 1 --np 2 --listen "$v" >"$TMP/o" 2>"$TMP/e"
	expect_code 2 $? "--listen '$v'"
	check "... named" grep -q "^colltop: --listen '" "$TMP/e"
done
# A port another program listens on: exit 3, said at once.
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TMP/busy" &
echo $! >>"$TMP/pids"
disown
until [ -s "$TMP/busy" ]; do sleep 0.05; done
BUSY=$(cat "$TMP/busy")
start=$SECONDS
"$BIN/colltop" -b -n 3 --np 2 --listen "127.0.0.1:$BUSY" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a port in use"
check "... named, in one line" sh -c "[ \$(wc -l <'$TMP/e') = 1 ] && grep -q 'cannot listen there: Address already in use' '$TMP/e'"
check "... before the workers ran an interval" test ! -s "$TMP/o"
check "... at once" test $((SECONDS - start)) -lt 3
cat "$TMP/e"

# A reader of stdout that stalls (a full pipe nobody reads: a log shipper that
# hangs) must not stall a scrape: frames wait, /metrics answers.
mkfifo "$TMP/fifo"
python3 - "$BIN/colltop" "$TMP/fifo" >"$TMP/py" 2>&1 <<'EOPY' &
import fcntl, os, re, subprocess, sys, termios, time, urllib.request
hold = os.open(sys.argv[2], os.O_RDWR | os.O_NONBLOCK)	# open, never read
top = subprocess.Popen([sys.argv[1], "--json", "--np", "2", "--no-gpu", "-d", "1",
                        "--listen", "127.0.0.1:0"], stdout=os.open(sys.argv[2], os.O_WRONLY),
                       stderr=subprocess.PIPE, text=True)
port = int(re.search(r":(\d+) \(", top.stderr.readline()).group(1))
def queued():
    b = bytearray(4)
    fcntl.ioctl(hold, termios.FIONREAD, b)
    return int.from_bytes(b, "little")
# The pipe holds 64 KiB: once what it holds stops growing (a frame did not
# fit), colltop's write waits for a reader that never comes.
until, last, still = time.time() + 60, -1, 0
while still < 15:
    assert time.time() < until, "the pipe never filled: %d" % queued()
    n = queued()
    still = still + 1 if n == last and n > 16384 else 0
    last = n
    time.sleep(0.1)
for _ in range(5):
    t = time.time()
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=4).read().decode()
    assert "coll_top_up 1" in body and time.time() - t < 3, (time.time() - t)
    time.sleep(0.2)
print("stalled stdout: scrapes answered")
top.kill()
EOPY
echo $! >>"$TMP/pids"
wait $!
check "a stalled stdout does not stall a scrape" grep -q 'scrapes answered' "$TMP/py"
pkill -9 -f -- "--listen 127.0.0.1:0" 2>/dev/null
finish
