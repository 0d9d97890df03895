#!/bin/bash
# collcheck --prometheus FILE: the findings of a fixture host for
# node_exporter's textfile collector (promtool finds the file clean), the file
# renamed into place with no temporary left, written with --json too, a link
# at the old guessable temporary name no obstacle, a run with no report
# writing success 0, and a directory that cannot take it said in one line
# before the check runs.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"
mkdir -p "$TMP/tf"
fx() { COLL_FS_ROOT=$FIX "$BIN/collcheck" "$@"; }

(ulimit -l 1024; NCCL_IB_HCA=mlx5_1 fx env --prometheus "$TMP/tf/coll.prom") >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "fixture: problems found"
check "no error output" test ! -s "$TMP/e"
check "the file is there" test -s "$TMP/tf/coll.prom"
check "no temporary file left" test "$(ls -A "$TMP/tf")" = coll.prom
check "not a success" grep -qx 'coll_check_success{mode="env"} 0' "$TMP/tf/coll.prom"
check "the DOWN port, an error of fixhost" grep -qx 'coll_check_finding{mode="env",host="fixhost",check="rdma.mlx5_1.1.state",severity="error"} 1' "$TMP/tf/coll.prom"
check "the errors counted" grep -qx 'coll_check_findings{mode="env",severity="error"} 1' "$TMP/tf/coll.prom"
check "when it ran" grep -q '^coll_check_last_run_timestamp_seconds{mode="env"} 1[0-9]*$' "$TMP/tf/coll.prom"
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/tf/coll.prom" >"$TMP/pt" 2>&1
	expect_code 0 $? "promtool check metrics"
	check "... with nothing to say" test ! -s "$TMP/pt"
	cat "$TMP/pt"
else
	echo "# promtool not installed (tools/deps.sh installs it): not checked"
fi

# This machine, as JSON: the file is written beside it, and says success.
collcheck env --json --prometheus "$TMP/tf/coll.prom" >"$TMP/j" 2>"$TMP/e"
expect_code 0 $? "env on this machine, --json"
check "--json still on stdout" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/j"
check "success now" grep -qx 'coll_check_success{mode="env"} 1' "$TMP/tf/coll.prom"
check "no temporary file left" test "$(ls -A "$TMP/tf")" = coll.prom

# Bad places: one line, exit 2, before the check.
collcheck env --prometheus "$TMP/nodir/coll.prom" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a directory that is not there"
check "... named in one line" sh -c "[ \$(wc -l <'$TMP/e') = 1 ] && grep -q \"^collcheck: --prometheus '.*/nodir/coll.prom': cannot write in directory '.*/nodir': No such file or directory\" '$TMP/e'"
check "... before the check (no report)" test ! -s "$TMP/o"
collcheck env --prometheus "$TMP/tf" >"$TMP/o" 2>"$TMP/e"
expect_code 2 $? "a directory for FILE"
check "... named" grep -q "is a directory: name the file" "$TMP/e"
# A link planted at the old, guessable temporary name (exec keeps the pid,
# which named it) no longer blocks the write: the temporary's name is random,
# the link is neither followed nor taken, and no temporary is left.
echo keep >"$TMP/victim"
bash -c 'ln -s "$3" "$2.$$.tmp" && exec "$1" env --prometheus "$2"' _ "$BIN/collcheck" \
	"$TMP/tf/coll.prom" "$TMP/victim" >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a link at FILE.<pid>.tmp"
check "... no error" test ! -s "$TMP/e"
check "... the link's target untouched" test "$(cat "$TMP/victim")" = keep
check "... the file written" grep -qx 'coll_check_success{mode="env"} 1' "$TMP/tf/coll.prom"
check "... no temporary left beside the link" \
	test "$(ls -A "$TMP/tf" | grep -v '^coll\.prom\.[0-9]*\.tmp$')" = coll.prom
rm -f "$TMP"/tf/coll.prom.*.tmp
cat "$TMP/e"

# A run that ends with no report (its one host cannot be reached) still
# rewrites FILE: the last run's success does not stay exported.
check "success before" grep -qx 'coll_check_success{mode="env"} 1' "$TMP/tf/coll.prom"
collcheck env -H nosuchhost.invalid -T 10 --prometheus "$TMP/tf/coll.prom" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a host that cannot be reached"
check "... said" grep -q 'no host could be checked' "$TMP/e"
check "... success 0 now" grep -qx 'coll_check_success{mode="env"} 0' "$TMP/tf/coll.prom"
check "... not completed, and why" grep -qx 'coll_check_completed{mode="env",reason="unreachable"} 0' "$TMP/tf/coll.prom"
check "... when it ran" grep -q '^coll_check_last_run_timestamp_seconds{mode="env"} 1[0-9]*$' "$TMP/tf/coll.prom"
check "... no temporary file left" test "$(ls -A "$TMP/tf")" = coll.prom
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/tf/coll.prom" >"$TMP/pt" 2>&1
	expect_code 0 $? "promtool check metrics (no report)"
	check "... with nothing to say" test ! -s "$TMP/pt"
	cat "$TMP/pt"
fi
finish
