#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "cmdout.h"
#include "envcheck.h"
#include "err.h"
#include "msg.h"
#include "regfile.h"
#include "suggest.h"
#include "wrap.h"
#include "xmalloc.h"

/* The tool cmd_main runs, for the messages that have no command at hand. */
static const char *cmd_tool;

const struct cmd *const cmd_table[] = {
	&cmd_collrun,
	&cmd_collcheck_all,
	&cmd_collcheck_env,
	&cmd_collcheck_links,
	&cmd_collcheck_gpus,
	&cmd_collcheck_health,
	&cmd_collcheck_allreduce,
	&cmd_collcheck_allgather,
	&cmd_collcheck_reducescatter,
	&cmd_collcheck_broadcast,
	&cmd_collcheck_reduce,
	&cmd_collcheck_alltoall,
	&cmd_collstack,
	&cmd_colltop,
	NULL,
};

char *
cmd_self(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	return xstrdup(self);
}

const struct cmd *
cmd_find(const char *tool, const char *name)
{
	for (int i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd *c = cmd_table[i];

		if (strcmp(c->tool, tool) != 0)
			continue;
		if ((name == NULL && c->name == NULL) ||
		    (name != NULL && c->name != NULL && strcmp(name, c->name) == 0))
			return c;
	}
	return NULL;
}

/* One form of a usage (from the tool's name), its later lines under what follows the command. */
static void
cmd_print_form(const struct cmd *cmd, const char *form, size_t n, const char *tail, FILE *f)
{
	size_t at = strlen(cmd->tool) + 1 + (cmd->name ? strlen(cmd->name) + 1 : 0);
	char *text = xmalloc(n + strlen(tail) + 1);

	memcpy(text, form, n);
	strcpy(text + n, tail);
	if (strlen(text) <= at || at > WRAP_WIDTH / 2)
		at = 4;
	wrap_print(f, text, 7, 7 + at, WRAP_WIDTH, WRAP_GROUPS);
	free(text);
}

/* "usage: TOOL [NAME] ...": each form the usage gives (a line each) below the first. */
static void
cmd_print_usage(const struct cmd *cmd, const char *tail, FILE *f)
{
	const char *p = cmd->usage;

	fputs("usage: ", f);
	for (;;) {
		const char *nl = strchr(p, '\n');

		cmd_print_form(cmd, p, nl ? (size_t)(nl - p) : strlen(p), nl ? "" : tail, f);
		if (nl == NULL)
			break;
		p = nl + 1 + strspn(nl + 1, " ");
		fputs("       ", f);
	}
}

/* The summary's paragraphs (split by a blank line), each filled to 80 columns. */
static void
cmd_print_summary(const char *summary, FILE *f)
{
	const char *p = summary;

	while (*p != '\0') {
		const char *end = strstr(p, "\n\n");
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *para = xmalloc(n + 1);

		memcpy(para, p, n);
		para[n] = '\0';
		fputc('\n', f);
		wrap_print(f, para, 0, 0, WRAP_WIDTH, 0);
		free(para);
		p += n + (end ? 2 : 0);
	}
}

void
cmd_usage(const struct cmd *cmd, void *stream)
{
	cmd_print_usage(cmd, "", stream);
	cmd_print_summary(cmd->summary, stream);
	fputs("\noptions:\n", stream);
	opt_print_help(cmd->opts, stream);
}

int
cmd_usage_error(const struct cmd *cmd, const char *msg)
{
	fprintf(stderr, "%s%s%s: %s\n", cmd->tool, cmd->name ? " " : "",
	    cmd->name ? cmd->name : "", msg);
	cmd_print_usage(cmd, " (try --help)", stderr);
	return EXIT_USAGE;
}

int
cmd_stdout_failed(int e, int code)
{
	static int said;

	/* What a shell shows for a tool SIGPIPE killed: the reader has all it wanted. */
	if (e == EPIPE)
		return code == EXIT_INTERRUPTED ? code : EXIT_PIPE;
	if (!said)
		fprintf(stderr, "%s%scannot write standard output: %s\n", cmd_tool ? cmd_tool : "",
		    cmd_tool ? ": " : "", strerror(e));
	said = 1;
	return code == EXIT_OK ? EXIT_CANNOT : code;
}

int
cmd_finish_stdout(int code)
{
	int e = cmdout_flush();

	return e == 0 ? code : cmd_stdout_failed(e, code);
}

void
cmd_check_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) == -1)
			_exit(EXIT_CANNOT);
}

/* The first sentence of a summary: what a list of commands shows of each. */
static char *
cmd_first_sentence(const char *summary)
{
	const char *p = summary;
	char *s;

	while ((p = strchr(p, '.')) != NULL && p[1] != '\0' && p[1] != ' ' && p[1] != '\n')
		p++;
	s = xstrdup(summary);
	if (p != NULL)
		s[p - summary + 1] = '\0';
	return s;
}

static void
cmd_list_subcommands(const char *tool, FILE *f)
{
	fprintf(f, "usage: %s COMMAND [OPTIONS]\n\ncommands:\n", tool);
	for (int i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd *c = cmd_table[i];
		char *first;
		int n;

		if (strcmp(c->tool, tool) != 0 || c->name == NULL)
			continue;
		first = cmd_first_sentence(c->summary);
		n = fprintf(f, "  %-14s", c->name);
		if (n > 16)
			fprintf(f, "\n%*s", 16, "");
		wrap_print(f, first, 16, 16, WRAP_WIDTH, 0);
		free(first);
	}
	static const struct opt none[] = { OPT_END_TABLE };

	fprintf(f, "\n'%s COMMAND --help' shows a command's options%s.\n\noptions:\n", tool,
	    cmd_find(tool, "all") ? "; alone, it runs 'all'" : "");
	opt_print_help(none, f);
}

/* An unknown command: one line, with the command it is likely a slip for, or the list. */
static int
cmd_unknown(const char *tool, const char *name)
{
	char q[MSG_QUOTE_LEN(40)];
	struct suggest sg;

	msg_quote(q, name, strlen(name), 40);
	suggest_init(&sg, name, strlen(name));
	for (int i = 0; cmd_table[i] != NULL; i++)
		if (strcmp(cmd_table[i]->tool, tool) == 0)
			suggest_offer(&sg, cmd_table[i]->name);
	if (sg.best == NULL) {
		fprintf(stderr, "%s: unknown command %s\n", tool, q);
		cmd_list_subcommands(tool, stderr);
		return EXIT_USAGE;
	}
	fprintf(stderr, "%s: unknown command %s; did you mean %s?\n"
	    "usage: %s COMMAND [OPTIONS] (try --help)\n", tool, q, sg.best, tool);
	return EXIT_USAGE;
}

static int
cmd_is(const char *arg, const char *shrt, const char *lng)
{
	return strcmp(arg, shrt) == 0 || strcmp(arg, lng) == 0;
}

/* Run tool's command: for a tool of subcommands, the one argv[1] names. */
static int
cmd_dispatch(const char *tool, int argc, char **argv)
{
	const struct cmd *c = cmd_find(tool, NULL);

	if (c != NULL)
		return c->run(argc, argv);
	/* A tool with an "all" command runs it when no command is named (collcheck alone). */
	if ((argc < 2 || (argv[1][0] == '-' && !cmd_is(argv[1], "-h", "--help") &&
	    !cmd_is(argv[1], "-V", "--version"))) && (c = cmd_find(tool, "all")) != NULL)
		return c->run(argc, argv);
	if (argc < 2 || cmd_is(argv[1], "-h", "--help")) {
		cmd_list_subcommands(tool, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (cmd_is(argv[1], "-V", "--version")) {
		printf("%s %s\n", tool, COLL_VERSION);
		return EXIT_OK;
	}
	if ((c = cmd_find(tool, argv[1])) == NULL)
		return cmd_unknown(tool, argv[1]);
	return c->run(argc - 1, argv + 1);
}

int
cmd_main(const char *tool, int argc, char **argv)
{
	cmd_tool = tool;
	cmd_check_fds();
	cmdout_init();
	envcheck_run(tool, argc, argv);
	/* Every tool's stdout checked here too, whichever way its command returned. */
	return cmd_finish_stdout(cmd_dispatch(tool, argc, argv));
}

int
cmd_read_file(const char *what, const char *path, size_t max, char **text, char *err,
    size_t len)
{
	char q[MSG_QUOTE_LEN(128)];
	struct stat sb;
	size_t n;
	int r = regfile_read(path, max, 5000, text, &n, &sb);

	msg_quote(q, path, strlen(path), 128);
	if (r == COLL_OK)
		return 0;
	if (r == COLL_EUNSAFE)
		snprintf(err, len, "%s %s is %s, not a file: give a file", what, q,
		    regfile_kind(sb.st_mode));
	else if (r == COLL_ETOOBIG)
		snprintf(err, len, "%s %s is larger than %zu bytes", what, q, max);
	else if (r == COLL_ETIMEDOUT)
		snprintf(err, len, "%s %s is a pipe that stayed silent for 5 s: give a file", what,
		    q);
	else
		snprintf(err, len, "cannot open %s %s: %s", what, q, strerror(errno));
	return -1;
}
