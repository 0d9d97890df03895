# shellcheck shell=bash
# Shared by the tests of colltop's screen in a real terminal (t0119, t0863):
# tests/cli/lib.sh, then a tmux server of the test's own (skip, 77, without
# tmux), its window "top" read as text (capture-pane).
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "skipped: no tmux"; exit 77; }
SOCK=colltop-test-$$
tm() { tmux -L "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; cleanup' EXIT
screen() { tm capture-pane -p -t top; }
wait_screen() { # wait_screen REGEX [SECONDS]: until the screen shows it
	for _ in $(seq $((${2:-10} * 10))); do screen | grep -qE -- "$1" && return 0; sleep 0.1; done
	screen >"$TMP/last"
	return 1
}
