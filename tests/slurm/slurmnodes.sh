#!/bin/bash
# A private Slurm cluster of K nodes on one machine: a netbed of K hosts
# (tests/netbed/netbed.sh: network namespaces with their own address and
# hostname nodeNN), one slurmd in each, started there under its node name,
# and slurmctld and munged here. slurmctld listens on the bed's bridge
# address (10.213.X.254), the only address of this machine the nodes can
# reach; srun and the other clients run here and reach it there too. The
# one munged serves every node through its socket file (the namespaces share
# the file system). Each daemon runs in the foreground of a job of ours and
# is killed by its own PID; everything else left in the nodes (slurmstepd,
# tasks) goes with their namespaces. Without root or the packages, `up`
# marks DIR unavailable and the tests skip (exit 77).
#
#   slurmnodes.sh up DIR K [PREFIX]   start; DIR/slurm.conf is the SLURM_CONF to use
#   slurmnodes.sh down DIR            stop all of it, the netbed too (idempotent)
#   slurmnodes.sh kill-node DIR I     node I dies: SIGKILL to all that runs there
#                                     (slurmd, slurmstepd, tasks), its link cut
#   slurmnodes.sh revive DIR I        node I back: its link, its slurmd, idle again
#   slurmnodes.sh exec DIR I CMD...   run CMD on node I (netbed.sh exec)
#
# DIR/env says NET (the subnet 10.213.NET.0/24), BRIDGE, ADDR (the bridge's
# address), K and NODES (node[01-K]). NETBED_NET picks the subnet as for
# netbed.sh; SLURMNODES_UP_TIMEOUT (seconds, default 60) bounds the wait for
# the nodes to be idle.
set -u
here=$(cd "$(dirname "$0")" && pwd)
NETBED=$here/../netbed/netbed.sh
cmd=${1:-}
DIR=${2:-}

usage() { sed -n '14,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "slurmnodes: $*" >&2; exit 1; }
[ -n "$DIR" ] || usage

# running PID: PID is a process, not a zombie
running() {
	local st
	[ -n "$1" ] && read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# alive_as PID EXE: PID runs the program EXE (a recorded PID may be reused
# since); Debian's slurmd and slurmctld are links to slurmd-wlm, slurmctld-wlm.
alive_as() {
	[ -n "$1" ] && [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$2")" ] && running "$1"
}

# alive_or_starting PID EXE: as alive_as, or PID still on its way to EXE
# (a slurmd starts through setsid, netbed's exec, ip netns exec, unshare and
# sh, each exec'ing the next; a look in between must not read as an exit): a live
# process we started moments ago.
# The exe is read once: read twice, an exec between the reads (dash, then
# slurmd) matched neither and read as an exit (1 start in 5 failed).
alive_or_starting() {
	local exe
	exe=$(readlink "/proc/${1:-0}/exe" 2>/dev/null) || return 1
	case $exe in
	"$(readlink -f "$2")" | */setsid | */bash | */ip | */unshare | */dash | */sh) running "$1" ;;
	*) return 1 ;;
	esac
}

# stop NAME EXE: TERM, up to 5 s, then KILL the daemon whose PID is in DIR/NAME.pid
stop() {
	local pid
	pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 0
	if alive_as "$pid" "$2"; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do alive_as "$pid" "$2" || break; sleep 0.1; done
		alive_as "$pid" "$2" && kill -9 "$pid" 2>/dev/null
	fi
	rm -f "$DIR/$1.pid"
}

down() {
	local k
	[ -f "$DIR/unavailable" ] && return 0
	k=$(sed -n 's/^K=//p' "$DIR/env" 2>/dev/null)
	for ((i = 1; i <= ${k:-0}; i++)); do stop "slurmd.$i" /usr/sbin/slurmd; done
	stop slurmctld /usr/sbin/slurmctld
	stop munged /usr/sbin/munged
	# The netbed's own teardown kills what is left in the nodes (slurmstepd,
	# tasks) and removes the status pages its hosts' ranks left in /dev/shm.
	[ -d "$DIR/net" ] && bash "$here/../netbed/fixture.sh" down "$DIR/net" >/dev/null
	return 0
}

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
node_name() { printf 'node%02d' "$1"; }

# start NAME CMD...: CMD in the foreground of a job of its own session; its PID
# (setsid does not fork: a background job of a script leads no group) is filed.
start() {
	local name=$1
	shift
	setsid "$@" </dev/null >>"$DIR/$name.out" 2>&1 &
	echo $! >"$DIR/$name.pid"
}

write_conf() {
	local addr=$1 i
	cat >"$DIR/slurm.conf" <<EOC
# written by slurmnodes.sh up
ClusterName=collnodes
SlurmctldHost=$(hostname -s)($addr)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pidfile
SlurmdPidFile=$DIR/slurmd.%n.pidfile
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# A dead node is found within seconds, a cancelled step is killed soon.
SlurmdTimeout=10
KillWait=2
MessageTimeout=5
EOC
	for ((i = 1; i <= K; i++)); do
		echo "NodeName=$(node_name "$i") NodeAddr=10.213.$NET.$i CPUs=4 RealMemory=1000 State=UNKNOWN"
	done >>"$DIR/slurm.conf"
	echo "PartitionName=colltest Nodes=$NODES Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" \
		>>"$DIR/slurm.conf"
}

# start_slurmd I: slurmd of node I, in its namespace under its own name
start_slurmd() {
	local i=$1
	mkdir -p "$DIR/spool/$(node_name "$i")"
	# ip netns exec mounts the namespace's own /sys, without the cgroup file
	# systems; slurmd's cgroup plugin wants to find v1's there (a tmpfs with
	# a name=systemd hierarchy), though proctrack/linuxproc and task/none use none.
	start "slurmd.$i" bash "$NETBED" exec "$DIR/net" "$i" sh -c \
		'mount -t tmpfs -o size=64k,mode=755 collnodes /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
		mount -t cgroup -o none,name=systemd collnodes /sys/fs/cgroup/systemd && exec "$@"' sh \
		/usr/sbin/slurmd -D -N "$(node_name "$i")" -f "$SLURM_CONF"
}

wait_idle() {
	local limit=${SLURMNODES_UP_TIMEOUT:-60} deadline
	deadline=$((SECONDS + limit))
	while [ $SECONDS -lt "$deadline" ]; do
		for p in munged slurmctld $(seq -f 'slurmd.%g' 1 "$K"); do
			alive_or_starting "$(cat "$DIR/$p.pid")" "/usr/sbin/${p%%.*}" && continue
			echo "slurmnodes: $p exited; $DIR/$p.out says:" >&2
			tail -n 5 "$DIR/$p.out" >&2
			return 1
		done
		[ "$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)" -eq "$K" ] &&
			return 0
		sleep 0.2
	done
	echo "slurmnodes: the nodes were not all idle in ${limit}s:" >&2
	sinfo -N >&2
	tail -n 5 "$DIR"/*.log >&2
	return 1
}

up_failed() {
	[ "$1" -eq 0 ] && return
	echo "slurmnodes: up failed, tearing down" >&2
	down
}

up() {
	K=${3:-}
	local prefix=${4:-sn} i
	[[ $K =~ ^[0-9]+$ ]] && [ "$K" -ge 1 ] && [ "$K" -le 99 ] || die "K must be 1..99"
	[ -f "$DIR/env" ] && down	# an earlier bed left standing (a killed run)
	rm -rf "$DIR"
	mkdir -p "$DIR/state" "$DIR/spool"
	DIR=$(cd "$DIR" && pwd)
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! [ -x /usr/sbin/sshd ] ||
		! [ -x /usr/sbin/slurmctld ] || ! [ -x /usr/sbin/slurmd ] || ! [ -x /usr/sbin/munged ] ||
		! command -v srun >/dev/null; then
		echo "the Slurm nodes bed needs root, iproute2, openssh-server, slurmctld, slurmd," \
			"slurm-client and munge: its tests will be skipped"
		touch "$DIR/unavailable"
		exit 0
	fi
	trap 'up_failed $?' EXIT
	trap 'exit 130' INT TERM HUP
	echo "K=$K" >"$DIR/env"
	bash "$here/../netbed/fixture.sh" up "$DIR/net" "$K" "$prefix" >"$DIR/netbed.out" 2>&1 ||
		{ cat "$DIR/netbed.out" >&2; die "netbed up failed"; }
	. "$DIR/net/netbed.env"
	NODES=node[01-$(printf %02d "$K")]
	printf 'NET=%s\nBRIDGE=%s\nADDR=%s\nNODES=%s\n' "$NET" "$(ip -4 -o addr show |
		awk -v a="10.213.$NET.254/24" '$4 == a { print $2 }')" "10.213.$NET.254" "$NODES" >>"$DIR/env"
	dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
	chmod 600 "$DIR/munge.key"
	start munged /usr/sbin/munged -F --force --socket="$DIR/munge.sock" --key-file="$DIR/munge.key" \
		--pid-file="$DIR/munged.pidfile" --log-file="$DIR/munged.log" --seed-file="$DIR/munge.seed"
	for _ in $(seq 100); do [ -S "$DIR/munge.sock" ] && break; sleep 0.05; done
	[ -S "$DIR/munge.sock" ] || die "munged did not start: $(tail -3 "$DIR/munged.log" "$DIR/munged.out" 2>&1)"
	write_conf "10.213.$NET.254"
	export SLURM_CONF=$DIR/slurm.conf
	start slurmctld /usr/sbin/slurmctld -D -i -f "$SLURM_CONF"
	for ((i = 1; i <= K; i++)); do start_slurmd "$i"; done
	wait_idle || exit 1
	echo "slurmnodes: $K nodes up ($NODES, 10.213.$NET.1-$K), slurmctld on 10.213.$NET.254, in $DIR"
}

# Node I dies: its link goes first (no FIN or RST reaches anyone, as when a
# machine loses power), then every process in it, slurmd included.
kill_node() {
	local i=$1 ns pids
	. "$DIR/net/netbed.env" || die "no bed in $DIR"
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] && [ "$i" -le "$K" ] || die "node must be 1..$K"
	ns=${PREFIX}h$i
	ip -n "$ns" link set eth0 down
	# What is starting in it as we kill may fork once more: until it is empty.
	for _ in $(seq 50); do
		pids=$(ip netns pids "$ns")
		[ -z "$pids" ] && break
		kill -9 $pids 2>/dev/null
		sleep 0.1
	done
	rm -f "$DIR/slurmd.$i.pid"
	return 0
}

# Node I comes back: DOWN first (so Slurm lets go of the jobs it had, as
# after a reboot), its link, then its slurmd (ReturnToService=2 makes a DOWN
# node usable again once it registers).
revive_node() {
	local i=$1
	. "$DIR/net/netbed.env" || die "no bed in $DIR"
	. "$DIR/env"
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] && [ "$i" -le "$K" ] || die "node must be 1..$K"
	export SLURM_CONF=$DIR/slurm.conf
	alive_as "$(cat "$DIR/slurmd.$i.pid" 2>/dev/null)" /usr/sbin/slurmd ||
		scontrol update nodename="$(node_name "$i")" state=down reason="slurmnodes.sh revive"
	ip -n "${PREFIX}h$i" link set eth0 up
	alive_or_starting "$(cat "$DIR/slurmd.$i.pid" 2>/dev/null)" /usr/sbin/slurmd || start_slurmd "$i"
	wait_idle
}

case $cmd in
up) up "$@" ;;
down) down ;;
kill-node) [ $# -eq 3 ] || usage; kill_node "$3" ;;
revive) [ $# -eq 3 ] || usage; revive_node "$3" ;;
exec) shift 2; exec bash "$NETBED" exec "$DIR/net" "$@" ;;
*) usage ;;
esac
