#!/bin/bash
# Root's collstack and what another local user puts in front of it (issue 34,
# findings 6 and 1): the user binds a loopback port with the RAS stand-in
# (tests/stack/ras_server.py) serving a forged report that names rank 1 of
# root's healthy job behind; squats rank 1's flight recorder dump and rank
# 0's dump pipe in a shared sticky directory; and adds its own dump, and a
# FIFO, beside root's dumps for --fr, and is first at the lowest rank's dump
# name (--fr's owner is root, the caller, not that file's). Each is said as
# ignored with its owner, none is connected to, written or read, and the
# verdict cites neither RAS nor the flight recorder.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
attacker_init
cp "$COLL_SRC/tests/stack/ras_server.py" "$COLL_SRC/tests/stack/ras/verbose_status.json" "$ATK_DIR/"
chmod 644 "$ATK_DIR"/*

# Root's job: two ranks; rank 1's flight recorder dumps to $PUB/d_1, rank 0 takes requests on $PUB/pipe_0.pipe.
cat >"$TMP/ranks.py" <<'PY'
import os, time
print("ready", flush=True)
time.sleep(1000)
PY
# The stranger is there first: a dump at rank 1's name, a FIFO at rank 0's pipe.
as_atk python3 "$COLL_SRC/tests/stack/fr_dumps.py" "$PUB/d_" hang
as_atk rm -f "$PUB/d_0"
as_atk mkfifo "$PUB/pipe_0.pipe"
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE="$PUB/d_" \
	    TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$PUB/pipe_" python3 "$TMP/ranks.py" >"$TMP/r$r.out" 2>&1 &
	echo $! >>"$TMP/pids"
	eval "p$r=$!"
done
# Rank 1's own pipe, and a reader on it (as PyTorch's watchdog) that never dumps.
mkfifo "$PUB/pipe_1.pipe"
sleep 1000 <>"$PUB/pipe_1.pipe" &
echo $! >>"$TMP/pids"
# The stranger's RAS service, on a free loopback port, its report naming root's ranks' pids.
as_atk python3 "$ATK_DIR/ras_server.py" json "$ATK_DIR/verbose_status.json" "$ATK_DIR/port" \
    673=$p0 674=$p1 &
echo $! >>"$TMP/pids"
for _ in $(seq 100); do
	grep -q ready "$TMP/r0.out" && grep -q ready "$TMP/r1.out" && [ -s "$ATK_DIR/port" ] && break
	sleep 0.1
done
port=$(cat "$ATK_DIR/port")

NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --no-color >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a healthy job with a stranger's RAS and dumps: nobody blamed"
check "... the RAS service ignored, with its pid and user" grep -qE "^note: NCCL RAS skipped on $(hostname): ignored: NCCL RAS on 127\.0\.0\.1:$port belongs to pid [0-9]+ of user $ATK, not to the job$" "$TMP/o"
pid=$(sed -n "s/.* belongs to pid \([0-9]*\) of user .*/\1/p" "$TMP/o")
check "... that pid is the stranger's" test "$(stat -c %U "/proc/$pid" 2>/dev/null)" = "$ATK"
check "... no line of its report in the verdict" sh -c "! grep -q '^NCCL RAS:' '$TMP/o' && ! grep -q '^=>' '$TMP/o'"
check "... rank 1's dump ignored, with its owner" grep -qF "rank 1 (pid $p1): ignored: its dump $PUB/d_1 is owned by user $ATK, not by the rank's user $(id -un): left alone" "$TMP/o"
check "... rank 0's pipe ignored, with its owner" grep -qF "rank 0 (pid $p0): ignored: its dump pipe $PUB/pipe_0.pipe is owned by user $ATK, not by the rank's user $(id -un): left alone" "$TMP/o"
check "... no flight recorder finding" sh -c "! grep -q 'did not join\|mismatch in' '$TMP/o'"
check "... nothing on stderr" test ! -s "$TMP/e" || cat "$TMP/e" >&2
NCCL_RAS_ADDR=127.0.0.1:$port collstack --pid $p0,$p1 --json >"$TMP/j" 2>&1
check "--json: no RAS report, no culprit, the note" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "report" not in d.get("ras", {}), d.get("ras")
assert d["culprits"] == [], d["culprits"]
assert "ignored: NCCL RAS on" in json.dumps(d), d' "$TMP/j"

# --fr on a shared directory: root's dumps, the stranger's rank 2 beside them, and its FIFO at rank 3.
python3 "$COLL_SRC/tests/stack/fr_dumps.py" "$PUB/x_" hang
as_atk python3 "$COLL_SRC/tests/stack/fr_dumps.py" "$ATK_DIR/y_" mismatch
as_atk cp "$ATK_DIR/y_1" "$PUB/x_2"
as_atk mkfifo "$PUB/x_3"
timeout 20 "$BIN/collstack" --fr "$PUB/x_" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--fr with a stranger's dump and FIFO beside root's"
check "... its dump ignored, with its owner" grep -qxF "collstack: passed over $PUB/x_2: ignored: owned by user $ATK, not by user $(id -un) who runs collstack" "$TMP/e"
check "... its FIFO passed over, not waited on" grep -qxF "collstack: passed over $PUB/x_3: not a regular file of at most 512 MiB" "$TMP/e"
check "... root's two dumps read, rank 1 named" sh -c "grep -q 'dumps of 2 ranks' '$TMP/o' && grep -q '^rank 1 did not join' '$TMP/o'"
"$BIN/collstack" --fr "$PUB/x_" --user "$ATK" >"$TMP/o" 2>"$TMP/e"
check "--user names the owner: root's dumps ignored, the user's read" sh -c "grep -qxF 'collstack: passed over $PUB/x_0: ignored: owned by user $(id -un), not by user $ATK named by --user' '$TMP/e' && grep -q 'dumps of 1 rank$' '$TMP/o'"
# The stranger is first at the lowest rank's name (rank 0 then cannot write it): root's rank 1 is read all the same.
python3 "$COLL_SRC/tests/stack/fr_dumps.py" "$TMP/w_" hang
as_atk cp "$ATK_DIR/y_0" "$PUB/z_0"
cp "$TMP/w_1" "$PUB/z_1"
"$BIN/collstack" --fr "$PUB/z_" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--fr with the stranger's dump at rank 0's name"
check "... its dump ignored, root's read" sh -c "grep -qxF 'collstack: passed over $PUB/z_0: ignored: owned by user $ATK, not by user $(id -un) who runs collstack' '$TMP/e' && ! grep -q z_1 '$TMP/e' && grep -q 'dumps of 1 rank$' '$TMP/o'"
check "... rank 0 said to have no dump" grep -qx "rank 0 of the group has no dump here (or no entry of the group in it)" "$TMP/o"
# Root, no --user, and none of the dumps root's (copied off a cluster): all one user's, read and said.
"$BIN/collstack" --fr "$ATK_DIR/y_" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "--fr on another user's dumps alone"
check "... read as that user's, and said" sh -c "grep -qxF \"collstack: note: none of the dumps is root's: they are all user $ATK's, and are read (give --user to name the job's user)\" '$TMP/e' && grep -q '^mismatch in' '$TMP/o'"
# Several users' dumps, none root's: refused, asking for --user.
mkdir -m 755 "$TMP/mix"
cp "$ATK_DIR/y_0" "$TMP/mix/m_0" && chown "$ATK" "$TMP/mix/m_0"
cp "$ATK_DIR/y_1" "$TMP/mix/m_1" && chown nobody "$TMP/mix/m_1"
"$BIN/collstack" --fr "$TMP/mix/m_" >"$TMP/o" 2>&1
expect_code 3 $? "--fr on two other users' dumps, no --user"
check "... refused, asking for --user" grep -q "the dumps are several users' .* and none is root's: give --user to name the job's user" "$TMP/o"
finish
