#!/bin/bash
# Malformed unique ids, an unreachable root and garbage on the root's port:
# one clear line and a non-zero exit, never a hang or a crash.
. "$(dirname "$0")/lib.sh"

run_rank() { COLL_UNIQUE_ID=$1 COLL_RANK=0 COLL_SIZE=2 COLL_TIMEOUT=2 timeout 20 "$BIN/collcheck" allreduce -b 8 -e 8 -n 1 -w 0; }

for id in "garbage" "coll1:zz" "coll1:0123456789abcdef:00112233445566778899aabbccddeeff@" \
    "coll1:0123456789abcdef:00112233445566778899aabbccddeeff@127.0.0.1:0"; do
	run_rank "$id" >"$TMP/o" 2>"$TMP/e"
	expect_code 3 $? "malformed id '$id'"
	check "one line says the id is malformed" test "$(grep -c 'COLL_UNIQUE_ID.* is malformed' "$TMP/e") $(wc -l <"$TMP/e")" = "1 1"
done
run_rank "coll9:0123456789abcdef:00112233445566778899aabbccddeeff@127.0.0.1:1" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "another format version"
check "the version is named" grep -q 'format version' "$TMP/e"

# Nothing listens on this port: the error names the root within the timeout.
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
start=$(date +%s)
run_rank "coll1:0123456789abcdef:00112233445566778899aabbccddeeff@127.0.0.1:$port" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "unreachable root"
check "the root address is named" grep -q "cannot reach the root at 127.0.0.1:$port" "$TMP/e"
check "within the timeout" test $(($(date +%s) - start)) -lt 10

# Garbage and a wrong secret on the root's port do not disturb the job.
cat >"$TMP/hostile.sh" <<'EOS'
if [ "$COLL_RANK" = 0 ]; then
	addr=${COLL_UNIQUE_ID##*@}; host=${addr%:*}; port=${addr##*:}
	exec 3<>/dev/tcp/$host/$port && printf 'GET / HTTP/1.0\r\n\r\n' >&3
	exec 4<>/dev/tcp/$host/$port && head -c 5000 /dev/urandom >&4
	# Flip the secret's first hex digit: always a different secret.
	secret=${COLL_UNIQUE_ID#*:*:}; secret=${secret%%@*}
	if [ "${secret:0:1}" = 0 ]; then flip=1; else flip=0; fi
	bad=${COLL_UNIQUE_ID/:$secret@/:$flip${secret:1}@}
	COLL_UNIQUE_ID=$bad COLL_TIMEOUT=3 collcheck allreduce -b 8 -e 8 -n 1 -w 0 >/dev/null 2>"$HOSTILE_ERR"
	echo "impostor exit $?" >>"$HOSTILE_ERR"
fi
exec collcheck allreduce -b 8 -e 64K -f 8 -n 2 -w 0
EOS
HOSTILE_ERR=$TMP/impostor collrun -n 2 --no-label bash "$TMP/hostile.sh" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "the job runs despite garbage on the root port"
check "results all correct, 5 sizes" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 5 }' "$TMP/o"
check "an impostor with a wrong secret is refused" grep -q "does not hold this job's secret" "$TMP/impostor"
check "the impostor exits 3" grep -q "impostor exit 3" "$TMP/impostor"
finish
