/*
 * What the man pages say beyond the option tables: the environment
 * variables (envvars.c) and each page's prose (mantext.c). coll-gendoc
 * walks these with cmd_table[] to write collrun(1), collcheck(1) and
 * coll(7), so --help, the completions and the man pages share one source
 * for every option.
 */
#ifndef COLL_DOC_H
#define COLL_DOC_H

/* Who sets or reads a variable: a page lists the groups it names. */
enum envvar_flags {
	ENV_RANK = 1 << 0,	/* collrun sets it for every rank */
	ENV_CORE = 1 << 1,	/* libcoll reads it in every rank */
	ENV_FRONT = 1 << 2,	/* the front end (collrun, collcheck alone) reads it */
};

struct envvar {
	const char *name;
	const char *deflt;	/* NULL: none, or set by collrun */
	const char *meaning;
	unsigned flags;
};

/* Every variable coll sets or reads, ending with a NULL name. */
extern const struct envvar envvar_table[];
/* The heading of one group (a single ENV_* flag). */
const char *envvar_group_title(unsigned flag);

/* A term and what it means: one EXIT STATUS, FILES or EXAMPLES entry. */
struct mantext_item {
	const char *term;
	const char *text;
};

struct mantext {
	const char *page;	/* "collrun", "collcheck", "coll" (section 7) */
	int section;
	const char *whatis;	/* NAME line after the dash */
	const char *const *description;	/* paragraphs, NULL-terminated */
	unsigned env;		/* envvar groups in ENVIRONMENT */
	const struct mantext_item *exit_status;	/* each ends with a NULL term */
	const struct mantext_item *examples;
	const struct mantext_item *files;
	const char *see_also;
};

/* The prose of a page, or NULL. */
const struct mantext *mantext_find(const char *page);

#endif
