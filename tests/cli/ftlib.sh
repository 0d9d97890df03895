# Shared by the fault-tolerance tests (t011x-ft-*): 8 ranks of tests/ft/ft_rank
# under collrun, each scenario repeated COLL_FT_REPS times (2 by default; the
# soak label runs 50), every result checked by the ranks themselves.
. "$(dirname "$0")/lib.sh"
FT=${COLL_BUILD:?set COLL_BUILD to the build directory}/tests/ft_rank
REPS=${COLL_FT_REPS:-2}
# Short keep-alives, so a silent peer is found in about a second.
export COLL_KEEPALIVE_MS=100 COLL_KEEPALIVE_LIMIT=10 COLL_TIMEOUT=60
ft() { # ft OUT ARGS...: run collrun with ARGS, stdout+stderr to OUT; the exit code
	local out=$1; shift
	FT_OUT=$out FT_RUN=$((FT_RUN + 1))
	timeout 120 "$BIN/collrun" --label --grace 5 "$@" >"$out" 2>&1
}
# A failed check shows the output of the run it checked (once), not a later run's.
FT_RUN=0 FT_SHOWN=0
not_ok() {
	fails=$((fails + 1))
	echo "not ok - $*"
	if [ -n "${FT_OUT:-}" ] && [ "$FT_SHOWN" != "$FT_RUN" ] && [ -f "$FT_OUT" ]; then
		FT_SHOWN=$FT_RUN
		sed 's/^/# /' "$FT_OUT"
	fi
}
# count OUT REGEX: lines of OUT that match
count() { grep -c -E -- "$2" "$1"; }
