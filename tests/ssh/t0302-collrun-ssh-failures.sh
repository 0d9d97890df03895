#!/bin/bash
# Hosts that cannot be used are named with the reason, within the connect
# timeout, exit 255; host keys are checked; a dropped collrun leaves no rank;
# hostile host names and arguments do not inject.
. "$(dirname "$0")/lib.sh"

# Unknown host keys are refused by default, with how to fix it.
cp "$CFG" "$TMP/cfg"
: >"$TMP/kh"
sed -i "s|UserKnownHostsFile .*|UserKnownHostsFile $TMP/kh|" "$TMP/cfg"
collrun -F "$TMP/cfg" -H node01,node02 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "unknown host keys"
check "the unknown key is named with the fix" grep -q "node01: host key of $NET.1 is not in $TMP/kh: check it and add it (ssh-keyscan -H" "$TMP/e"
check "closing summary lists both hosts" grep -q "2 of 2 hosts could not be used" "$TMP/e"
check "nothing ran" test ! -s "$TMP/o"

collrun -F "$TMP/cfg" -H node01,node02 --accept-new hostname >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "--accept-new"
check "--accept-new recorded both keys" test "$(wc -l <"$TMP/kh")" -eq 2
collrun -F "$TMP/cfg" -H node01,node02 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "keys learnt by --accept-new are then trusted"

# The system-wide file (GlobalKnownHostsFile) counts too.
: >"$TMP/kh"
cp "$BED/known_hosts" "$TMP/global_kh"
sed "s|GlobalKnownHostsFile .*|GlobalKnownHostsFile $TMP/global_kh|" "$TMP/cfg" >"$TMP/cfg_g"
collrun -F "$TMP/cfg_g" -H node01 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a key known only to the global known_hosts file"

# Hashed known_hosts entries (ssh-keygen -H) are understood.
cp "$BED/known_hosts" "$TMP/kh"
ssh-keygen -q -H -f "$TMP/kh" 2>/dev/null
check "the file is hashed" grep -q '^|1|' "$TMP/kh"
collrun -F "$TMP/cfg" -H "$HOSTS" hostname >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "hashed known_hosts"

# A changed key is refused even with --accept-new.
ssh-keygen -q -t ed25519 -N '' -f "$TMP/other"
echo "$NET.1 $(cut -d' ' -f1,2 "$TMP/other.pub")" >"$TMP/kh"
collrun -F "$TMP/cfg" -H node01 --accept-new hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "a changed host key"
check "the change is named with the fix" grep -q "HOST KEY CHANGED for $NET.1.*ssh-keygen -R" "$TMP/e"

# Unreachable: nothing listens (refused), and nobody there (timeout).
cat "$CFG" >"$TMP/cfg2"
printf 'Host closed\n\tHostName %s.2\n\tPort 2222\nHost nobody\n\tHostName %s.250\n' "$NET" "$NET" |
	cat - "$CFG" >"$TMP/cfg2"
start=$(date +%s)
collrun -F "$TMP/cfg2" -H node01,closed,nobody --connect-timeout 2 hostname >"$TMP/o" 2>"$TMP/e"
expect_code 255 $? "unreachable hosts"
check "refused is named" grep -q "closed: cannot connect to port 2222: Connection refused" "$TMP/e"
check "silent host is named within the connect timeout" grep -Eq "nobody: (timed out after 2 s connecting|cannot connect to port 22: No route to host)" "$TMP/e"
check "within the timeout (and the grace)" test $(($(date +%s) - start)) -lt 10
check "summary names both" test "$(grep -c '^  \(closed\|nobody\): ' "$TMP/e")" -eq 2

# collrun killed outright: every remote rank ends by itself.
"$BIN/collrun" -F "$CFG" -H "$HOSTS" -N 2 bash -c 'echo up; exec -a "$0" sleep 60' "$MARK" >"$TMP/o" 2>"$TMP/e" &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do [ "$(grep -c up "$TMP/o")" -eq 8 ] && break; sleep 0.1; done
check "8 remote ranks running" test "$(leftovers)" -ge 8
kill -9 $pid
wait $pid 2>/dev/null
for _ in $(seq 100); do [ "$(leftovers)" -eq 0 ] && break; sleep 0.1; done
check "remote ranks died within 10 s of losing collrun" test "$(leftovers)" -eq 0

# Hostile host names are refused; hostile arguments arrive as they are.
collrun -F "$CFG" -H 'node01;touch /tmp/'"$MARK" true >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a host name with a ';'"
check "the bad name is named" grep -q "^collrun: .*node01;touch" "$TMP/e"
collrun -F "$CFG" -H node01 --no-label printf '%s|' 'a b' '$(touch /tmp/'"$MARK"')' "';touch /tmp/$MARK;'" '`id`' '"q"' >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "hostile arguments"
check "they arrive unchanged" test "$(cat "$TMP/o")" = "a b|\$(touch /tmp/$MARK)|';touch /tmp/$MARK;'|\`id\`|\"q\"|"
check "nothing was injected" test ! -e "/tmp/$MARK"
finish
