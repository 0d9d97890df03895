/*
 * Facts folded across ranks: each distinct (key, value, place in the host's
 * list) once, with the set of ranks that reported it. Hosts of one cluster
 * mostly agree, so the fold of a thousand hosts is one host's facts plus a
 * line for each fact that is a host's own (its name, its GPUs' UUIDs, its
 * ports' GIDs): collcheck merges folds up a binomial tree, and no rank
 * receives every host's facts whole.
 */
#ifndef COLL_FACTS_FOLD_H
#define COLL_FACTS_FOLD_H

#include <stddef.h>

#include "facts.h"
#include "rankset.h"

struct facts_folded {
	char *key, *val;
	int ord;		/* its place in its hosts' lists: the order to give back */
	struct rankset ranks;
};

struct facts_fold {
	int n, cap;
	struct facts_folded *v;	/* by key, value, ord: two folds merge in one pass */
};

void facts_fold_init(struct facts_fold *ff);
void facts_fold_free(struct facts_fold *ff);
/* Fold one rank's facts in (its first FACTS_MAX). */
void facts_fold_add(struct facts_fold *ff, const struct facts *f, int rank);
/* Fold src into dst; src is left as it was. */
void facts_fold_merge(struct facts_fold *dst, const struct facts_fold *src);
/* "ord\tranks\tkey\tvalue\n" lines in the fold's order. */
char *facts_fold_pack(const struct facts_fold *ff, size_t *len);
/*
 * Into an empty fold: COLL_OK, or COLL_EPROTO for a malformed line, a key or
 * value that facts_add would have cleaned, a rank not below nranks, or lines
 * out of order (ff keeps what parsed).
 */
int facts_fold_unpack(struct facts_fold *ff, const char *buf, size_t len, int nranks);
/*
 * Give each rank k with out[k] != NULL its facts, in the order its host
 * listed them, at most FACTS_MAX; nranks bounds the ranks looked at. A fold
 * gives a rank each key once (a rank's facts hold each key once), so they are
 * appended unchecked: a fold from a broken peer can at worst repeat a key.
 */
void facts_fold_expand(const struct facts_fold *ff, struct facts *const *out, int nranks);

#endif
