#!/bin/bash
# collcheck env over SSH on 4 hosts: a uniform set exits 0; one host given a
# different NCCL_* variable (its sshd's SetEnv) and another a lower memlock
# limit (its sshd's, which sessions inherit) are named, exactly those, and the
# check exits 1; a host that cannot be reached is named and the rest checked.
. "$(dirname "$0")/lib.sh"
NETBED="$COLL_SRC/tests/netbed/netbed.sh"
cp "$BED/sshd_config" "$TMP/sshd_config.orig"
pid_of() { cat "$BED/sshd$1.pid"; }
memlock0=$(prlimit --pid "$(pid_of 3)" --memlock --raw --noheadings -o SOFT)
memlock0h=$(prlimit --pid "$(pid_of 3)" --memlock --raw --noheadings -o HARD)
restore() {
	cp "$TMP/sshd_config.orig" "$BED/sshd_config"
	prlimit --pid "$(pid_of 3)" --memlock="$memlock0:$memlock0h" 2>/dev/null
	for i in 1 2 3 4; do kill -HUP "$(pid_of $i)" 2>/dev/null; done
	sleep 0.5
}
trap 'restore; cleanup' EXIT

collcheck env -F "$CFG" -H "$HOSTS" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "4 uniform hosts"
for h in node01 node02 node03 node04; do
	check "$h: OK" grep -q "^$h  OK\$" "$TMP/o"
done
check "nothing on stderr" test ! -s "$TMP/e"

# node02 gets NCCL_IB_HCA, node03 a lower memlock limit.
addr2=$(sed -n '/^Host node02$/,/^Host /s/^\tHostName //p' "$CFG")
printf '\nMatch LocalAddress %s\n\tSetEnv NCCL_IB_HCA=mlx5_1\n' "$addr2" >>"$BED/sshd_config"
prlimit --pid "$(pid_of 3)" --memlock=65536:65536
for i in 1 2 3 4; do kill -HUP "$(pid_of $i)"; done
sleep 1
bash "$NETBED" check "$BED" >/dev/null 2>&1 || sleep 2
collcheck env -F "$CFG" -H "$HOSTS" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "two hosts differ"
check "node02 named for its NCCL_IB_HCA, as an error" \
	grep -q '^node02  ERROR  *NCCL_IB_HCA=mlx5_1 differs from 3 others ((not set))$' "$TMP/o"
check "node03 named for its memlock" grep -q '^node03  WARN  *limits.memlock=64 KiB differs from 3 others' "$TMP/o"
check "node01 and node04 OK" test "$(grep -c -E '^node0[14]  OK$' "$TMP/o")" -eq 2
check "the summary counts 2 with problems" grep -q '^collcheck: 4 hosts, 4 ranks: 2 with problems, 0 unreachable' "$TMP/o"
collcheck env -F "$CFG" -H "$HOSTS" --json >"$TMP/j" 2>"$TMP/e"
python3 - "$TMP/j" >"$TMP/py" 2>&1 <<'EOPY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {h["host"]: h["status"] for h in d["hosts"]}
assert st == {"node01": "OK", "node02": "ERROR", "node03": "WARN", "node04": "OK"}, st
n2 = [h for h in d["hosts"] if h["host"] == "node02"][0]
assert n2["facts"]["env.NCCL_IB_HCA"] == "mlx5_1"
assert all(abs(h["clock_offset_us"]) < 1e6 for h in d["hosts"])
print("json ok")
EOPY
check "--json: the same verdicts, the facts and the clock offsets" grep -q 'json ok' "$TMP/py"

# A fifth host with an address on the bed where nothing answers.
net=$(sed -n 's/^\tHostName \(10\.213\.[0-9]*\)\.1$/\1/p' "$CFG")
{ printf 'Host node09\n\tHostName %s.9\n' "$net"; cat "$CFG"; } >"$TMP/ssh_config"
start=$(date +%s)
collcheck env -F "$TMP/ssh_config" --connect-timeout 1 -H "node[01-04],node09" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a host that cannot be reached"
check "node09 named as unreachable, with why" grep -q '^node09  UNREACHABLE  *[a-z]' "$TMP/o"
check "the other four still checked" test "$(grep -c -E '^node0[1-4]  (OK|WARN|ERROR)' "$TMP/o")" -eq 4
check "... with node02 still named" grep -q '^node02  ERROR' "$TMP/o"
check "done within 20 s" test $(($(date +%s) - start)) -lt 20
sleep 0.5
check "nothing left behind on any host" test "$(pgrep -fc 'collcheck env --worker')" -eq 0
finish
