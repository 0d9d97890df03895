#!/bin/bash
# Authentication: ssh-agent first, then key files; an RSA key is named as the
# reason it cannot work; COLL_SOCKET_IFNAME picks the rendezvous address.
. "$(dirname "$0")/lib.sh"

# A config whose IdentityFile does not exist: only the agent can log in.
sed "s|IdentityFile .*|IdentityFile $TMP/missing_key|" "$CFG" >"$TMP/cfg"
collrun -F "$TMP/cfg" -H node01 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "no agent and no key"
check "the failure says what was tried" grep -q "node01: authentication failed for root@$NET.1: tried ssh-agent and 0 key(s)" "$TMP/e"

eval "$(ssh-agent -s)" >/dev/null
echo "$SSH_AGENT_PID" >>"$TMP/pids"
ssh-add -q "$BED/id_ed25519" 2>/dev/null
collrun --label -F "$TMP/cfg" -H "$HOSTS" hostname >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "the agent's key logs in"
check "all four hosts ran" test "$(grep -c '^\[[0-3] node0[1-4]\] node0[1-4]$' "$TMP/o")" -eq 4
kill "$SSH_AGENT_PID"
unset SSH_AUTH_SOCK SSH_AGENT_PID

# An RSA key: Debian 12's libssh2 signs with SHA-1 only, which servers refuse.
ssh-keygen -q -t rsa -b 2048 -N '' -f "$TMP/id_rsa"
sed "s|IdentityFile .*|IdentityFile $TMP/id_rsa|" "$CFG" >"$TMP/cfg"
collrun -F "$TMP/cfg" -H node01 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "an RSA key"
check "the RSA limitation is named" grep -q "RSA key $TMP/id_rsa cannot work: Debian 12's libssh2" "$TMP/e"

# COLL_SOCKET_IFNAME: the root listens on that interface, and ranks are told its address.
br=$(ip -o -4 addr show | awk -v n="$NET.254/" 'index($4, n) == 1 { print $2 }')
COLL_SOCKET_IFNAME="=$br" collrun -F "$CFG" -H "$HOSTS" sh -c 'echo "$COLL_UNIQUE_ID"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "COLL_SOCKET_IFNAME=$br"
check "every rank is told the bridge's address" test "$(grep -c "@$NET.254:[0-9]*\$" "$TMP/o")" -eq 4
COLL_SOCKET_IFNAME="=$br" collrun -F "$CFG" -H "$HOSTS" --no-label "$BIN/collcheck" allreduce -b 8 -e 64K -f 8 -n 1 -w 0 >"$TMP/ar" 2>"$TMP/e"
expect_code 0 $? "a collective through it"
check "5 sizes, every #wrong 0" awk '/^ *[0-9]/ { n++; if ($9 != 0 || $13 != 0) bad = 1 } END { exit bad || n != 5 }' "$TMP/ar"
finish
