/*
 * What fr.c (the dumps read), fr_match.c (the dumps matched) and
 * fr_version.c (what they say of themselves) share.
 */
#ifndef COLL_TRIAGE_FR_IMPL_H
#define COLL_TRIAGE_FR_IMPL_H

#include <jansson.h>
#include <sys/types.h>

struct fr_dump {
	int rank;
	char *path;
	json_t *root;
	uid_t uid;		/* its file's owner; (uid_t)-1 for a dump read elsewhere */
};

struct fr_set;
struct fr_report;

/* A line of the report (made printable: it holds names from the dumps), and a finding if item. */
void fr__say(struct fr_report *r, json_t *item, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What the dumps say of themselves: their format, and the communication library's version. */
void fr__versions(const struct fr_set *s, struct fr_report *r);

/* The process group's name of an entry: the first of its (name, desc) tuple. */
const char *fr__pg_of(json_t *e);

#endif
