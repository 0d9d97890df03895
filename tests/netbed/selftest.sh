#!/bin/bash
# Self-test of netbed.sh: build a 4-host bed (and a second one beside it),
# use it, tear it down, and show that nothing of it is left. Needs root.
# Last line: "N passed, M failed, S skipped"; exit status non-zero on any
# failure, 77 when not root (nothing could run).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
NB=$HERE/netbed.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/netbed-selftest.XXXXXX")
A=$TMP/a B=$TMP/b C=$TMP/c F=$TMP/fail
PA=nt$$ PB=nu$$ # prefixes of our own, so a bed someone else has up is no obstacle
passes=0 fails=0 skips=0

cleanup() {
	local d
	for d in "$A" "$B" "$C" "$F" "$TMP/r1" "$TMP/r2"; do "$NB" down "$d" >/dev/null 2>&1; done
	"$NB" reap >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ok() { passes=$((passes + 1)); echo "ok - $*"; }
not_ok() { fails=$((fails + 1)); echo "not ok - $*"; }
skip() { skips=$((skips + 1)); echo "skip - $*"; }
check() { # check DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
quiet() { # quiet COMMAND...: its output only when it fails
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	[ $rc -eq 0 ] || echo "$out" | sed 's/^/    /'
	return $rc
}
finish() {
	echo "$passes passed, $fails failed, $skips skipped"
	[ "$fails" -eq 0 ]
}
# alive PID: kill -0 succeeds and it is no zombie (orphans are reaped lazily here)
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
net_of() { sed -n 's/^NET=//p' "$1/netbed.env"; }
banner() { # banner FROMDIR FROMHOST ADDR: the first bytes sshd at ADDR sends
	"$NB" exec "$1" "$2" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/22" && head -c 7 <&3' "$3" 2>/dev/null
}

if [ "$(id -u)" != 0 ]; then # ctest: SKIP_RETURN_CODE 77
	skip "netbed needs root (network namespaces, a bridge)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
fi

# ---- a 4-host bed --------------------------------------------------------
if ! "$NB" up "$A" 4 "$PA" >"$TMP/up.out" 2>&1; then
	cat "$TMP/up.out"
	not_ok "up 4 hosts"
	finish
	exit 1
fi
ok "up 4 hosts: $(tail -1 "$TMP/up.out")"
X=$(net_of "$A")
mapfile -t PIDS < <(awk '{ print $2 }' "$A/pids")

check "check: ssh to every host prints its hostname" quiet "$NB" check "$A"

got=$(for i in 1 2 3 4; do "$NB" exec "$A" "$i" hostname; done | paste -sd' ')
check "exec runs on each host with its hostname ($got)" [ "$got" = "node01 node02 node03 node04" ]

check "host 1 reaches host 2 (sshd banner at 10.213.$X.2:22)" \
	[ "$(banner "$A" 1 "10.213.$X.2")" = SSH-2.0 ]
check "host 4 reaches host 3 (sshd banner at 10.213.$X.3:22)" \
	[ "$(banner "$A" 4 "10.213.$X.3")" = SSH-2.0 ]

got=$("$NB" exec "$A" 1 ssh -F "$A/ssh_config" node03 hostname 2>"$TMP/err")
check "ssh from node01 to node03 by name ($got)" [ "$got" = node03 ]

got=$("$NB" exec "$A" 1 getent hosts node04 | tr -s ' ')
check "node names resolve on the hosts ($got)" [ "$got" = "10.213.$X.4 node04" ]
got=$("$NB" run "$A" getent hosts node02 | tr -s ' ')
check "run: node names resolve on this machine too ($got)" [ "$got" = "10.213.$X.2 node02" ]
check "run leaves /etc/hosts as it was" bash -c '! grep -q node0 /etc/hosts'

# The routes must be read (the bed's subnet is there) for a missing default to count.
routes=$("$NB" exec "$A" 2 ip route 2>&1)
check "hosts have no default route (traffic stays on the bed): $(echo "$routes" | paste -sd';')" \
	bash -c 'grep -q "^10\.213\.$1\.0/24 " <<<"$0" && ! grep -q default <<<"$0"' "$routes" "$X"

ok_pid=1
for i in 1 2 3 4; do
	p=${PIDS[$((i - 1))]}
	[ "$(cat "$A/sshd$i.pid")" = "$p" ] && [ "$(readlink "/proc/$p/exe")" = /usr/sbin/sshd ] || ok_pid=0
done
check "recorded PIDs are the sshds' own (PidFile, /proc/PID/exe)" [ $ok_pid = 1 ]

# A launcher on libssh2 1.10 (Debian 12): kex, ed25519 host key, known_hosts, ed25519 auth.
if cc -O2 -o "$TMP/probe" "$HERE/libssh2_probe.c" -lssh2 2>"$TMP/cc.out"; then
	out=$("$TMP/probe" "10.213.$X.2" node02 "$A/known_hosts" "$A/id_ed25519" 2>&1)
	check "libssh2 connects, verifies, authenticates: $(echo "$out" | paste -sd' ')" \
		[ "$(echo "$out" | tail -1)" = node02 ]
else
	skip "libssh2 probe: cannot build (libssh2-1-dev missing?): $(head -1 "$TMP/cc.out")"
fi

# A link taken down (fault injection as TESTING.md suggests) and back up.
veth2=$(awk '$1 == "veth" && $2 ~ /v2$/ { print $2 }' "$A/owned")
ip link set "$veth2" down
check "with $veth2 down, host 1 cannot reach host 2" [ "$(banner "$A" 1 "10.213.$X.2")" != SSH-2.0 ]
ip link set "$veth2" up
check "with $veth2 up again, host 1 reaches host 2" [ "$(banner "$A" 1 "10.213.$X.2")" = SSH-2.0 ]

# ---- a second bed beside the first ---------------------------------------
if "$NB" up "$B" 2 "$PB" >"$TMP/upb.out" 2>&1; then
	ok "a second bed beside it: $(tail -1 "$TMP/upb.out")"
	check "the two beds have different subnets ($X, $(net_of "$B"))" [ "$X" != "$(net_of "$B")" ]
	check "check on the second bed" quiet "$NB" check "$B"
else
	cat "$TMP/upb.out"
	not_ok "a second bed beside it"
fi
"$NB" up "$C" 2 "$PA" >"$TMP/upc.out" 2>&1
rc=$?
check "a bed with a prefix in use is refused ($(tail -1 "$TMP/upc.out"))" [ $rc -ne 0 ]
check "... and the first bed still works" quiet "$NB" check "$A"
check "down of the second bed" quiet "$NB" down "$B"
check "... leaves the first bed working" quiet "$NB" check "$A"

# ---- an up that fails half way cleans up after itself --------------------
NETBED_SSHD=/bin/false NETBED_UP_TIMEOUT=3 "$NB" up "$F" 3 "${PA}f" >"$TMP/upf.out" 2>&1
rc=$?
named=$(grep -c 'node01' "$TMP/upf.out")
check "up with an sshd that dies fails loudly, naming the host ($(grep -m1 'node0' "$TMP/upf.out"))" \
	[ $rc -ne 0 -a "$named" -gt 0 ]
check "... and leaves no namespace or bridge" \
	bash -c '! ip netns list | grep -q "^$0h" && ! ip link show "$0br" >/dev/null 2>&1' "${PA}f"

# ---- a bed whose DIR is deleted (a killed run) ----------------------------
reaped() { # reaped PREFIX: no namespace, bridge or sshd of that prefix is left
	! ip netns list | grep -q "^$1h" && ! ip link show "$1br" >/dev/null 2>&1 &&
		! pgrep -f "^sshd: .*$TMP/r[0-9]/sshd_config" >/dev/null
}
if "$NB" up "$TMP/r1" 2 "${PA}r" >/dev/null 2>&1; then
	rm -rf "$TMP/r1"
	check "up with the prefix of a bed whose DIR is gone reaps it first" quiet "$NB" up "$TMP/r2" 2 "${PA}r"
	check "... and the new bed works" quiet "$NB" check "$TMP/r2"
	"$NB" up "$TMP/r2" 3 "${PA}r" >"$TMP/r2.out" 2>&1
	check "up again in the same DIR takes the earlier bed down first" \
		grep -q 'taking it down first' "$TMP/r2.out"
	check "... and the new bed works" quiet "$NB" check "$TMP/r2"
	rm -rf "$TMP/r2"
	check "reap removes a bed whose DIR is gone" quiet "$NB" reap
	check "... leaving no namespace, bridge or sshd of it" reaped "${PA}r"
else
	not_ok "up for the reap tests"
fi

# ---- down ----------------------------------------------------------------
"$NB" exec "$A" 3 sleep 300 </dev/null >/dev/null 2>&1 &
ssh -F "$A/ssh_config" "10.213.$X.4" 'sleep 301 </dev/null >/dev/null 2>&1 &' </dev/null
sleep 0.3
# Every process on the hosts now: sshds, the ssh session's, the two sleeps.
stray=$(for i in 1 2 3 4; do ip netns pids "${PA}h$i"; done | paste -sd' ')
check "down" quiet "$NB" down "$A"
check "no namespace of the bed is left (ip netns list)" bash -c '! ip netns list | grep -q "^$0h"' "$PA"
check "no bridge or veth of the bed is left (ip link show)" \
	bash -c '! ip -o link show | grep -qE "^[0-9]+: $0(br|v[0-9])"' "$PA"
left=""
for p in "${PIDS[@]}" $stray; do alive "$p" && left="$left $p"; done
check "no sshd (${PIDS[*]}) nor other process that was on a host ($stray) is alive (kill -0)" [ -z "$left" ]
check "no /etc/netns entry of the bed is left" bash -c '! ls /etc/netns 2>/dev/null | grep -q "^$0h"' "$PA"
check "down again is a no-op that succeeds" quiet "$NB" down "$A"
check "down of a directory with no bed succeeds" quiet "$NB" down "$TMP/none"

finish
