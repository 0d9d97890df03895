#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "err.h"
#include "msg.h"
#include "regfile.h"
#include "xmalloc.h"

const struct cmd *const cmd_table[] = {
	&cmd_collrun,
	&cmd_collcheck_all,
	&cmd_collcheck_env,
	&cmd_collcheck_links,
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

void
cmd_usage(const struct cmd *cmd, void *stream)
{
	fprintf(stream, "usage: %s\n\n%s\n\noptions:\n", cmd->usage, cmd->summary);
	opt_print_help(cmd->opts, stream);
}

int
cmd_usage_error(const struct cmd *cmd, const char *msg)
{
	fprintf(stderr, "%s%s%s: %s\n", cmd->tool, cmd->name ? " " : "",
	    cmd->name ? cmd->name : "", msg);
	fprintf(stderr, "usage: %s (try --help)\n", cmd->usage);
	return EXIT_USAGE;
}

int
cmd_finish_stdout(int code)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno != EPIPE)
			fprintf(stderr, "cannot write standard output: %s\n", strerror(errno));
		return code == EXIT_OK ? EXIT_CANNOT : code;
	}
	return code;
}

void
cmd_check_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) == -1)
			_exit(EXIT_CANNOT);
}

static void
cmd_list_subcommands(const char *tool, FILE *f)
{
	fprintf(f, "usage: %s COMMAND [OPTIONS]\n\ncommands:\n", tool);
	for (int i = 0; cmd_table[i] != NULL; i++)
		if (strcmp(cmd_table[i]->tool, tool) == 0 && cmd_table[i]->name)
			fprintf(f, "  %-12s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
}

int
cmd_main(const char *tool, int argc, char **argv)
{
	const struct cmd *c = cmd_find(tool, NULL);

	cmd_check_fds();
	if (c != NULL)
		return c->run(argc, argv);
	/* A tool with an "all" command runs it when no command is named (collcheck alone). */
	if ((argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--help") != 0 &&
	    strcmp(argv[1], "-h") != 0 && strcmp(argv[1], "--version") != 0)) &&
	    (c = cmd_find(tool, "all")) != NULL)
		return c->run(argc, argv);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cmd_list_subcommands(tool, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("%s %s\n", tool, COLL_VERSION);
		return EXIT_OK;
	}
	if ((c = cmd_find(tool, argv[1])) == NULL) {
		fprintf(stderr, "%s: unknown command '%s'\n", tool, argv[1]);
		cmd_list_subcommands(tool, stderr);
		return EXIT_USAGE;
	}
	return c->run(argc - 1, argv + 1);
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
