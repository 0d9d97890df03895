#!/bin/bash
# A real Prometheus server scrapes colltop --listen on loopback every second:
# the target is up and its HTTP API returns colltop's series (the probe's
# latency per rank, a host's NIC counter, colltop's frames).
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || { echo "skip: no prometheus (tools/deps.sh installs it)"; exit 77; }

"$BIN/colltop" -b --np 2 --no-gpu -d 5 --listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
echo $! >>"$TMP/pids"
until=$((SECONDS + 20))
PORT=""
while [ -z "$PORT" ] && [ $SECONDS -lt $until ]; do
	PORT=$(sed -n 's/^colltop: serving Prometheus metrics on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$TMP/err")
	[ -n "$PORT" ] || sleep 0.1
done
check "colltop serves" test -n "$PORT"
[ -n "$PORT" ] || { cat "$TMP/err"; finish; exit; }

cat >"$TMP/p.yml" <<EOY
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: colltop
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOY
promtool check config "$TMP/p.yml" >"$TMP/pc" 2>&1
expect_code 0 $? "the scrape config is Prometheus's"

# Prometheus takes no port 0: a free one, tried again if another program took it first.
for try in 1 2 3; do
	P2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	prometheus --config.file="$TMP/p.yml" --storage.tsdb.path="$TMP/tsdb$try" \
		--web.listen-address="127.0.0.1:$P2" --log.level=warn >"$TMP/prom.log" 2>&1 &
	PROM=$!
	echo $PROM >>"$TMP/pids"
	up=0
	until=$((SECONDS + 30))
	while [ $SECONDS -lt $until ] && kill -0 $PROM 2>/dev/null; do
		if python3 -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/-/ready" % sys.argv[1], timeout=2)' "$P2" 2>/dev/null; then
			up=1
			break
		fi
		sleep 0.2
	done
	[ $up = 1 ] && break
	kill $PROM 2>/dev/null
done
check "prometheus is ready" test $up = 1
[ $up = 1 ] || { cat "$TMP/prom.log"; finish; exit; }

python3 - "$P2" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys, time, urllib.parse, urllib.request
api = "http://127.0.0.1:%s/api/v1/query?query=" % sys.argv[1]

def query(q):
    with urllib.request.urlopen(api + urllib.parse.quote(q), timeout=4) as r:
        d = json.load(r)
    assert d["status"] == "success", d
    return d["data"]["result"]

def wait(q, cond, what):
    until = time.time() + 40
    while True:
        res = query(q)
        if cond(res):
            print("%s ok: %s" % (what, json.dumps(res)[:300]))
            return res
        assert time.time() < until, "%s: %s never came: %s" % (what, q, res)
        time.sleep(0.5)

wait('up{job="colltop"}', lambda r: r and r[0]["value"][1] == "1", "up")
wait("coll_probe_latency_seconds",
     lambda r: sorted(x["metric"].get("rank") for x in r) == ["0", "1"] and
     all(float(x["value"][1]) > 0 for x in r), "latency")
wait("coll_network_receive_bytes_total", lambda r: len(r) >= 1 and "device" in r[0]["metric"], "nic")
wait("coll_top_frames_total", lambda r: r and float(r[0]["value"][1]) >= 2, "frames")
wait("increase(coll_top_frames_total[10s])", lambda r: r and float(r[0]["value"][1]) > 0, "advancing")
EOPY
cat "$TMP/py"
check "the target is up" grep -q '^up ok' "$TMP/py"
check "the probe's latency, per rank" grep -q '^latency ok' "$TMP/py"
check "a NIC's counter with its device" grep -q '^nic ok' "$TMP/py"
check "colltop's frames, advancing" grep -q '^advancing ok' "$TMP/py"
finish
