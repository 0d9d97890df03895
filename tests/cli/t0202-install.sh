#!/bin/bash
# cmake --install puts the tools, man pages, completions, libcoll, its headers
# and coll.pc where they belong, and a program built with pkg-config alone runs
# under the installed collrun.
. "$(dirname "$0")/lib.sh"
BUILD=${COLL_BUILD:-$BIN/..}
P=$TMP/p
export MANPAGER=cat PAGER=cat MANWIDTH=100

if ! cmake --install "$BUILD" --prefix "$P" >"$TMP/install.log" 2>&1; then
	cat "$TMP/install.log"
	not_ok "cmake --install"
	finish
	exit
fi
ok "cmake --install --prefix"

for f in bin/collrun bin/collcheck bin/collstack bin/colltop; do
	check "$f is installed and runs" "$P/$f" --version
done
for f in share/man/man1/collrun.1 share/man/man1/collcheck.1 share/man/man1/collstack.1 \
	share/man/man1/colltop.1 share/bash-completion/completions/colltop \
	share/fish/vendor_completions.d/colltop.fish \
	share/man/man7/coll.7 share/bash-completion/completions/collrun \
	share/bash-completion/completions/collcheck share/bash-completion/completions/collstack \
	share/zsh/vendor-completions/_coll \
	share/fish/vendor_completions.d/collrun.fish share/fish/vendor_completions.d/collcheck.fish \
	share/fish/vendor_completions.d/collstack.fish \
	include/coll/err.h include/coll/net.h include/coll/uid.h include/coll/status.h \
	include/coll/dtype.h include/coll/comm.h include/coll/kind.h include/coll/coll.h \
	include/coll/probe.h; do
	check "$f is installed" test -s "$P/$f"
done
pc=$(find "$P" -name coll.pc)
check "coll.pc is installed under a pkgconfig folder" test "$(basename "$(dirname "$pc")")" = pkgconfig
check "libcoll.a is installed beside it" test -s "$(dirname "$(dirname "$pc")")/libcoll.a"

# Man pages: render without a warning, with the sections a man page has.
man_sections() { # man_sections PAGE SECTION...
	local page=$1; shift
	local out=$TMP/$(basename "$page").txt
	man --warnings -E UTF-8 -l "$page" >"$out" 2>"$out.err"
	check "$(basename "$page") renders without warnings" test ! -s "$out.err"
	[ -s "$out.err" ] && cat "$out.err"
	for s in NAME "$@"; do
		check "$(basename "$page") has $s" grep -q "^$s\$" "$out"
	done
}
man_sections "$P/share/man/man1/collrun.1" SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT "EXIT STATUS" \
	EXAMPLES FILES "SEE ALSO"
man_sections "$P/share/man/man1/collcheck.1" SYNOPSIS OPTIONS ENVIRONMENT "EXIT STATUS" EXAMPLES
man_sections "$P/share/man/man7/coll.7" ENVIRONMENT
section() { awk -v s="$2" '/^[A-Z]/ { on = ($0 == s) } on' "$1"; }
section "$TMP/collrun.1.txt" OPTIONS >"$TMP/opts"
check "collrun(1) OPTIONS has --hosts" contains "$TMP/opts" '-H, --hosts HOSTS'
# Every option of --help is in the page: the generator walks the same table.
for o in $("$P/bin/collrun" --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$o" "$TMP/opts" || not_ok "collrun $o missing from collrun(1)"
done
section "$TMP/collcheck.1.txt" OPTIONS >"$TMP/opts"
check "collcheck(1) documents allreduce's --datatype" contains "$TMP/opts" '--datatype TYPE'
section "$TMP/collrun.1.txt" ENVIRONMENT >"$TMP/env"
for v in COLL_UNIQUE_ID COLL_RANK COLL_SIZE COLL_LOCAL_RANK COLL_LOCAL_SIZE COLL_JOBID RANK \
	WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT COLL_DEBUG \
	COLL_TIMEOUT COLL_SOCKET_IFNAME COLL_STATUS_DIR COLL_JOB_DIR COLL_RD_MAX_BYTES COLL_SPIN; do
	grep -q "^ *$v\\b" "$TMP/env" || not_ok "collrun(1) ENVIRONMENT lacks $v"
	grep -q "^ *$v\\b" "$TMP/coll.7.txt" || not_ok "coll(7) lacks $v"
done

# Completions: they parse, zsh's serves both tools, bash's loads by command name.
comp=$P/share/bash-completion/completions
check "bash completions parse" bash -n "$comp/collrun"
check "bash completion for collcheck offers its subcommands" bash -c ". '$comp/collcheck'; \
	COMP_WORDS=(collcheck al); COMP_CWORD=1; _coll_collcheck; [ \"\${COMPREPLY[*]}\" = 'all allreduce allgather alltoall' ]"
check "bash completion for collrun offers --exclude" bash -c ". '$comp/collrun'; \
	COMP_WORDS=(collrun --exc); COMP_CWORD=1; _coll_collrun; [ \"\${COMPREPLY[*]}\" = --exclude ]"
check "zsh's _coll is for all four tools" grep -qx '#compdef collrun collcheck collstack colltop' \
	"$P/share/zsh/vendor-completions/_coll"
check "fish's collcheck.fish is collcheck's only" bash -c "! grep -q 'complete -c collrun' \
	'$P/share/fish/vendor_completions.d/collcheck.fish'"

# A program built with pkg-config alone: the sum of the ranks, on every rank.
cat >"$TMP/sum.c" <<'C'
#include <err.h>
#include <stdio.h>
#include <coll/coll.h>
#include <coll/err.h>

int
main(void)
{
	struct comm *c;
	int32_t mine, sum = -1;
	int r = comm_init_env(&c, NULL), n;

	if (r != COLL_OK) {
		fprintf(stderr, "cannot join: %s\n", coll_strerror(r));
		return 3;
	}
	mine = comm_rank(c);
	n = comm_size(c);
	r = coll_allreduce(c, &mine, &sum, 1, DT_INT32, OP_SUM);
	printf("rank %d of %d: sum %d\n", (int)mine, n, (int)sum);
	comm_destroy(c);
	return r != COLL_OK || sum != n * (n - 1) / 2;
}
C
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs coll)
check "pkg-config --cflags --libs coll" test -n "$flags"
# shellcheck disable=SC2086
check "a program builds against the installed libcoll" cc ${COLL_TEST_CFLAGS:-} -o "$TMP/sum" "$TMP/sum.c" $flags
"$P/bin/collrun" -n 2 --timeout 60 "$TMP/sum" >"$TMP/out" 2>&1
expect_code 0 $? "it runs under the installed collrun -n 2"
check "both ranks get 0 + 1" test "$(grep -c 'of 2: sum 1$' "$TMP/out")" = 2
[ "$fails" -eq 0 ] || cat "$TMP/out"
finish
