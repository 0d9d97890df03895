#!/bin/bash
# colltop's screen takes htop's keys (issue 37, item 12), in a real terminal
# (tmux): F10 quits (exit 0), Ctrl-C quits with exit 130 on rank 0's word,
# F6 picks the sort column from a list, I inverts the sort, \ filters, -d 10
# is 1 s; at 80 columns the host table's GPU columns are cut, and Right
# scrolls them in (Left back), which the bottom line says.
. "$(dirname "$0")/tmuxlib.sh"
start() { # start NAME ARGS... : colltop in an 80x24 window
	local name=$1
	shift
	tm kill-session -t top 2>/dev/null
	rm -f "$TMP/rc"
	tm new-session -d -s top -x 80 -y 24 "env TERM=xterm-256color LANG=C.UTF-8 \
		$BIN/colltop --np 2 --no-gpu $* 2>$TMP/err.$name; echo \$? >$TMP/rc; sleep 60"
}
exited() { for _ in $(seq 100); do [ -s "$TMP/rc" ] && return 0; sleep 0.1; done; return 1; }

start main -d 10
check "-d 10: every 1 s, as htop" wait_screen '^colltop  2 ranks on 1 host  #[0-9]+  every 1 s'
check "the bottom line fits 80 columns and names F6 and the arrows" \
	wait_screen '^q quit  h help  t hosts  F6 sort  / filter  arrows scroll  c collstack'

tm send-keys -t top F6
check "F6: the sort list" wait_screen '^ Sort by'
tm send-keys -t top Down Down Down Enter
check "F6, Down x3, Enter: sorted by LAT_MS" wait_screen '^RANK +HOST +STATE +LAT_MS\^'
tm send-keys -t top I
check "I: the sort inverted" wait_screen '^RANK +HOST +STATE +LAT_MSv'

tm send-keys -t top '\' z z z Enter
check "\\: the filter" wait_screen 'filter \[zzz\]'
check "\\: no row holds zzz" sh -c "! tmux -L $SOCK capture-pane -p -t top | grep -qE '^ +[01]  [^ ]+ +ok '"
tm send-keys -t top / Escape
check "Esc clears it" wait_screen '^ +1  [^ ]+ +ok '

tm send-keys -t top t
check "t: the host table, cut on the right" wait_screen '^HOST.* +NET_RX.*>$'
check "GPU% not shown at 80 columns" sh -c "! tmux -L $SOCK capture-pane -p -t top | grep -q 'GPU%'"
gpu_in() {
	for _ in $(seq 17); do
		tm send-keys -t top Right
		wait_screen '^HOST *<.*GPU% +MEM% +POWER_W' 1 && return 0
	done
	return 1
}
check "Right: the GPU columns come in" gpu_in
for _ in $(seq 17); do tm send-keys -t top Left; done
check "Left: back to the first columns" wait_screen '^HOST.* +RANKS +STATE +NET_RX'

tm send-keys -t top h
check "h: the help" wait_screen '^ colltop keys'
screen >"$TMP/help"
check "the help names F10" grep -qE '^ +q F10 +quit' "$TMP/help"
check "the help names F6" grep -qE '^ +F6 +sort by' "$TMP/help"
check "the help names I" grep -qE '^ +I  r +invert the sort' "$TMP/help"
check "the help names \\" grep -qE '^ +\\  / +filter' "$TMP/help"
tm send-keys -t top x

tm send-keys -t top F10
check "F10: colltop exits" exited
check "F10: exit 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "F10: not by signal" sh -c "! grep -q 'got SIG' $TMP/err.main"

start intr
check "started again" wait_screen '^colltop  2 ranks on 1 host'
tm send-keys -t top C-c
check "Ctrl-C: colltop exits" exited
check "Ctrl-C: exit 130" test "$(cat "$TMP/rc" 2>/dev/null)" = 130
check "Ctrl-C: the workers stopped on rank 0's word, not by signal" sh -c "! grep -q 'got SIG' $TMP/err.intr"
check "Ctrl-C: no page left" sh -c "sleep 0.5; test \$(ls $COLL_STATUS_DIR | wc -l) -eq 0"
[ "$fails" -eq 0 ] || { cat "$TMP"/last 2>/dev/null; cat "$TMP"/err.* 2>/dev/null; }
finish
