/*
 * What the front ends of collcheck, collstack and colltop share: they start
 * their workers (this very program with --worker) through the job runner,
 * over the hosts the host options gave, and read rank 0's stdout.
 */
#ifndef COLL_FRONT_H
#define COLL_FRONT_H

#include <stddef.h>

#include "cmd.h"
#include "hostopt.h"

/* Rank 0's stdout, its pieces put back together (lines past 64 KiB come cut). */
struct front_record {
	char *buf;
	size_t len, cap;
	size_t max;		/* past this, the rest is dropped and overflow set */
	int overflow;
};

/* The workers' argv around the user's own arguments (argv[1..]). */
struct front_argv {
	const char *sub;		/* before --worker: the subcommand (collcheck's) */
	const char *first[3];		/* after --worker, before the user's (NULL-ended) */
	const char *last[3];		/* after them, so that they win (NULL-ended) */
};

/*
 * The job for the workers: our own installation first on remote hosts (they
 * run this file), labelled lines, the tool's timeout, the hosts; EXIT_OK, or
 * EXIT_USAGE with the usage error said.
 */
int front_prepare(const struct cmd *cmd, struct hostopt *ho, double timeout_s);
/* This program, w and argv[1..]: NULL with it said when this program cannot be found. */
char **front_argv(const struct cmd *cmd, const struct front_argv *w, int argc, char **argv);
void front_argv_free(char **wargv);
/* Add a piece to the record: every piece is taken, even when dropped past max. */
void front_record_add(struct front_record *r, const char *line, size_t len);
/* A job hook's line: 1 if it is rank 0's stdout (added to the record), 0 if not. */
int front_record_take(struct front_record *r, int rank, int stream, const char *line,
    size_t len);
void front_record_free(struct front_record *r);

#endif
