/*
 * Rank sets as ascending, disjoint, non-adjacent ranges: a job's ranks
 * mostly come in runs ([0-1023] or [0-16,18-1247]), so a set costs a few
 * ranges however many ranks it holds.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "rankset.h"
#include "xmalloc.h"

static void
rankset_insert(struct rankset *s, int at, int32_t lo, int32_t hi)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->r = xreallocarray(s->r, (size_t)s->cap, sizeof *s->r);
	}
	memmove(&s->r[at + 1], &s->r[at], sizeof *s->r * (size_t)(s->n - at));
	s->r[at][0] = lo;
	s->r[at][1] = hi;
	s->n++;
}

/* Join range i with the next while they touch. */
static void
rankset_fuse(struct rankset *s, int i)
{
	while (i + 1 < s->n && s->r[i + 1][0] <= s->r[i][1] + 1) {
		if (s->r[i + 1][1] > s->r[i][1])
			s->r[i][1] = s->r[i + 1][1];
		memmove(&s->r[i + 1], &s->r[i + 2], sizeof *s->r * (size_t)(s->n - i - 2));
		s->n--;
	}
}

static void
rankset_add_range(struct rankset *s, int32_t lo, int32_t hi)
{
	int a = 0, b = s->n;

	/* The first range whose end reaches lo - 1. */
	while (a < b) {
		int m = (a + b) / 2;

		if (s->r[m][1] + 1 < lo)
			a = m + 1;
		else
			b = m;
	}
	if (a == s->n || s->r[a][0] > hi + 1) {
		rankset_insert(s, a, lo, hi);
		return;
	}
	if (lo < s->r[a][0])
		s->r[a][0] = lo;
	if (hi > s->r[a][1])
		s->r[a][1] = hi;
	rankset_fuse(s, a);
}

void
rankset_add(struct rankset *s, int rank)
{
	/* Ranks mostly come in ascending order: extend the last range at once. */
	if (s->n > 0 && s->r[s->n - 1][1] + 1 == rank) {
		s->r[s->n - 1][1] = rank;
		return;
	}
	rankset_add_range(s, rank, rank);
}

void
rankset_union(struct rankset *dst, const struct rankset *src)
{
	for (int i = 0; i < src->n; i++)
		rankset_add_range(dst, src->r[i][0], src->r[i][1]);
}

int
rankset_count(const struct rankset *s)
{
	int n = 0;

	for (int i = 0; i < s->n; i++)
		n += s->r[i][1] - s->r[i][0] + 1;
	return n;
}

int
rankset_last(const struct rankset *s)
{
	return s->n > 0 ? s->r[s->n - 1][1] : -1;
}

int
rankset_has(const struct rankset *s, int rank)
{
	int a = 0, b = s->n;

	while (a < b) {
		int m = (a + b) / 2;

		if (s->r[m][1] < rank)
			a = m + 1;
		else
			b = m;
	}
	return a < s->n && s->r[a][0] <= rank;
}

void
rankset_fold(const struct rankset *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->n; i++) {
		char one[32];
		int w = s->r[i][0] == s->r[i][1] ? snprintf(one, sizeof one, "%s%d", i ? "," : "",
		    s->r[i][0]) : snprintf(one, sizeof one, "%s%d-%d", i ? "," : "", s->r[i][0],
		    s->r[i][1]);

		if (off + (size_t)w + 4 > len) {
			snprintf(buf + off, len - off, "%s", len - off > 3 ? "..." : "");
			return;
		}
		memcpy(buf + off, one, (size_t)w + 1);
		off += (size_t)w;
	}
}

char *
rankset_str(const struct rankset *s)
{
	/* A range is at most "16777215-16777215," (18 bytes): never cut short. */
	size_t len = 16 + (size_t)s->n * 24;
	char *buf = xmalloc(len);

	rankset_fold(s, buf, len);
	return buf;
}

static int
rankset_num(const char **p, const char *end, int32_t *v)
{
	long x = 0;
	const char *s = *p;

	if (s == end || !isdigit((unsigned char)*s))
		return -1;
	for (; s < end && isdigit((unsigned char)*s); s++)
		if ((x = x * 10 + (*s - '0')) >= RANKSET_MAX)
			return -1;
	*p = s;
	*v = (int32_t)x;
	return 0;
}

int
rankset_parse(struct rankset *s, const char *str, size_t len)
{
	const char *p = str, *end = str + len;
	int32_t lo, hi;

	while (p < end) {
		if (rankset_num(&p, end, &lo) != 0)
			return COLL_EPROTO;
		hi = lo;
		if (p < end && *p == '-' && (++p, rankset_num(&p, end, &hi) != 0 || hi < lo))
			return COLL_EPROTO;
		if (s->n > 0 && lo <= s->r[s->n - 1][1] + 1)
			return COLL_EPROTO;	/* not ascending, or not folded */
		rankset_insert(s, s->n, lo, hi);
		if (p < end && (*p != ',' || ++p == end))
			return COLL_EPROTO;
	}
	return s->n > 0 ? COLL_OK : COLL_EPROTO;
}

void
rankset_free(struct rankset *s)
{
	free(s->r);
	memset(s, 0, sizeof *s);
}
