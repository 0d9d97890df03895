/*
 * What fr.c (the dumps read) and fr_match.c (the dumps matched) share.
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

/* The process group's name of an entry: the first of its (name, desc) tuple. */
const char *fr__pg_of(json_t *e);

#endif
