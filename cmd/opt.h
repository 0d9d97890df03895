/*
 * Table-driven option parsing. Each command describes its options once, in a
 * struct opt table; the parser, --help and the shell completions all read
 * that table, so they cannot drift apart.
 */
#ifndef COLL_OPT_H
#define COLL_OPT_H

#include <stddef.h>

enum opt_type { OPT_FLAG, OPT_VALUE };

struct opt {
	int id;			/* returned by opt_next() */
	char shrt;		/* 0: none */
	const char *lng;	/* NULL: none */
	enum opt_type type;
	const char *arg;	/* value's name in --help */
	const char *help;
	const char *complete;	/* space-separated values, "@file", "@dir" or NULL */
};

#define OPT_END_TABLE { 0, 0, NULL, OPT_FLAG, NULL, NULL, NULL }
enum { OPT_DONE = -1, OPT_ERROR = -2 };

struct opt_state {
	const struct opt *opts;
	int argc;
	char **argv;
	int ind;		/* next argv index; the first operand after OPT_DONE */
	const char *cluster;	/* rest of "-abc" being parsed */
	int stop_at_operand;	/* collrun: options end at the program name */
	char err[256];
};

void opt_init(struct opt_state *st, const struct opt *opts, int argc, char **argv,
    int stop_at_operand);
/* Next option's id with *val its value (OPT_VALUE), OPT_DONE, or OPT_ERROR with st->err. */
int opt_next(struct opt_state *st, const char **val);
/* Integer in [min, max]; 0 or -1 with err naming the option. */
int opt_int(const char *name, const char *s, long min, long max, long *out, char *err, size_t len);
/* Byte size with optional K, M, G suffix (powers of 1024), as nccl-tests takes. */
int opt_size(const char *name, const char *s, size_t *out, char *err, size_t len);
int opt_double(const char *name, const char *s, double min, double max, double *out, char *err,
    size_t len);
/* Print the options of a table for --help. */
void opt_print_help(const struct opt *opts, void *stream);

#endif
