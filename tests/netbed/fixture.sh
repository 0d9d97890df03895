#!/bin/bash
# ctest fixture around netbed.sh: without root (no namespaces) the bed is
# marked unavailable instead of failing, and the tests that need it skip.
set -u
here=$(dirname "$0")
case $1 in
up)
	rm -rf "$2"; mkdir -p "$2"
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! [ -x /usr/sbin/sshd ]; then
		echo "netbed needs root, iproute2 and openssh-server: multi-host tests will be skipped"
		touch "$2/unavailable"
		exit 0
	fi
	exec bash "$here/netbed.sh" up "$2" "$3" "$4"
	;;
down)
	[ -f "$2/unavailable" ] && exit 0
	# Ranks on the bed's hosts write their status pages to the one shared /dev/shm
	# (COLL_* is not forwarded over SSH), and a killed rank leaves its page: remove
	# those made since the bed came up by one of its hosts, whatever test left them.
	if [ -f "$2/hosts" ]; then
		names=$(awk '{print $2}' "$2/hosts" | paste -sd'|')
		find /dev/shm -maxdepth 1 -type f -name 'coll.*' -newer "$2/hosts" 2>/dev/null |
			while read -r f; do
				grep -qaE "(^|[^a-z0-9])($names)([^a-z0-9]|\$)" "$f" && rm -f "$f"
			done
	fi
	exec bash "$here/netbed.sh" down "$2"
	;;
esac
echo "usage: fixture.sh up DIR K PREFIX | down DIR" >&2
exit 2
