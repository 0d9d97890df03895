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
	const char *help;	/* NULL: internal, parsed but in no --help, completion or page */
	const char *complete;	/* space-separated values, "@file", "@dir" or NULL */
};

/* A table ends with the entry of neither a letter nor a name. */
#define OPT_END_TABLE { 0, 0, NULL, OPT_FLAG, NULL, NULL, NULL }
enum { OPT_DONE = -1, OPT_ERROR = -2 };
/* The most entries a table has, with the -h and -V that opt_list adds. */
#define OPT_LIST_MAX 128

/* Ids opt_parse answers itself, above every tool's own and the host options'. */
enum { OPT_ID_HELP = 2000, OPT_ID_VERSION };
#define OPT_HELP_ENTRY { OPT_ID_HELP, 'h', "help", OPT_FLAG, NULL, "show this help", NULL }
#define OPT_VERSION_ENTRY \
	{ OPT_ID_VERSION, 'V', "version", OPT_FLAG, NULL, "show the version", NULL }

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
/*
 * Every option of a table, in order, then -h/--help and -V/--version where
 * the table has not got them (every tool and subcommand answers both): into
 * list (OPT_LIST_MAX), their count returned. Entries whose help is NULL are
 * in it (they are parsed); the printers skip them.
 */
int opt_list(const struct opt *opts, const struct opt **list);
/* Print the options of a table for --help, within 80 columns. */
void opt_print_help(const struct opt *opts, void *stream);

struct cmd;
struct hostopt;

/* What a tool does with operands (arguments that are not options). */
enum opt_operands {
	OPT_OPERANDS_NONE,	/* each is a usage error that names it */
	OPT_OPERANDS_REST,	/* options end at the first: collrun's program and its arguments */
	OPT_OPERANDS_BETWEEN,	/* taken between options by operand(): collstack --fr's dumps */
};

/*
 * One tool's option loop (every tool's: the same errors, --help and
 * --version for all): its command for the usage and the table, and where
 * each option goes, in the order given.
 */
struct opt_parser {
	const struct cmd *cmd;
	struct hostopt *ho;	/* the host options go here first; NULL: the tool has none */
	/* The tool's own option: 0, or -1 with err (said as a usage error). */
	int (*value)(void *args, int id, const char *val, char *err, size_t len);
	void (*operand)(void *args, const char *arg);	/* OPT_OPERANDS_BETWEEN */
	void *args;
	enum opt_operands operands;
};

/*
 * Parse argv with p: EXIT_OK with *rest (unless NULL) the index of the first
 * operand left (OPT_OPERANDS_REST), -1 when --help or --version was printed (the tool
 * exits 0), or EXIT_USAGE after the usage error was said.
 */
int opt_parse(const struct opt_parser *p, int argc, char **argv, int *rest);

#endif
