/*
 * "Did you mean": the known word closest to a mistyped one (a subcommand, a
 * long option, a COLL_* variable), by edit distance, when it is close.
 */
#ifndef COLL_SUGGEST_H
#define COLL_SUGGEST_H

#include <stddef.h>

/* Edits (insert, delete, change, swap two neighbours) that turn a into b; capped at 99. */
int suggest_distance(const char *a, size_t alen, const char *b);
/* Is word (len bytes) close to known: a typo or two, or a start of it of 3 or more? */
int suggest_close(const char *word, size_t len, const char *known);

/* The closest of the candidates offered so far: start with zero, offer each. */
struct suggest {
	const char *word;
	size_t len;
	const char *best;
	int dist;
};

void suggest_init(struct suggest *s, const char *word, size_t len);
void suggest_offer(struct suggest *s, const char *known);

#endif
