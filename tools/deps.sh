#!/bin/bash
# Install what coll needs to build and test, from Debian's packages.
set -euo pipefail
# openmpi-bin: a real mpirun job for collstack's launcher test (t0701).
# man-db renders and finds the man pages; dpkg-dev (dpkg-shlibdeps) and file
# let cpack -G DEB compute the package's dependencies; zsh and fish check the
# completions for real. prometheus (and its promtool) scrapes colltop --listen
# and checks the metrics colltop and collcheck write.
pkgs="build-essential cmake pkg-config clang libssl-dev libjansson-dev libcmocka-dev libssh2-1-dev libibverbs-dev libdw-dev libncurses-dev
      elfutils gdb graphviz
      openssh-server openssh-client slurmctld slurmd slurm-client munge
      openmpi-bin python3 iproute2 procps man-db dpkg-dev file zsh fish tmux ncurses-term prometheus"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
	sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	# Packages must not start their daemons (sshd, munge, slurm): the tests start
	# their own, privately. policy-rc.d is how Debian lets an installer say so.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null
		$sudo chmod 755 $policy
	fi
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	$sudo apt-get install -y -qq $missing >/dev/null
	[ -z "$policy" ] || $sudo rm -f "$policy"
fi
