# Helpers for the multi-host tests: the CLI helpers plus the bed's files.
. "$(dirname "$0")/../cli/lib.sh"
BED=${NETBED_DIR:?}
if [ -f "$BED/unavailable" ] || [ ! -f "$BED/ssh_config" ]; then
	echo "skipped: no network-namespace test bed (needs root)"
	exit 77
fi
CFG=$BED/ssh_config
NET=$(sed -n 's/^\tHostName \(10\.213\.[0-9]*\)\.1$/\1/p' "$CFG")
HOSTS="node[01-04]"
# A marker only this test's processes carry, to look for leftovers on every host.
MARK=coll-test-$$-$RANDOM
leftovers() { pgrep -f "$MARK" | grep -v "^$$\$" | wc -l; }
