/*
 * One option letter, one meaning across the suite (issue 37, item 9): every
 * listed short option of every tool and subcommand in cmd_table[] has the
 * same long name wherever it appears, except where a tool keeps the letters
 * of the tool its users come from (docs: COMMON decisions, each tool's help):
 *   - collcheck's sweeps keep nccl-tests': -b -e -f -i -n -w -d -o -c;
 *   - colltop keeps htop's and top's: -d delay, -n iterations, -b batch;
 *   - collrun keeps mpirun's -x VAR (export; no long name there), while -x is
 *     pdsh's --exclude HOSTS in the tools that reach hosts as pdsh does.
 * The letters mpirun gives meaning to mean what they mean there: -n --np,
 * -N --per-host, -H --hosts; -T is --timeout everywhere, and -f only the
 * sweeps' step factor (fanout is --fanout, long only).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "opt.h"

/* A command whose letters follow another tool's, and what each of those letters is there. */
static const struct {
	const char *tool;
	const char *names;	/* its subcommands, space-separated; NULL: the tool itself */
	const char *letters;
	const char *const lng[10];	/* each letter's long name there, in order */
} letters_kept[] = {
	{ "collcheck", "allreduce allgather reducescatter broadcast reduce alltoall", "befinwdoc",
	  { "minbytes", "maxbytes", "stepfactor", "stepbytes", "iters", "warmup_iters",
	    "datatype", "op", "check" } },
	{ "colltop", NULL, "dnb", { "delay", "iterations", "batch" } },
	{ "collrun", NULL, "x", { "(none)" } },
};

/* mpirun's letters and the suite's own, each with the one long name it has anywhere. */
static const struct {
	char c;
	const char *lng;
} letters_fixed[] = {
	{ 'n', "np" }, { 'N', "per-host" }, { 'H', "hosts" }, { 'T', "timeout" },
	{ 'f', "stepfactor" }, { 'h', "help" }, { 'V', "version" },
};

static int
letters_word_in(const char *word, const char *list)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* The kept meaning of c in cmd, or NULL when the suite's meaning applies there. */
static const char *
letters_kept_lng(const struct cmd *cmd, char c)
{
	for (size_t i = 0; i < sizeof letters_kept / sizeof letters_kept[0]; i++) {
		const char *at = strchr(letters_kept[i].letters, c);

		if (strcmp(cmd->tool, letters_kept[i].tool) != 0 || at == NULL)
			continue;
		if (letters_kept[i].names == NULL ? cmd->name == NULL :
		    cmd->name != NULL && letters_word_in(cmd->name, letters_kept[i].names))
			return letters_kept[i].lng[at - letters_kept[i].letters];
	}
	return NULL;
}

static const char *
letters_fixed_lng(char c)
{
	for (size_t i = 0; i < sizeof letters_fixed / sizeof letters_fixed[0]; i++)
		if (letters_fixed[i].c == c)
			return letters_fixed[i].lng;
	return NULL;
}

static void
test_opt_letters(void **state)
{
	/* The first command seen to give each letter its meaning, and that meaning. */
	const char *first_lng[128] = { 0 };
	const struct cmd *first_cmd[128] = { 0 };
	int bad = 0;

	(void)state;
	for (int i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd *cmd = cmd_table[i];
		const struct opt *list[OPT_LIST_MAX];
		int n = opt_list(cmd->opts, list);

		for (int k = 0; k < n; k++) {
			const struct opt *o = list[k];
			unsigned char c = (unsigned char)o->shrt;
			const char *lng = o->lng ? o->lng : "(none)", *want;

			if (c == 0 || c >= 128 || o->help == NULL)
				continue;
			if ((want = letters_kept_lng(cmd, (char)c)) == NULL &&
			    (want = letters_fixed_lng((char)c)) == NULL) {
				if (first_lng[c] == NULL) {
					first_lng[c] = lng;
					first_cmd[c] = cmd;
				}
				want = first_lng[c];
			}
			if (strcmp(lng, want) == 0)
				continue;
			printf("-%c is --%s in %s%s%s, but --%s %s%s%s%s\n", c, lng, cmd->tool,
			    cmd->name ? " " : "", cmd->name ? cmd->name : "", want,
			    want == first_lng[c] ? "in " : "(decided)",
			    want == first_lng[c] ? first_cmd[c]->tool : "",
			    want == first_lng[c] && first_cmd[c]->name ? " " : "",
			    want == first_lng[c] && first_cmd[c]->name ? first_cmd[c]->name : "");
			bad++;
		}
	}
	if (bad > 0)
		fail_msg("%d option letters with another meaning (listed above)", bad);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_letters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
