/*
 * coll-completions: print bash, zsh or fish completions for every command in
 * cmd_table[], from the option tables the parsers use. completions/ holds the
 * output; a test regenerates it and fails on any difference.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const char *const tools[] = { "collrun", "collcheck", "collstack", "colltop", NULL };

/*
 * The options a shell offers: the table's, with -h and -V (opt_list), but
 * none that is internal (no help).
 */
static int
comp_list(const struct opt *opts, const struct opt **list)
{
	const struct opt *all[OPT_LIST_MAX];
	int n = opt_list(opts, all), k = 0;

	for (int i = 0; i < n; i++)
		if (all[i]->help != NULL)
			list[k++] = all[i];
	return k;
}

/* Help text without characters that the shells' syntaxes give meaning to. */
static void
comp_clean(const char *s, char *out, size_t len)
{
	size_t i = 0;

	for (; *s && i + 1 < len; s++)
		out[i++] = strchr("[]:'\"`$\\", *s) ? ' ' : *s;
	out[i] = '\0';
}

/* A value completed by the shell itself: "@file" (any file) or "@dir" (directories). */
static int
comp_is(const struct opt *o, const char *kind)
{
	return o->complete != NULL && strcmp(o->complete, kind) == 0;
}

static void
bash_words(const struct opt *opts)
{
	const struct opt *list[OPT_LIST_MAX];
	int n = comp_list(opts, list);

	for (int i = 0; i < n; i++) {
		const struct opt *o = list[i];

		if (o->shrt)
			printf(" -%c", o->shrt);
		if (o->lng)
			printf(" --%s", o->lng);
	}
}

static void
bash_values(const struct opt *opts)
{
	const struct opt *list[OPT_LIST_MAX];
	int n = comp_list(opts, list);

	for (int i = 0; i < n; i++) {
		const struct opt *o = list[i];

		if (o->type != OPT_VALUE)
			continue;
		printf("\t\t");
		if (o->shrt)
			printf("-%c%s", o->shrt, o->lng ? "|" : "");
		if (o->lng)
			printf("--%s", o->lng);
		/* As file names: a slash after a directory, no space, names with spaces whole. */
		if (comp_is(o, "@file") || comp_is(o, "@dir"))
			printf(") compopt -o filenames 2>/dev/null; "
			    "mapfile -t COMPREPLY < <(compgen -%c -- \"$cur\"); return ;;\n",
			    comp_is(o, "@dir") ? 'd' : 'f');
		else if (o->complete)
			printf(") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", o->complete);
		else
			printf(") return ;;\n");
	}
}

static void
bash_tool(const char *tool)
{
	const struct cmd *top = cmd_find(tool, NULL);

	printf("_coll_%s()\n{\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" "
	    "prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n", tool);
	if (top != NULL) {
		printf("\tcase \"$prev\" in\n");
		bash_values(top->opts);
		printf("\tesac\n\tif [[ \"$cur\" == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"");
		bash_words(top->opts);
		printf("\" -- \"$cur\"))\n\telse\n\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n\tfi\n}\n");
		printf("complete -o default -F _coll_%s %s\n\n", tool, tool);
		return;
	}
	printf("\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W \"");
	for (int i = 0; cmd_table[i]; i++)
		if (strcmp(cmd_table[i]->tool, tool) == 0)
			printf(" %s", cmd_table[i]->name);
	printf("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase \"${COMP_WORDS[1]}\" in\n");
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd *c = cmd_table[i];

		if (strcmp(c->tool, tool) != 0)
			continue;
		printf("\t%s)\n\t\tcase \"$prev\" in\n", c->name);
		bash_values(c->opts);
		printf("\t\tesac\n\t\tCOMPREPLY=($(compgen -W \"");
		bash_words(c->opts);
		printf("\" -- \"$cur\")) ;;\n");
	}
	printf("\tesac\n}\ncomplete -F _coll_%s %s\n\n", tool, tool);
}

static void
zsh_opts(const struct opt *opts, const char *indent)
{
	char help[256];

	const struct opt *list[OPT_LIST_MAX];
	int n = comp_list(opts, list);

	for (int i = 0; i < n; i++) {
		const struct opt *o = list[i];

		comp_clean(o->help, help, sizeof help);
		printf("%s", indent);
		if (o->shrt && o->lng)
			printf("'(-%c --%s)'{-%c,--%s}'", o->shrt, o->lng, o->shrt, o->lng);
		else if (o->shrt)
			printf("'-%c", o->shrt);
		else
			printf("'--%s", o->lng);
		printf("[%s]", help);
		if (o->type == OPT_VALUE && (comp_is(o, "@file") || comp_is(o, "@dir")))
			printf(":%s:_files%s", o->arg, comp_is(o, "@dir") ? " -/" : "");
		else if (o->type == OPT_VALUE)
			printf(":%s:%s%s%s", o->arg, o->complete ? "(" : "",
			    o->complete ? o->complete : "", o->complete ? ")" : "");
		printf("' \\\n");
	}
}

static void
zsh_tool(const char *tool)
{
	const struct cmd *top = cmd_find(tool, NULL);

	printf("_coll_%s() {\n", tool);
	if (top != NULL) {
		printf("\t_arguments -s -S \\\n");
		zsh_opts(top->opts, "\t\t");
		printf("\t\t'*::program:_normal'\n}\n\n");
		return;
	}
	printf("\tif (( CURRENT == 2 )); then\n\t\tcompadd --");
	for (int i = 0; cmd_table[i]; i++)
		if (strcmp(cmd_table[i]->tool, tool) == 0)
			printf(" %s", cmd_table[i]->name);
	printf("\n\t\treturn\n\tfi\n\tshift words; (( CURRENT-- ))\n\tcase $words[1] in\n");
	for (int i = 0; cmd_table[i]; i++) {
		if (strcmp(cmd_table[i]->tool, tool) != 0)
			continue;
		printf("\t%s)\n\t\t_arguments -s \\\n", cmd_table[i]->name);
		zsh_opts(cmd_table[i]->opts, "\t\t\t");
		printf("\t\t\t;;\n");
	}
	printf("\tesac\n}\n\n");
}

static void
fish_opts(const char *tool, const char *cond, const struct opt *opts)
{
	char help[256];

	const struct opt *list[OPT_LIST_MAX];
	int n = comp_list(opts, list);

	for (int i = 0; i < n; i++) {
		const struct opt *o = list[i];

		comp_clean(o->help, help, sizeof help);
		printf("complete -c %s%s", tool, cond);
		if (o->shrt)
			printf(" -s %c", o->shrt);
		if (o->lng)
			printf(" -l %s", o->lng);
		if (o->type == OPT_VALUE && comp_is(o, "@file"))
			printf(" -r -F");
		else if (o->type == OPT_VALUE && comp_is(o, "@dir"))
			printf(" -x -a '(__fish_complete_directories)'");
		else if (o->type == OPT_VALUE)
			printf(o->complete ? " -x -a '%s'" : " -r", o->complete);
		printf(" -d '%s'\n", help);
	}
}

static void
fish_tool(const char *tool)
{
	const struct cmd *top = cmd_find(tool, NULL);
	char cond[128], help[256];

	if (top != NULL) {
		fish_opts(tool, "", top->opts);
		return;
	}
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd *c = cmd_table[i];

		if (strcmp(c->tool, tool) != 0)
			continue;
		comp_clean(c->summary, help, sizeof help);
		*strchr(help, '\n') = '\0';
		printf("complete -c %s -f -n '__fish_use_subcommand' -a %s -d '%s'\n", tool, c->name,
		    help);
		snprintf(cond, sizeof cond, " -n '__fish_seen_subcommand_from %s'", c->name);
		fish_opts(tool, cond, c->opts);
	}
}

/* Which shell's generator argv names, or NULL. */
static void (*comp_generator(const char *shell))(const char *)
{
	if (strcmp(shell, "bash") == 0)
		return bash_tool;
	if (strcmp(shell, "zsh") == 0)
		return zsh_tool;
	if (strcmp(shell, "fish") == 0)
		return fish_tool;
	return NULL;
}

static int
comp_is_tool(const char *name)
{
	for (int i = 0; tools[i]; i++)
		if (strcmp(tools[i], name) == 0)
			return 1;
	return 0;
}

/*
 * With a TOOL, only that tool's completions: bash-completion and fish load
 * a file by the command's name, so the install puts one file per tool. zsh
 * reads #compdef lines instead, and _coll serves both.
 */
int
main(int argc, char **argv)
{
	void (*gen)(const char *) = NULL;
	const char *only = argc == 3 ? argv[2] : NULL;

	if (argc == 2 || argc == 3)
		gen = comp_generator(argv[1]);
	if (gen == NULL || (only != NULL && (gen == zsh_tool || !comp_is_tool(only)))) {
		fprintf(stderr, "usage: coll-completions bash|zsh|fish "
		    "[collrun|collcheck|collstack|colltop]\n");
		return EXIT_USAGE;
	}
	printf("%s completions for coll, generated by coll-completions from the option "
	    "tables: do not edit\n", gen == zsh_tool ?
	    "#compdef collrun collcheck collstack colltop\n#" : "#");
	for (int i = 0; tools[i]; i++)
		if (only == NULL || strcmp(tools[i], only) == 0)
			gen(tools[i]);
	if (gen == zsh_tool)
		printf("case $service in\ncollrun) _coll_collrun ;;\ncollcheck) _coll_collcheck ;;\n"
		    "collstack) _coll_collstack ;;\ncolltop) _coll_colltop ;;\nesac\n");
	return cmd_finish_stdout(EXIT_OK);
}
