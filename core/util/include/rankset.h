/*
 * Sets of ranks as ascending, disjoint ranges, in the folded form of
 * ranges.h ("0-3,7"): collstack labels its merged stacks with them and
 * collcheck its folded facts, so a set costs a few ranges however many
 * ranks it holds.
 */
#ifndef COLL_RANKSET_H
#define COLL_RANKSET_H

#include <stddef.h>
#include <stdint.h>

/* The largest rank a set holds, plus one. */
#define RANKSET_MAX (1 << 24)

struct rankset {
	int n, cap;
	int32_t (*r)[2];
};

void rankset_add(struct rankset *s, int rank);
void rankset_union(struct rankset *dst, const struct rankset *src);
int rankset_count(const struct rankset *s);
int rankset_has(const struct rankset *s, int rank);
/* The largest rank of a set; -1 for an empty one. */
int rankset_last(const struct rankset *s);
/* "0-3,5"; cut short with "..." if buf is small. */
void rankset_fold(const struct rankset *s, char *buf, size_t len);
/* The whole folded form, malloc'ed. */
char *rankset_str(const struct rankset *s);
/* Parse the folded form; COLL_EPROTO if it is not ascending ranges below RANKSET_MAX. */
int rankset_parse(struct rankset *s, const char *str, size_t len);
void rankset_free(struct rankset *s);

#endif
