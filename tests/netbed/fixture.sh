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
	exec bash "$here/netbed.sh" down "$2"
	;;
esac
echo "usage: fixture.sh up DIR K PREFIX | down DIR" >&2
exit 2
