#!/bin/bash
# A private one-node Slurm cluster for the tests: munged with its own key and
# socket, slurmctld and slurmd on free loopback ports, all state under DIR,
# every daemon killed by its own PID. Without root or the packages, `up`
# marks DIR unavailable and the tests skip.
#
#   slurmbed.sh up DIR      start; DIR/slurm.conf is the SLURM_CONF to use
#   slurmbed.sh down DIR    stop (idempotent)
set -u
cmd=${1:-}; DIR=${2:-}
[ -n "$DIR" ] || { echo "usage: slurmbed.sh up|down DIR" >&2; exit 2; }

down() {
	for p in slurmd slurmctld munged; do
		pid=$(cat "$DIR/$p.pid" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
		rm -f "$DIR/$p.pid"
	done
}

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

up() {
	rm -rf "$DIR"; mkdir -p "$DIR/state" "$DIR/spool"
	if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
		echo "Slurm tests need root, slurmctld, slurmd and munge: skipped"
		touch "$DIR/unavailable"; exit 0
	fi
	host=$(hostname -s)
	dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
	chmod 600 "$DIR/munge.key"
	/usr/sbin/munged --force --socket="$DIR/munge.sock" --key-file="$DIR/munge.key" \
		--pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" --seed-file="$DIR/munge.seed" || exit 1
	cat >"$DIR/slurm.conf" <<EOC
ClusterName=colltest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=colltest Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOC
	export SLURM_CONF=$DIR/slurm.conf
	/usr/sbin/slurmctld -f "$SLURM_CONF" || { down; exit 1; }
	/usr/sbin/slurmd -f "$SLURM_CONF" || { down; exit 1; }
	for _ in $(seq 150); do
		sinfo -h -o %t 2>/dev/null | grep -q idle && { echo "slurm up: node $host in $DIR"; exit 0; }
		sleep 0.2
	done
	echo "slurm did not come up:"; tail -5 "$DIR"/*.log; down; exit 1
}

case $cmd in
up) up ;;
down) [ -f "$DIR/unavailable" ] || down ;;
*) echo "usage: slurmbed.sh up|down DIR" >&2; exit 2 ;;
esac
