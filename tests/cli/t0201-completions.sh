#!/bin/bash
# The committed completions are what the option tables generate, and parse.
. "$(dirname "$0")/lib.sh"
SRC=${COLL_SRC:?}
for sh in bash zsh fish; do
	case $sh in bash) f=collrun.bash ;; zsh) f=_coll ;; fish) f=coll.fish ;; esac
	"$BIN/coll-completions" $sh >"$TMP/$f"
	check "$sh completions are up to date (run 'make completions')" cmp -s "$TMP/$f" "$SRC/completions/$f"
done
check "bash completions parse" bash -n "$SRC/completions/collrun.bash"
check "bash completion offers -d values" bash -c ". '$SRC/completions/collrun.bash'; COMP_WORDS=(collcheck allreduce -d bf); COMP_CWORD=3; _coll_collcheck; [ \"\${COMPREPLY[*]}\" = bfloat16 ]"
check "bash completion offers collcheck's subcommands" bash -c ". '$SRC/completions/collrun.bash'; COMP_WORDS=(collcheck all); COMP_CWORD=1; _coll_collcheck; [ \"\${COMPREPLY[*]}\" = allreduce ]"
if command -v zsh >/dev/null; then check "zsh completions parse" zsh -n "$SRC/completions/_coll"; fi
if command -v fish >/dev/null; then check "fish completions parse" fish -n "$SRC/completions/coll.fish"; fi
# One tool's files, as installed under its name: that tool's completions only.
"$BIN/coll-completions" bash collcheck >"$TMP/collcheck.bash"
check "collcheck's bash file parses" bash -n "$TMP/collcheck.bash"
check "collcheck's bash file leaves collrun alone" bash -c "! grep -q _coll_collrun '$TMP/collcheck.bash'"
check "a tool's file is refused for zsh" bash -c "! '$BIN/coll-completions' zsh collrun 2>/dev/null"
# Every long option in --help appears in the completions.
for o in $("$BIN/collrun" --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$o" "$SRC/completions/collrun.bash" || not_ok "collrun $o missing from completions"
done
finish
