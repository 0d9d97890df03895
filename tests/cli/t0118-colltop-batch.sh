#!/bin/bash
# colltop in batch mode on this machine: numbers that make sense (busbw > 0,
# counters of a fixture sysfs tree that only grow, their rates), a rank slowed
# with COLL_FAULT named as the straggler and no other, another job's stalled
# rank named from its status pages, and bad input refused with a clear line.
. "$(dirname "$0")/lib.sh"
colltop() { "$BIN/colltop" "$@"; }

# A fixture host tree: one interface and one RDMA port whose counters a loop
# raises by known steps (port_rcv_data counts 4-byte words).
R=$TMP/root
mkdir -p "$R/sys/class/net/fx0/statistics" "$R/sys/class/infiniband/mlx5_0/ports/1/counters" \
	"$R/sys/class/infiniband/mlx5_0/ports/1/hw_counters"
echo up >"$R/sys/class/net/fx0/operstate"
echo 100000 >"$R/sys/class/net/fx0/speed"
echo 3 >"$R/sys/class/net/fx0/carrier_changes"
for c in rx_errors tx_errors rx_dropped tx_dropped; do echo 0 >"$R/sys/class/net/fx0/statistics/$c"; done
echo "4: ACTIVE" >"$R/sys/class/infiniband/mlx5_0/ports/1/state"
echo "400 Gb/sec (4X NDR)" >"$R/sys/class/infiniband/mlx5_0/ports/1/rate"
P=$R/sys/class/infiniband/mlx5_0/ports/1
for c in symbol_error link_downed port_rcv_errors port_xmit_discards; do echo 0 >"$P/counters/$c"; done
for c in local_ack_timeout_err packet_seq_err out_of_sequence; do echo 0 >"$P/hw_counters/$c"; done
(
	# Each value is written beside its file and renamed over it: a reader
	# never sees the empty file that "echo >" leaves between truncate and write.
	put() { echo "$2" >"$1.new" && mv "$1.new" "$1"; }
	i=0
	while :; do
		i=$((i + 1))
		put "$R/sys/class/net/fx0/statistics/rx_bytes" $((i * 1000000))
		put "$R/sys/class/net/fx0/statistics/tx_bytes" $((i * 500000))
		put "$P/counters/port_rcv_data" $((i * 250000))
		put "$P/counters/port_xmit_data" $((i * 250000))
		put "$P/hw_counters/local_ack_timeout_err" $((i / 10))
		sleep 0.05
	done
) &
echo $! >>"$TMP/pids"
disown
sleep 0.3

# 1. One interval, text.
colltop --once --np 3 --no-gpu >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--once"
check "--once: the summary counts 3 ranks on 1 host" grep -q '^colltop: 3 ranks on 1 host' "$TMP/o"
check "--once: a row per rank" test "$(grep -cE '^ +[0-2]  [^ ]+ +ok ' "$TMP/o")" -eq 3
check "--once: the host table" grep -q '^HOST  RANKS  STATE  NET_RX' "$TMP/o"

# 2. JSON, with the fixture tree: counters only grow, rates follow them.
COLL_FS_ROOT=$R colltop --json -n 4 -d 3 --np 2 --no-gpu >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "--json --iterations 4"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
fr = [json.loads(l) for l in lines]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
say(len(fr) == 4, "4 frames (%d)" % len(fr))
say([f["interval"] for f in fr] == [0, 1, 2, 3], "intervals 0..3")
say(all(f["size"] == 2 and len(f["ranks"]) == 2 for f in fr), "2 ranks in each")
say(all(r["busbw"] > 0 and r["lat_us"] > 0 for f in fr for r in f["ranks"]), "busbw and latency > 0")
say(all(f["busbw"] > 0 for f in fr), "the op's busbw > 0")
h = [f["hosts"][0] for f in fr]
net = [[n for n in x["net"] if n["name"] == "fx0"][0] for x in h]
rd = [x["rdma"][0] for x in h]
rx = [n["rx_bytes"] for n in net]
say(all(a < b for a, b in zip(rx, rx[1:])), "fx0 rx_bytes grows: %s" % rx)
say(net[0]["rx_bps"] == -1 and all(n["rx_bps"] > 1e6 for n in net[1:]), "fx0 rate: none first, then > 1 MB/s")
say(net[0]["carrier_changes"] == 3 and net[0]["speed_mbps"] == 100000 and net[0]["up"], "fx0 state")
rr = [r["rx_bytes"] for r in rd]
say(all(a < b for a, b in zip(rr, rr[1:])) and all(v % 4 == 0 for v in rr), "RDMA rx_bytes grows, in 4-byte words: %s" % rr)
say(rd[0]["state"] == "ACTIVE" and rd[0]["rate"].startswith("400 Gb/sec") and rd[0]["hw"], "RDMA port state and rate")
say(all(r["rx_bps"] > 0 for r in rd[1:]), "RDMA rate > 0")
say(h[0]["gpu"] == [] and h[0]["gpu_why"] == "--no-gpu", "no GPU asked for: said")
EOF
check "JSON frames make sense" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"

# 3. Rank 2 comes 250 ms late to the probe from interval 3 on (the probe is op
# 2+3k: a barrier, then all-reduce, gather and broadcast each interval).
F=""
for k in $(seq 3 11); do F="$F${F:+,}2@$((2 + 3 * k)):delay=250"; done
COLL_FAULT=$F colltop --json -n 12 --interval 0.5 --np 4 --no-gpu --straggler-ms 100 \
	>"$TMP/s" 2>"$TMP/e"
expect_code 0 $? "a slowed rank"
python3 - "$TMP/s" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
say(len(fr) == 12, "12 frames")
named = [f["straggler"]["rank"] if f["straggler"] else None for f in fr]
say(named[-1] == 2 and named[-2] == 2, "rank 2 named as the straggler at the end: %s" % named)
say(all(n in (None, 2) for n in named), "no other rank ever named")
say(all(n is None for n in named[:5]), "not before 3 slow intervals past the warm-up")
late = [[r for r in f["ranks"] if r["rank"] == 2][0]["late_us"] for f in fr]
say(all(l > 200000 for l in late[4:11]), "rank 2 came > 200 ms late: %s" % [int(l) for l in late])
flag = [[r["rank"] for r in f["ranks"] if r["straggler"]] for f in fr]
say(all(x in ([], [2]) for x in flag), "only rank 2 flagged: %s" % flag)
EOF
check "the slowed rank is the straggler, and only it" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"
COLL_FAULT=$F colltop --iterations 9 -d 5 --np 4 --no-gpu --straggler-ms 100 >"$TMP/t" 2>"$TMP/e"
check "text: the straggler line names rank 2" \
	grep -q '^!! straggler: rank 2 on .* came [0-9.]* ms late to the probe' "$TMP/t"
check "text: rank 2's row says SLOW" grep -qE '^ +2  [^ ]+ +SLOW ' "$TMP/t"

# 4. Another job with a rank stopped between ops: stalled, that rank behind.
"$BIN/collrun" -n 3 collcheck allreduce -b 8 -e 8 -n 1000000 -w 0 >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
for _ in $(seq 300); do
	[ "$(ls "$COLL_STATUS_DIR" | wc -l)" -ge 3 ] && [ "$(ls "$COLL_JOB_DIR" | wc -l)" -ge 1 ] && break
	sleep 0.1
done
sleep 0.5
P1=$(pid_of_rank 1)
kill -STOP "$P1"
colltop --json -n 6 -d 5 --stall 1 --np 2 --no-gpu >"$TMP/p" 2>"$TMP/e"
expect_code 0 $? "another job's pages"
kill -CONT "$P1"
kill $JOB
wait $JOB 2>/dev/null
python3 - "$TMP/p" "$P1" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
def say(ok, what):
    print(("ok " if ok else "BAD ") + what)
jobs = [f["jobs"] for f in fr]
say(all(len(j) == 1 for j in jobs), "one other job seen in every frame (ours left out)")
j = jobs[-1][0]
say(j["nranks"] == 3 and len(j["ranks"]) == 3, "its 3 ranks")
say(j["stalled"] and j["behind"] == 1, "stalled, rank 1 named: %s" % {k: j[k] for k in ("stalled", "behind", "how", "behind_seq", "ahead_seq", "still_s")})
r1 = [r for r in j["ranks"] if r["rank"] == 1][0]
say((j["how"] == "stopped" and r1["proc"] == "T") or (j["how"] == "behind" and j["behind_seq"] + 1 == j["ahead_seq"]), "stopped in the op, or one op behind")
say([r["pid"] for r in j["ranks"] if r["rank"] == 1] == [int(sys.argv[2])], "its pid")
say(not jobs[0][0]["stalled"], "not called stalled before --stall had passed")
EOF
check "a stalled job and the rank behind it" sh -c "! grep -q '^BAD' '$TMP/py'"
grep '^BAD' "$TMP/py"

# 5. Bad input: one line naming the thing, exit 2; nothing started.
colltop --sort nope --once >"$TMP/o" 2>&1
expect_code 2 $? "--sort nope"
check "--sort: said, with the columns" grep -q "colltop: --sort 'nope' names no column: use rank, host" "$TMP/o"
colltop -d 0 --once >"$TMP/o" 2>&1
expect_code 2 $? "-d 0"
check "-d 0: said" grep -q '^colltop: -d' "$TMP/o"
colltop --bytes 2G --once >"$TMP/o" 2>&1
expect_code 2 $? "--bytes 2G"
check "--bytes: said" grep -q 'the probe is at most 1G' "$TMP/o"
colltop --worker >"$TMP/o" 2>&1
expect_code 2 $? "--worker by hand"
check "--worker: said" grep -q '^colltop: --worker is for the workers the dashboard starts' "$TMP/o"
colltop --once extra >"$TMP/o" 2>&1
expect_code 2 $? "an operand"
check "an operand: said" grep -q "^colltop: unexpected argument 'extra'" "$TMP/o"
colltop --iterations 0 >"$TMP/o" 2>&1
expect_code 2 $? "--iterations 0"
check "--iterations 0: said" grep -q '^colltop: -n/--iterations must be an integer from 1' "$TMP/o"
# The reader goes away (colltop -b | head): colltop stops, as top does.
start=$(date +%s)
colltop -b --np 2 --no-gpu -d 2 2>"$TMP/e" | head -1 >"$TMP/o"
check "-b | head -1: ends by itself" test $(($(date +%s) - start)) -lt 20
check "-b | head -1: its one line" grep -q '^colltop: 2 ranks on 1 host' "$TMP/o"
# A worker that cannot join ends the run at once (the others would wait at the join).
start=$(date +%s)
COLL_FAULT=zz colltop --once --np 2 --no-gpu >"$TMP/o" 2>&1
expect_code 3 $? "workers that cannot join"
check "said, naming the rank" grep -q '^colltop: cannot start the workers: its rank [01] exited with code 3' "$TMP/o"
check "at once, not after the join timeout" test $(($(date +%s) - start)) -lt 20
# Not a terminal: batch by itself, as top would need -b for.
colltop --np 2 --no-gpu -n 1 | cat >"$TMP/o"
check "piped: batch text" grep -q '^colltop: 2 ranks on 1 host' "$TMP/o"
check "no status page left" test "$(ls "$COLL_STATUS_DIR" | wc -l)" -eq 0
# htop's split: collectors and the model never include curses, only the screen does.
check "only ui.c includes curses" test "$(grep -l '#include <n\?curses' "$COLL_SRC"/cmd/colltop/*.c | xargs -n1 basename)" = ui.c
finish
