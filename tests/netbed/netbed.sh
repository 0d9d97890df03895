#!/bin/bash
# netbed: K "hosts" on one machine for tests of code that crosses a network.
# Each host is a network namespace with its own address on a private bridge,
# its own hostname (nodeNN) and its own sshd. See README.md beside this file.
#
#   netbed.sh up DIR K [PREFIX]     build hosts 1..K, keys and files in DIR
#   netbed.sh down DIR              remove all that `up` made (idempotent)
#   netbed.sh exec DIR K CMD...     run CMD on host K (its netns and hostname)
#   netbed.sh run DIR CMD...        run CMD here with the node names resolvable
#   netbed.sh check DIR             ssh to every host, expect its hostname
#   netbed.sh reap                  remove beds whose DIR is gone (killed runs)
#
# Environment: NETBED_NET=X picks the subnet 10.213.X.0/24 (otherwise 0 for
# the default prefix "cb", a hash of PREFIX for others), NETBED_UP_TIMEOUT
# (seconds, default 20, K/4 past 80 hosts) bounds the wait for the sshds, NETBED_ETC_HOSTS=1 also
# adds the node names to /etc/hosts, NETBED_KEEP_ON_FAIL=1 leaves a failed
# `up` standing for a look, NETBED_JOBS (default 16) ssh sessions at once in
# `check`, NETBED_NO_SYSCTL=1 leaves the ARP-table limits alone (see below).
# Traffic goes only to loopback and 10.213.X.0/24: the namespaces have no
# default route, and ip_forward is not touched.
set -euo pipefail

SSHD=${NETBED_SSHD:-/usr/sbin/sshd} # another path only to test failures
BASE=10.213
LOCK=/run/netbed.lock
REG=/run/netbed/beds # PREFIX.dir (the DIR of the bed), PREFIX.owned (a copy)

die() { echo "netbed: $*" >&2; exit 1; }
usage() { sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# Run a command, swallowing its failure and its complaints (for teardown).
quiet() { "$@" >/dev/null 2>&1 || true; }

# ---- names and the address plan, shared by every subcommand ------------

# set_names PREFIX: interface names must fit 15 characters ("<ifp>v253"),
# so a long prefix is cut to 6 characters plus 4 hex digits of its hash.
set_names() {
	PREFIX=$1
	[[ $PREFIX =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || die "bad PREFIX '$PREFIX' (letters, digits, _ and -)"
	if [ ${#PREFIX} -le 10 ]; then
		IFP=$PREFIX
	else
		IFP=${PREFIX:0:6}$(printf '%04x' $(($(printf %s "$PREFIX" | cksum | cut -d' ' -f1) % 65536)))
	fi
	BR=${IFP}br
}
ns_name() { echo "${PREFIX}h$1"; }
veth_name() { echo "${IFP}v$1"; }
addr_of() { echo "$BASE.$NET.$1"; }
host_name() { printf 'node%0*d' "$([ "$K" -gt 99 ] && echo 3 || echo 2)" "$1"; }

load_env() { # load_env DIR: read what `up` wrote; 1 if there is no bed here
	DIR=$(cd "$1" 2>/dev/null && pwd) || return 1
	[ -f "$DIR/netbed.env" ] || return 1
	# shellcheck source=/dev/null
	. "$DIR/netbed.env"
	set_names "$PREFIX"
}

# subnet_busy N: 0 when 10.213.N.0/24 already has an address or a route here.
subnet_busy() {
	ip -4 -o addr show | grep -q " $BASE\.$1\." && return 0
	[ -n "$(ip -4 route show table all root "$BASE.$1.0/24" 2>/dev/null)" ]
}

pick_net() {
	if [ -n "${NETBED_NET:-}" ]; then
		[[ $NETBED_NET =~ ^[0-9]+$ ]] && [ "$NETBED_NET" -le 255 ] || die "NETBED_NET must be 0..255"
		subnet_busy "$NETBED_NET" && die "subnet $BASE.$NETBED_NET.0/24 is already in use here"
		NET=$NETBED_NET
	elif [ "$PREFIX" = cb ]; then
		subnet_busy 0 && die "subnet $BASE.0.0/24 is already in use here (another bed? use a PREFIX)"
		NET=0
	else
		local h n i
		h=$(printf %s "$PREFIX" | cksum | cut -d' ' -f1)
		for ((i = 0; i < 255; i++)); do
			n=$(((h + i) % 255 + 1))
			subnet_busy "$n" || { NET=$n; return; }
		done
		die "no free subnet in $BASE.1-255.0/24"
	fi
}

# ---- the neighbour (ARP) table --------------------------------------------
# The kernel keeps one ARP table for all network namespaces, capped by
# net.ipv4.neigh.default.gc_thresh3 (1024 by default): 128 hosts talking all
# to all need 16256 entries, and past the cap packets are dropped ("neighbor
# table overflow"). So a large bed raises the caps while it is up. Each bed
# files its need under /run/netbed/neigh; the caps follow the largest need,
# and the machine's own values come back when the last such bed goes down.
NEIGH=/run/netbed/neigh
GC=/proc/sys/net/ipv4/neigh/default/gc_thresh

neigh_apply() { # under the lock: set the caps from the needs on file
	local need=0 n f o1 o2 o3
	[ -f "$NEIGH/orig" ] || return 0
	for f in "$NEIGH"/*.need; do
		[ -f "$f" ] || continue
		n=$(cat "$f")
		[ "$n" -gt "$need" ] && need=$n
	done
	read -r o1 o2 o3 <"$NEIGH/orig"
	if [ "$need" -eq 0 ]; then
		echo "$o1" >"${GC}1" && echo "$o2" >"${GC}2" && echo "$o3" >"${GC}3" && rm -f "$NEIGH/orig" &&
			rmdir "$NEIGH" "${NEIGH%/*}" 2>/dev/null
	else
		echo $((need > o2 ? need : o2)) >"${GC}2"
		echo $((2 * need > o3 ? 2 * need : o3)) >"${GC}3"
	fi
}

neigh_raise() { # under the lock, after the bridge: file this bed's need
	local need=$((K * (K + 1) + 256)) f
	[ "$need" -gt "$(cat "${GC}2")" ] || [ -f "$NEIGH/orig" ] || return 0
	if [ "${NETBED_NO_SYSCTL:-0}" = 1 ]; then
		echo "netbed: warning: $K hosts all to all need ~$need ARP entries, gc_thresh3 is $(cat "${GC}3")" >&2
		return 0
	fi
	mkdir -p "$NEIGH"
	[ -f "$NEIGH/orig" ] || echo "$(cat "${GC}1") $(cat "${GC}2") $(cat "${GC}3")" >"$NEIGH/orig"
	f=$NEIGH/$(printf %s "$DIR" | cksum | cut -d' ' -f1).need
	echo "$need" >"$f"
	own neigh "$f"
	neigh_apply
}

# ---- up ------------------------------------------------------------------

# own WHAT NAME: record something we made, for `down`; the copy under /run
# lets `reap` remove a bed whose DIR was deleted with its build tree.
own() { echo "$*" >>"$DIR/owned"; echo "$*" >>"$REG/$PREFIX.owned"; }

write_sshd_config() {
	# The algorithm lists keep what libssh2 1.10 (Debian 12) can do: kex
	# curve25519-sha256, ecdh-sha2-nistp*, diffie-hellman-group14/16/18;
	# host key ssh-ed25519 only; ciphers aes*-ctr; MACs hmac-sha2-256/512.
	# OpenSSH clients get their usual first choices as well.
	# SetEnv SHLVL=1: bash sources ~/.bashrc for a command run by sshd only
	# when SHLVL is unset; this machine's one must not slow, hang or add
	# output to the ranks (pyenv's rehash lock once stalled every login 60 s).
	cat >"$DIR/sshd_config" <<EOF
# written by netbed.sh up
Port 22
AddressFamily inet
HostKey $DIR/ssh_host_ed25519_key
HostKeyAlgorithms ssh-ed25519
PubkeyAcceptedAlgorithms ssh-ed25519
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,diffie-hellman-group14-sha256
Ciphers chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,aes256-gcm@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr
MACs umac-128-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha2-512
AuthorizedKeysFile $DIR/authorized_keys
PubkeyAuthentication yes
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitUserEnvironment no
MaxStartups 1000:30:1000
MaxSessions 100
LoginGraceTime 30
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
Subsystem sftp internal-sftp
SetEnv SHLVL=1
EOF
}

make_keys_and_files() {
	local i hk
	rm -f "$DIR"/ssh_host_ed25519_key* "$DIR"/id_ed25519*
	ssh-keygen -q -t ed25519 -N '' -C "netbed-host-$PREFIX" -f "$DIR/ssh_host_ed25519_key"
	ssh-keygen -q -t ed25519 -N '' -C "netbed-client-$PREFIX" -f "$DIR/id_ed25519"
	cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
	hk=$(cut -d' ' -f1,2 "$DIR/ssh_host_ed25519_key.pub")
	: >"$DIR/known_hosts"
	: >"$DIR/hosts"
	for ((i = 1; i <= K; i++)); do
		echo "$(addr_of "$i") $hk" >>"$DIR/known_hosts"
		echo "$(host_name "$i") $hk" >>"$DIR/known_hosts"
		echo "$(addr_of "$i") $(host_name "$i")" >>"$DIR/hosts"
	done
	# A hosts file for `run` (this machine's own entries plus the nodes'), and
	# the one each namespace sees as /etc/hosts (ip netns exec binds it).
	{ cat /etc/hosts; cat "$DIR/hosts"; } >"$DIR/etc_hosts"
	{ printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n'; cat "$DIR/hosts"; } >"$DIR/ns_hosts"
	# ssh_config: HostName per node (so a client that reads it needs no name
	# resolution), then the settings for all; first value wins, as in ssh.
	{
		echo "# ssh -F $DIR/ssh_config nodeNN (or an address): written by netbed.sh up"
		for ((i = 1; i <= K; i++)); do
			printf 'Host %s\n\tHostName %s\n' "$(host_name "$i")" "$(addr_of "$i")"
		done
	} >"$DIR/ssh_config"
	cat >>"$DIR/ssh_config" <<EOF
Host *
	User root
	IdentityFile $DIR/id_ed25519
	IdentitiesOnly yes
	UserKnownHostsFile $DIR/known_hosts
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	BatchMode yes
	ConnectTimeout 5
	LogLevel ERROR
EOF
	write_sshd_config
}

make_bridge() { # under the lock
	pick_net
	echo "NET=$NET" >>"$DIR/netbed.env"
	ip link add "$BR" type bridge stp_state 0 forward_delay 0
	own bridge "$BR"
	echo 1 >"/proc/sys/net/ipv6/conf/$BR/disable_ipv6"
	ip addr add "$(addr_of 254)/24" dev "$BR"
	ip link set "$BR" up
	neigh_raise
}

make_host() { # make_host I: namespace, veth into the bridge, address, lo
	local i=$1 ns veth
	ns=$(ns_name "$i") veth=$(veth_name "$i")
	ip netns add "$ns"
	own netns "$ns"
	mkdir -p "/etc/netns/$ns"
	own etcnetns "/etc/netns/$ns"
	cp "$DIR/ns_hosts" "/etc/netns/$ns/hosts"
	ip link add "$veth" type veth peer name eth0 netns "$ns"
	own veth "$veth"
	echo 1 >"/proc/sys/net/ipv6/conf/$veth/disable_ipv6"
	ip link set "$veth" master "$BR" up
	nsenter --net="/run/netns/$ns" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6'
	ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
}

start_sshd() { # start_sshd I: sshd -D in the background; $! is sshd itself
	local i=$1 ns
	ns=$(ns_name "$i")
	rm -f "$DIR/sshd$i.pid"
	# ip netns exec, setsid (the job is no group leader), unshare (without
	# --fork) and sh all exec, so the PID of this job is the PID of sshd; the
	# PidFile confirms it below. Its own session keeps the caller's signals
	# (a ^C, a kill of the caller's process group) off the bed.
	ip netns exec "$ns" setsid unshare --uts sh -c 'hostname "$1" && exec "$2" -D -f "$3/sshd_config" \
		-o ListenAddress="$4" -o PidFile="$3/sshd$5.pid" -E "$3/sshd$5.log"' \
		sh "$(host_name "$i")" "$SSHD" "$DIR" "$(addr_of "$i")" "$i" \
		</dev/null >>"$DIR/sshd$i.out" 2>&1 9>&- &
	echo "$i $!" >>"$DIR/pids"
}

wait_ready() { # every sshd has written its PidFile and answers with a banner
	local i pid addr banner deadline limit=${NETBED_UP_TIMEOUT:-$((K > 80 ? K / 4 : 20))}
	deadline=$((SECONDS + limit))
	for ((i = 1; i <= K; i++)); do
		pid=$(awk -v i="$i" '$1 == i { p = $2 } END { print p }' "$DIR/pids")
		addr=$(addr_of "$i")
		while :; do
			if ! alive "$pid"; then
				echo "netbed: sshd of $(host_name "$i") ($addr) exited; $DIR/sshd$i.log and .out say:" >&2
				cat "$DIR/sshd$i.log" "$DIR/sshd$i.out" 2>/dev/null | tail -5 >&2
				exit 1
			fi
			if [ -s "$DIR/sshd$i.pid" ]; then
				banner=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/22" && head -c 7 <&3' sh "$addr" 2>/dev/null || true)
				[ "$banner" = SSH-2.0 ] && break
			fi
			[ $SECONDS -lt "$deadline" ] || die "host $(host_name "$i") ($addr): sshd did not come up in ${limit}s (see $DIR/sshd$i.log)"
			sleep 0.05
		done
		# The PidFile must name the process we started, and it must be sshd.
		[ "$(cat "$DIR/sshd$i.pid")" = "$pid" ] ||
			die "host $(host_name "$i"): sshd PidFile says $(cat "$DIR/sshd$i.pid"), started $pid"
		[ "$(readlink "/proc/$pid/exe")" = "$SSHD" ] || die "host $(host_name "$i"): PID $pid is not sshd"
	done
}

add_etc_hosts() {
	[ "${NETBED_ETC_HOSTS:-0}" = 1 ] || return 0
	exec 9>"$LOCK"
	flock 9
	local tmp
	tmp=$(mktemp)
	{ cat /etc/hosts; echo "# netbed begin $DIR"; cat "$DIR/hosts"; echo "# netbed end $DIR"; } >"$tmp"
	cat "$tmp" >/etc/hosts # in place: /etc/hosts may be a bind mount
	rm -f "$tmp"
	own etchosts "$DIR"
	exec 9>&-
}

# claim: refuse, before making anything, when a name is taken (`down` must
# only ever remove what this bed made); then file the bed under /run.
claim() {
	local i
	ip link show "$BR" >/dev/null 2>&1 && die "bridge $BR already exists (another bed with prefix $PREFIX?)"
	for ((i = 1; i <= K; i++)); do
		[ -e "/run/netns/$(ns_name "$i")" ] && die "namespace $(ns_name "$i") already exists"
		ip link show "$(veth_name "$i")" >/dev/null 2>&1 && die "interface $(veth_name "$i") already exists"
	done
	mkdir -p "$REG"
	echo "$DIR" >"$REG/$PREFIX.dir"
	: >"$REG/$PREFIX.owned"
}

cmd_up() {
	[ $# -ge 2 ] && [ $# -le 3 ] || usage
	K=$2
	[[ $K =~ ^[0-9]+$ ]] && [ "$K" -ge 1 ] && [ "$K" -le 253 ] || die "K must be 1..253 (one /24, .254 is the bridge)"
	set_names "${3:-cb}"
	[ "$(id -u)" = 0 ] || die "must run as root"
	mkdir -p "$1"
	DIR=$(cd "$1" && pwd)
	chmod 700 "$DIR"
	if [ -s "$DIR/owned" ]; then
		echo "netbed: $DIR holds an earlier bed: taking it down first" >&2
		(load_env "$DIR" && do_down)
	fi
	reap_one "$PREFIX" # a bed of this prefix whose DIR is gone
	mkdir -p /run/sshd /run/netbed
	rm -f "$DIR/pids" "$DIR"/sshd*.log "$DIR"/sshd*.out "$DIR"/sshd*.pid
	printf 'PREFIX=%s\nK=%s\n' "$PREFIX" "$K" >"$DIR/netbed.env"
	exec 9>"$LOCK"
	flock 9
	claim
	trap 'rc=$?; if [ $rc -ne 0 ] && [ "${NETBED_KEEP_ON_FAIL:-0}" != 1 ]; then
		echo "netbed: up failed, tearing down what it made" >&2; exec 9>&-; do_down; fi' EXIT
	trap 'exit 130' INT TERM HUP
	make_bridge
	exec 9>&-
	make_keys_and_files
	local i
	for ((i = 1; i <= K; i++)); do make_host "$i"; done
	add_etc_hosts
	for ((i = 1; i <= K; i++)); do start_sshd "$i"; done
	wait_ready
	echo "netbed: $K hosts up: $(addr_of 1)..$(addr_of "$K") ($(host_name 1)..$(host_name "$K")) on $BR, $BASE.$NET.0/24, in $DIR"
}

# ---- down ----------------------------------------------------------------

OWNED_FILE= # the record `down` works from: DIR/owned, or its copy for `reap`
owned() { awk -v t="$1" '$1 == t { print $2 }' "${OWNED_FILE:-$DIR/owned}" 2>/dev/null; }

# ours PID: a recorded PID is acted on only while the process is in one of
# this bed's namespaces, or is an sshd started with this bed's config (its
# namespace may be gone already): a guard against PIDs reused since.
ours() {
	local pid=$1 ns
	for ns in $OWNED_NS; do
		[[ /proc/$pid/ns/net -ef /run/netns/$ns ]] && return 0
	done
	[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$SSHD" ] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-f $DIR/sshd_config"
}

bed_pids() { # the sshds we started, then every process left in our namespaces
	local p ns
	{
		{ awk '{ print $2 }' "$DIR/pids"; cat "$DIR"/sshd*.pid; } 2>/dev/null | sort -un |
			while read -r p; do
				if [[ $p =~ ^[0-9]+$ ]] && alive "$p" && ours "$p"; then echo "$p"; fi
			done
		for ns in $OWNED_NS; do # in our namespace: ours by definition
			if [ -e "/run/netns/$ns" ]; then ip netns pids "$ns" 2>/dev/null; fi
		done
	} | sort -un
	return 0
}

# alive PID: running, a zombie counts as gone (whoever reaps orphans here may
# take a while, and a zombie holds no namespace, socket or port).
alive() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

kill_all() {
	local sig pids t p
	for sig in TERM KILL; do
		pids=$(bed_pids)
		[ -n "$pids" ] || return 0
		for p in $pids; do kill -s "$sig" "$p" 2>/dev/null || true; done
		for ((t = 0; t < 50; t++)); do # up to 5 s for them to go
			pids=$(for p in $pids; do if alive "$p"; then echo "$p"; fi; done)
			[ -n "$pids" ] || return 0
			sleep 0.1
		done
	done
	echo "netbed: processes still alive after SIGKILL: $pids" >&2
}

do_down() { # best effort throughout: a failed step must not stop the rest
	local x tmp
	set +e
	[ -f "${OWNED_FILE:-$DIR/owned}" ] || [ -f "$DIR/pids" ] || return 0
	OWNED_NS=$(owned netns)
	kill_all
	for x in $OWNED_NS; do quiet ip netns del "$x"; done
	for x in $(owned veth); do # gone with its peer, normally
		if ip link show "$x" >/dev/null 2>&1; then quiet ip link del "$x"; fi
	done
	for x in $(owned bridge); do
		if ip link show "$x" >/dev/null 2>&1; then quiet ip link del "$x"; fi
	done
	for x in $(owned etcnetns); do
		case $x in /etc/netns/?*) rm -rf -- "$x" ;; esac
	done
	rmdir /etc/netns 2>/dev/null || true
	if [ -n "$(owned neigh)" ]; then
		(
			flock 9
			for x in $(owned neigh); do
				case $x in "$NEIGH"/*.need) rm -f -- "$x" ;; esac
			done
			neigh_apply
		) 9>"$LOCK"
	fi
	if [ -n "$(owned etchosts)" ]; then
		tmp=$(mktemp)
		(
			flock 9
			awk -v b="# netbed begin $DIR" -v e="# netbed end $DIR" \
				'$0 == b { skip = 1; next } $0 == e { skip = 0; next } !skip' /etc/hosts >"$tmp" &&
				cat "$tmp" >/etc/hosts
		) 9>"$LOCK"
		rm -f "$tmp"
	fi
	# A namespace whose last user is gone is freed by the kernel shortly after.
	mv -f "$DIR/owned" "$DIR/owned.down" 2>/dev/null || true
	mv -f "$DIR/pids" "$DIR/pids.down" 2>/dev/null || true
	if [ "$(cat "$REG/$PREFIX.dir" 2>/dev/null)" = "$DIR" ]; then
		rm -f "$REG/$PREFIX.dir" "$REG/$PREFIX.owned"
	fi
	rmdir "$REG" /run/netbed 2>/dev/null
	return 0
}

# reap_one PREFIX: take down the bed filed under PREFIX if its DIR no longer
# holds it (the DIR was deleted, say with the build tree of a killed run).
reap_one() {
	local d
	d=$(cat "$REG/$1.dir" 2>/dev/null) || return 0
	[ -f "$d/owned" ] && return 0
	echo "netbed: reaping bed $1, left by $d" >&2
	(DIR=$d OWNED_FILE=$REG/$1.owned && set_names "$1" && do_down)
	rm -f "$REG/$1.dir" "$REG/$1.owned"
}

cmd_reap() {
	[ $# -eq 0 ] || usage
	local f
	for f in "$REG"/*.dir; do
		[ -f "$f" ] || continue
		f=${f##*/}
		reap_one "${f%.dir}"
	done
	rmdir "$REG" /run/netbed 2>/dev/null || true
}

cmd_down() {
	[ $# -eq 1 ] || usage
	load_env "$1" || { echo "netbed: no bed in $1, nothing to do"; return 0; }
	do_down
	echo "netbed: down: $DIR"
}

# ---- exec, run, check ----------------------------------------------------

cmd_exec() {
	[ $# -ge 3 ] || usage
	load_env "$1" || die "no bed in $1"
	local i=$2
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] && [ "$i" -le "$K" ] || die "host must be 1..$K"
	shift 2
	# ip netns exec binds /etc/netns/NS/hosts over /etc/hosts and mounts this
	# namespace's /sys, as for the sshd; unshare gives the hostname.
	exec ip netns exec "$(ns_name "$i")" unshare --uts -- \
		sh -c 'hostname "$0" && exec "$@"' "$(host_name "$i")" "$@"
}

cmd_run() {
	[ $# -ge 2 ] || usage
	load_env "$1" || die "no bed in $1"
	shift
	exec unshare --mount --propagation private -- \
		sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$DIR/etc_hosts" "$@"
}

check_one() { # check_one I ERRFILE: prints "ok ..." or "FAIL ..."
	local i=$1 err=$2 addr want got rc=0
	addr=$(addr_of "$i") want=$(host_name "$i")
	# stdout only: the remote shell may print on stderr (root's ~/.bashrc runs)
	got=$(timeout 30 ssh -F /dev/null -i "$DIR/id_ed25519" -o IdentitiesOnly=yes \
		-o UserKnownHostsFile="$DIR/known_hosts" -o GlobalKnownHostsFile=/dev/null \
		-o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
		"root@$addr" hostname </dev/null 2>"$err") || rc=$?
	if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
		echo "ok   $want $addr"
	else
		echo "FAIL $want $addr: exit $rc, printed '$(echo "$got" | paste -sd' ')': $(paste -sd' ' "$err")"
	fi
}

cmd_check() {
	[ $# -eq 1 ] || usage
	load_env "$1" || die "no bed in $1"
	local i jobs=${NETBED_JOBS:-16} out fails
	out=$(mktemp -d)
	for ((i = 1; i <= K; i++)); do
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
		check_one "$i" "$out/$i.err" >"$out/$i" &
	done
	wait
	for ((i = 1; i <= K; i++)); do cat "$out/$i"; done >"$out/all"
	cat "$out/all"
	fails=$(grep -c '^FAIL' "$out/all" || true)
	rm -rf "$out"
	echo "check: $((K - fails)) of $K hosts ok"
	[ "$fails" -eq 0 ]
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
up) cmd_up "$@" ;;
down) cmd_down "$@" ;;
exec) cmd_exec "$@" ;;
run) cmd_run "$@" ;;
check) cmd_check "$@" ;;
reap) cmd_reap "$@" ;;
*) usage ;;
esac
