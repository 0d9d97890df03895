#!/bin/bash
# cpack -G DEB makes a package that dpkg installs (the tools run, man finds the
# page) and removes without leaving a file behind. It installs into the
# system, so it runs as root only, and removes the package however it ends.
. "$(dirname "$0")/lib.sh"
BUILD=${COLL_BUILD:-$BIN/..}
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "installing a package needs root"
for c in dpkg dpkg-deb cpack man; do
	command -v $c >/dev/null || skip "no $c here (tools/deps.sh installs it)"
done
# Someone's own coll stays as it is.
dpkg-query -W -f='${Status}' coll 2>/dev/null | grep -q 'install ok installed' &&
	skip "a package named coll is installed already"

cpack -G DEB -B "$TMP/pkg" --config "$BUILD/CPackConfig.cmake" >"$TMP/cpack.log" 2>&1
expect_code 0 $? "cpack -G DEB"
deb=$(ls "$TMP"/pkg/coll_*.deb 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	cat "$TMP/cpack.log"
	not_ok "cpack made coll_*.deb"
	finish
	exit
fi
check "the package is named coll" test "$(dpkg-deb -f "$deb" Package)" = coll
check "it says what it depends on" test -n "$(dpkg-deb -f "$deb" Depends)"

# Purged, not only removed: a package with a shared library keeps its
# record (config-files) after dpkg -r, until purged.
trap 'dpkg -P coll >/dev/null 2>&1; cleanup' EXIT
dpkg -i "$deb" >"$TMP/dpkg.log" 2>&1
r=$?
expect_code 0 $r "dpkg -i"
[ $r -eq 0 ] || cat "$TMP/dpkg.log"
dpkg -L coll >"$TMP/list" 2>/dev/null
check "/usr/bin/collrun --version runs" /usr/bin/collrun --version
check "/usr/bin/collcheck --version runs" /usr/bin/collcheck --version
# Minimal images tell dpkg to drop man pages: then there is nothing to find.
if grep -qs '^path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg.d/*; then
	echo "# dpkg excludes /usr/share/man here (/etc/dpkg/dpkg.cfg.d): man -w not checked"
else
	check "man -w collrun finds its page" test "$(man -w collrun 2>/dev/null)" = \
		/usr/share/man/man1/collrun.1
	check "man -w 7 coll finds its page" test "$(man -w 7 coll 2>/dev/null)" = \
		/usr/share/man/man7/coll.7
fi
check "pkg-config knows coll" pkg-config --exists coll
check "the headers are in /usr/include/coll" test -f /usr/include/coll/coll.h

dpkg -P coll >"$TMP/dpkg.log" 2>&1
r=$?
expect_code 0 $r "dpkg -P coll"
[ $r -eq 0 ] || cat "$TMP/dpkg.log"
check "dpkg no longer knows coll" bash -c "! dpkg -s coll >/dev/null 2>&1"
check "the package listed its files" test -s "$TMP/list"
left=0
while read -r f; do
	# Directories are shared with other packages; the files must all be gone.
	if [ -e "$f" ] && [ ! -d "$f" ]; then
		not_ok "$f is left after dpkg -P"
		left=1
	fi
done <"$TMP/list"
[ $left -eq 0 ] && ok "every file of the package is gone"
check "/usr/include/coll is gone" test ! -e /usr/include/coll
finish
