/*
 * The command table: every tool (and collcheck's subcommands) is one
 * descriptor, listed once in cmd_table[] (cmd.c). The completions and man
 * page generators walk the same table.
 *
 * To add a command:
 *   1. write cmd/<tool>/<name>.c exporting `const struct cmd cmd_<tool>_<name>`
 *      with its option table, usage and run function;
 *   2. declare it below and add it to cmd_table[] in cmd.c;
 *   3. add the file to cmd/CMakeLists.txt;
 *   4. regenerate completions (make completions) and commit them;
 *   5. for a new tool, give its man page prose in mantext.c (the options
 *      and the environment come from the tables by themselves);
 *   6. add tests/cli/tNNNN-<tool>-<topic>.sh.
 */
#ifndef COLL_CMD_H
#define COLL_CMD_H

#include <sys/types.h>

#include "opt.h"

/* Exit codes every tool keeps. */
enum cmd_exit { EXIT_OK = 0, EXIT_PROBLEMS = 1, EXIT_USAGE = 2, EXIT_CANNOT = 3,
	EXIT_INTERRUPTED = 130, EXIT_PIPE = 141 };

struct cmd {
	const char *tool;	/* binary: "collrun", "collcheck", "collstack" */
	const char *name;	/* subcommand, NULL for the tool itself */
	const char *usage;
	const char *summary;
	const struct opt *opts;
	int (*run)(int argc, char **argv);
};

extern const struct cmd cmd_collrun;
extern const struct cmd cmd_collcheck_allreduce, cmd_collcheck_allgather;
extern const struct cmd cmd_collcheck_reducescatter, cmd_collcheck_broadcast;
extern const struct cmd cmd_collcheck_reduce, cmd_collcheck_alltoall;
extern const struct cmd cmd_collcheck_all, cmd_collcheck_env, cmd_collcheck_links,
    cmd_collcheck_gpus;
extern const struct cmd cmd_collcheck_health;
extern const struct cmd cmd_collstack;
extern const struct cmd cmd_colltop;
extern const struct cmd *const cmd_table[];

/* This program's own file (what a front end starts its workers as); NULL if unknown. */
char *cmd_self(void);
/* Find tool's command (subcommand name or NULL). */
const struct cmd *cmd_find(const char *tool, const char *name);
/* Print usage, summary and options. */
void cmd_usage(const struct cmd *cmd, void *stream);
/* Report a usage error the way every tool does, and return EXIT_USAGE. */
int cmd_usage_error(const struct cmd *cmd, const char *msg);
/* Standard output failed with errno E: said once (a broken pipe never); the exit code. */
int cmd_stdout_failed(int e, int code);
/*
 * Check that stdout was written (git's run_builtin): code, or EXIT_CANNOT
 * after one line naming the cause (a full disk), or EXIT_PIPE, quietly, when
 * the reader went away (| head). cmd_main calls it after every command.
 */
int cmd_finish_stdout(int code);
/* Make sure fds 0-2 are open before any socket is (curl's main_checkfds). */
void cmd_check_fds(void);
/*
 * A file the user named (what: "config", "baseline") read whole into *text
 * (free it), never blocking on a FIFO (a pipe, <(...), gets 5 s to be
 * written); -1 with one line in err naming the file and what to do.
 */
int cmd_read_file(const char *what, const char *path, size_t max, char **text, char *err,
    size_t len);
/* Multi-call main: run the tool's command (for collcheck, argv[1] names it). */
int cmd_main(const char *tool, int argc, char **argv);

#endif
