#!/bin/bash
# colltop's screen in a real terminal (tmux, its own server): it starts and
# fills in, and every key does what the help says (t, h, < >, /, p, + -, q),
# a resize to a terminal too small says so and back again redraws, colours
# go with NO_COLOR, sparklines fall back to ASCII. Assertions are on the
# text tmux holds (capture-pane).
. "$(dirname "$0")/tmuxlib.sh"
frame() { screen | sed -n 's/^colltop  .* #\([0-9]*\)  every.*/\1/p' | head -1; }
start() { # start NAME ENV... : colltop in a 120x30 window
	local name=$1
	shift
	tm kill-session -t top 2>/dev/null
	rm -f "$TMP/rc"
	tm new-session -d -s top -x 120 -y 30 "env TERM=xterm-256color LANG=C.UTF-8 $* \
		$BIN/colltop --np 3 --no-gpu 2>$TMP/err.$name; echo \$? >$TMP/rc; sleep 60"
}
exited() { for _ in $(seq 100); do [ -s "$TMP/rc" ] && return 0; sleep 0.1; done; return 1; }

start main
check "starts: the summary counts 3 ranks on 1 host" wait_screen '^colltop  3 ranks on 1 host'
check "a row per rank, ok" wait_screen '^ +2  [^ ]+ +ok '
check "Unicode sparklines" wait_screen '[▁▂▃▄▅▆▇█]{2}'
check "keys on the bottom line" wait_screen '^q quit  h help  t hosts'
tm capture-pane -e -p -t top >"$TMP/esc"
check "colours on a colour terminal" grep -q $'\e\\[3[0-9]m\\|\e\\[38;5;' "$TMP/esc"

tm send-keys -t top t
check "t: one row per host" wait_screen '^HOST\^ +RANKS +STATE +NET_RX'
tm send-keys -t top '>'
check "> sorts by the next column" wait_screen '^HOST +RANKS\^'
tm send-keys -t top t
check "t again: ranks" wait_screen '^RANK\^ +HOST'

tm send-keys -t top h
check "h: the help" wait_screen '^ colltop keys'
check "the help names the keys" wait_screen 'c +run collstack on the stalled job'
tm send-keys -t top x
check "any key leaves the help" wait_screen '^RANK\^ +HOST'

tm send-keys -t top / z z z Enter
check "/: the filter shows on the bottom line" wait_screen 'filter \[zzz\]'
check "/: no row holds zzz" sh -c "! tmux -L $SOCK capture-pane -p -t top | grep -qE '^ +[0-2]  [^ ]+ +ok '"
tm send-keys -t top / Escape
check "Esc clears the filter" wait_screen '^ +1  [^ ]+ +ok '

tm send-keys -t top +
check "+: the workers' interval doubles" wait_screen 'every 2 s' 8
tm send-keys -t top - -
check "- -: down to 0.5 s" wait_screen 'every 0.5 s' 8

tm send-keys -t top p
check "p: PAUSED" wait_screen 'PAUSED'
f1=$(frame)
sleep 2
f2=$(frame)
check "paused: the screen stays still ($f1, $f2)" test -n "$f1" -a "$f1" = "$f2"
tm send-keys -t top p
sleep 2
f3=$(frame)
check "p again: it goes on ($f2, $f3)" test -n "$f3" -a "${f3:-0}" -gt "${f2:-0}"

tm resize-window -t top -x 50 -y 8
check "too small: said" wait_screen 'terminal too small \(50x8\): colltop needs 60x10'
tm resize-window -t top -x 120 -y 30
check "back to size: the table again" wait_screen '^RANK\^ +HOST'

tm send-keys -t top c
check "c with no stalled job: said" wait_screen 'no stalled job to run collstack on'

tm send-keys -t top q
check "q: colltop exits" exited
check "q: exit 0" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "q: the workers stopped (no page left)" sh -c "sleep 0.5; test \$(ls $COLL_STATUS_DIR | wc -l) -eq 0"
check "q: they stopped on rank 0's word, not by signal" sh -c "! grep -q 'got SIG' $TMP/err.main"

# A long interval: q still ends it on rank 0's word (it reads it after its sleep).
tm kill-session -t top 2>/dev/null
rm -f "$TMP/rc"
tm new-session -d -s top -x 140 -y 30 "env TERM=xterm LANG=C.UTF-8 $BIN/colltop --np 2 --no-gpu \
	-d 30 2>$TMP/err.slow; echo \$? >$TMP/rc; sleep 60"
check "-d 30: a frame" wait_screen '^colltop  2 ranks on 1 host' 15
tm send-keys -t top q
for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
check "-d 30: q exits 0 within an interval" test "$(cat "$TMP/rc" 2>/dev/null)" = 0
check "-d 30: not by signal" sh -c "! grep -q 'got SIG' $TMP/err.slow"

start nocolor NO_COLOR=1
check "NO_COLOR: starts" wait_screen '^ +2  [^ ]+ +ok '
tm capture-pane -e -p -t top >"$TMP/esc"
check "NO_COLOR: no colour codes" sh -c "! grep -q $'\e\\[3[0-9]m\\|\e\\[38;5;' '$TMP/esc'"
tm send-keys -t top q
exited

tm kill-session -t top 2>/dev/null
rm -f "$TMP/rc"
tm new-session -d -s top -x 120 -y 30 "env TERM=xterm LANG=C $BIN/colltop --np 2 --no-gpu \
	2>$TMP/err.ascii; echo \$? >$TMP/rc; sleep 60"
check "not UTF-8: ASCII sparklines" wait_screen '^ +1  [^ ]+ +ok .*[_.:=+*#-]{2}$'
check "not UTF-8: no block characters" sh -c "! tmux -L $SOCK capture-pane -p -t top | grep -q '[▁▂▃▄▅▆▇█]'"
tm send-keys -t top q
check "ASCII run: exit 0" sh -c "$(declare -f exited); TMP=$TMP exited && test \$(cat $TMP/rc) = 0"
[ "$fails" -eq 0 ] || { cat "$TMP"/last 2>/dev/null; cat "$TMP"/err.* 2>/dev/null; }
finish
