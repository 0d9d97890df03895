#!/bin/bash
# The committed completions are what the option tables generate, and each
# shell really completes with them: bash through its completion functions,
# zsh through compinit in an interactive zsh on a pseudo-terminal, fish
# through `complete -C`. A missing shell fails the test (tools/deps.sh
# installs zsh and fish); COLL_ALLOW_SKIP=1 lets it pass without them.
. "$(dirname "$0")/lib.sh"
SRC=${COLL_SRC:?}
COMP=$SRC/completions
for sh in bash zsh fish; do
	case $sh in bash) f=collrun.bash ;; zsh) f=_coll ;; fish) f=coll.fish ;; esac
	"$BIN/coll-completions" $sh >"$TMP/$f"
	expect_code 0 $? "coll-completions $sh"
	check "$sh completions are up to date (run 'make completions')" cmp "$TMP/$f" "$COMP/$f"
done

# have SHELL: the shell is here, or it is a failure unless COLL_ALLOW_SKIP is set.
have() {
	command -v "$1" >/dev/null && return 0
	if [ -n "${COLL_ALLOW_SKIP:-}" ]; then echo "skip - no $1 (COLL_ALLOW_SKIP)"; else not_ok "$1 is not installed (tools/deps.sh)"; fi
	return 1
}

# bash_complete WORDS...: what the function registered for WORDS[0] offers
# for the last word, one per line, sorted.
bash_complete() {
	bash --norc --noprofile -c '. "$0"; fn=$(complete -p "$1" | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
		[ -n "$fn" ] || exit 9
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); "$fn"
		printf "%s\n" "${COMPREPLY[@]}" | sort' "$COMP/collrun.bash" "$@"
}
check "bash completions parse" bash -n "$COMP/collrun.bash"
check "bash: collrun --ho offers --hosts and --hostfile" test "$(bash_complete collrun --ho | paste -sd' ')" = "--hostfile --hosts"
check "bash: collrun --launcher s offers slurm and ssh" test "$(bash_complete collrun --launcher s | paste -sd' ')" = "slurm ssh"
mkdir -p "$TMP/files/hostdir" && touch "$TMP/files/hosts.txt"
check "bash: collrun --hostfile offers files" test "$(cd "$TMP/files" && bash_complete collrun --hostfile host | paste -sd' ')" = "hostdir hosts.txt"
check "bash: collrun --prefix offers directories only" test "$(cd "$TMP/files" && bash_complete collrun --prefix host)" = hostdir
check "bash: collcheck al offers all, allgather, allreduce and alltoall" test "$(bash_complete collcheck al | paste -sd' ')" = "all allgather allreduce alltoall"
check "bash: collcheck allr offers allreduce" test "$(bash_complete collcheck allr)" = allreduce
check "bash: collcheck allreduce -d bf offers bfloat16" test "$(bash_complete collcheck allreduce -d bf)" = bfloat16
check "bash: collcheck allreduce --js offers --json" test "$(bash_complete collcheck allreduce --js)" = --json
check "bash: collstack --ma offers --match" test "$(bash_complete collstack --ma)" = --match
check "bash: colltop --straggler-i offers --straggler-intervals" \
	test "$(bash_complete colltop --straggler-i)" = --straggler-intervals

# zsh_complete LINE...: each LINE typed into an interactive zsh with only these
# completions, then completed; the buffer afterwards, one "<...>" line each.
cat >"$TMP/complete.zsh" <<'EOZ'
zmodload zsh/zpty || exit 3
dir=$1 out=$2; shift 2
: >$out
wait_lines() { for _ in {1..200}; do (( $(wc -l <$out) >= $1 )) && return; sleep 0.05; done; }
zpty z zsh -f -i
zpty -w z "PS1='' RPROMPT=''; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "done_line() { zle complete-word; print -r -- \"<\$BUFFER>\" >>$out; BUFFER=''; }"
zpty -w z "zle -N done_line; bindkey '^X' done_line; print -r -- '<ready>' >>$out"
n=1
wait_lines $n
for line in "$@"; do
	zpty -w -n z "$line"$'\x18'
	n=$((n + 1))
	wait_lines $n
done
zpty -d z
EOZ
if have zsh; then
	check "zsh completions parse" zsh -n "$COMP/_coll"
	check "zsh: compinit binds _coll to collrun, collcheck, collstack and colltop" test "$(zsh -f -c 'fpath=("$0" $fpath); autoload -Uz compinit; compinit -u -D; print -r -- $_comps[collrun] $_comps[collcheck] $_comps[collstack] $_comps[colltop]' "$COMP")" = "_coll _coll _coll _coll"
	zsh -f "$TMP/complete.zsh" "$COMP" "$TMP/zsh.out" 'collrun --acc' 'collrun --launcher sl' 'collcheck allr' \
		'collcheck allreduce -d bf' 'collcheck allreduce --js' 'collrun -n 2 --no-label collcheck allr' 2>"$TMP/zsh.err"
	expect_code 0 $? "zsh on a pseudo-terminal"
	for want in 'collrun --accept-new ' 'collrun --launcher slurm ' 'collcheck allreduce ' \
		'collcheck allreduce -d bfloat16 ' 'collcheck allreduce --json ' 'collrun -n 2 --no-label collcheck allreduce '; do
		check "zsh completes to '$want'" grep -qxF "<$want>" "$TMP/zsh.out"
	done
fi

if have fish; then
	export XDG_CONFIG_HOME=$TMP/xdg XDG_DATA_HOME=$TMP/xdg XDG_CACHE_HOME=$TMP/xdg
	fish_complete() { fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$COMP/coll.fish" "$1" | cut -f1 | sort | paste -sd' '; }
	check "fish completions parse" fish -n "$COMP/coll.fish"
	check "fish: collrun --ho offers --hostfile and --hosts" test "$(fish_complete 'collrun --ho')" = "--hostfile --hosts"
	check "fish: collrun --launcher s offers slurm and ssh" test "$(fish_complete 'collrun --launcher s')" = "slurm ssh"
	check "fish: collcheck offers its commands" test "$(fish_complete 'collcheck ')" = "all allgather allreduce alltoall broadcast env gpus health links reduce reducescatter"
	check "fish: collcheck allreduce -d bf offers bfloat16" test "$(fish_complete 'collcheck allreduce -d bf')" = bfloat16
fi

# Every long option in --help appears in each shell's completions for that tool.
section() { # section FILE NAME: the part of FILE that completes NAME
	case $1 in
	*.fish) grep "^complete -c $2 " "$1" ;;
	*) sed -n "/^_coll_$2()/,/^}/p" "$1" ;;
	esac
}
for tool in collrun "collcheck allreduce"; do
	# shellcheck disable=SC2086
	"$BIN"/$tool --help | grep -o -- '--[a-z][a-z_-]*' | sort -u >"$TMP/longs"
	check "$tool --help lists its long options" test "$(wc -l <"$TMP/longs")" -ge 10
	for f in collrun.bash _coll coll.fish; do
		section "$COMP/$f" "${tool%% *}" >"$TMP/section"
		missing=""
		while read -r o; do
			case $f in coll.fish) pat="-l ${o#--}( |\$)" ;; *) pat="(^|[^a-z_-])$o([^a-z_-]|\$)" ;; esac
			grep -Eq -- "$pat" "$TMP/section" || missing="$missing $o"
		done <"$TMP/longs"
		check "$f has every long option of $tool${missing:+ (missing:$missing)}" test -z "$missing"
	done
done

# One tool's files, as installed under its name: that tool's completions only.
"$BIN/coll-completions" bash collcheck >"$TMP/collcheck.bash"
check "collcheck's bash file parses" bash -n "$TMP/collcheck.bash"
check "collcheck's bash file leaves collrun alone" bash -c "! grep -q _coll_collrun '$TMP/collcheck.bash'"
check "a tool's file is refused for zsh" bash -c "! '$BIN/coll-completions' zsh collrun 2>/dev/null"
finish
