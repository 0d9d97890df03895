/*
 * Folding facts across ranks (facts_fold.h). The wire form is a line per
 * distinct fact, "ord\tranks\tkey\tvalue\n", in key, value, ord order, so that
 * a receiver merges it with its own in one pass and checks it as it goes.
 * Keys and values were cleaned of tabs, newlines and bad UTF-8 when they were
 * added (facts.c), which is what lets a tab end each field; a receiver
 * refuses any that were not.
 *
 * A fact's place in its host's list is part of what makes it one fact: hosts
 * that list the same keys share every entry, and a host that lists one key
 * more or less gets its own entries for the rest, so each host's order comes
 * back exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "facts_fold.h"
#include "xmalloc.h"

void
facts_fold_init(struct facts_fold *ff)
{
	memset(ff, 0, sizeof *ff);
}

static void
facts_folded_free(struct facts_folded *e)
{
	free(e->key);
	free(e->val);
	rankset_free(&e->ranks);
}

void
facts_fold_free(struct facts_fold *ff)
{
	for (int i = 0; i < ff->n; i++)
		facts_folded_free(&ff->v[i]);
	free(ff->v);
	memset(ff, 0, sizeof *ff);
}

static int
facts_fold_cmp(const struct facts_folded *a, const struct facts_folded *b)
{
	int c = strcmp(a->key, b->key);

	if (c == 0)
		c = strcmp(a->val, b->val);
	return c != 0 ? c : (a->ord > b->ord) - (a->ord < b->ord);
}

static int
facts_fold_qcmp(const void *a, const void *b)
{
	return facts_fold_cmp(a, b);
}

static struct facts_folded *
facts_fold_push(struct facts_fold *ff)
{
	if (ff->n == ff->cap) {
		ff->cap = ff->cap ? ff->cap * 2 : 64;
		ff->v = xreallocarray(ff->v, (size_t)ff->cap, sizeof *ff->v);
	}
	memset(&ff->v[ff->n], 0, sizeof ff->v[ff->n]);
	return &ff->v[ff->n++];
}

static void
facts_folded_copy(struct facts_folded *dst, const struct facts_folded *src)
{
	dst->key = xstrdup(src->key);
	dst->val = xstrdup(src->val);
	dst->ord = src->ord;
	memset(&dst->ranks, 0, sizeof dst->ranks);
	rankset_union(&dst->ranks, &src->ranks);
}

void
facts_fold_merge(struct facts_fold *dst, const struct facts_fold *src)
{
	struct facts_fold out;
	int i = 0, j = 0;

	facts_fold_init(&out);
	out.cap = dst->n + src->n;
	out.v = xcalloc(out.cap > 0 ? (size_t)out.cap : 1, sizeof *out.v);
	while (i < dst->n || j < src->n) {
		int c = i == dst->n ? 1 : j == src->n ? -1 : facts_fold_cmp(&dst->v[i], &src->v[j]);

		if (c < 0) {
			out.v[out.n++] = dst->v[i++];
		} else if (c > 0) {
			facts_folded_copy(&out.v[out.n++], &src->v[j++]);
		} else {
			struct facts_folded *e = &dst->v[i++];

			rankset_union(&e->ranks, &src->v[j].ranks);
			j++;
			out.v[out.n++] = *e;
		}
	}
	/* dst's entries moved into out whole: only its array goes. */
	free(dst->v);
	*dst = out;
}

void
facts_fold_add(struct facts_fold *ff, const struct facts *f, int rank)
{
	struct facts_fold one;

	facts_fold_init(&one);
	/* No host lists more than a receiver takes (facts_unpack's bound too). */
	for (int i = 0; i < f->n && i < FACTS_MAX; i++) {
		struct facts_folded *e = facts_fold_push(&one);

		e->key = xstrdup(f->v[i].key);
		e->val = xstrdup(f->v[i].val);
		e->ord = i;
		rankset_add(&e->ranks, rank);
	}
	if (one.n > 1)
		qsort(one.v, (size_t)one.n, sizeof *one.v, facts_fold_qcmp);
	facts_fold_merge(ff, &one);
	facts_fold_free(&one);
}

char *
facts_fold_pack(const struct facts_fold *ff, size_t *len)
{
	size_t cap = 1, off = 0;
	char **ranks = xcalloc(ff->n > 0 ? (size_t)ff->n : 1, sizeof *ranks);
	char *buf;

	for (int i = 0; i < ff->n; i++) {
		ranks[i] = rankset_str(&ff->v[i].ranks);
		cap += 16 + strlen(ranks[i]) + strlen(ff->v[i].key) + strlen(ff->v[i].val);
	}
	buf = xmalloc(cap);
	for (int i = 0; i < ff->n; i++) {
		off += (size_t)snprintf(buf + off, cap - off, "%d\t%s\t%s\t%s\n", ff->v[i].ord,
		    ranks[i], ff->v[i].key, ff->v[i].val);
		free(ranks[i]);
	}
	free(ranks);
	buf[off] = '\0';
	*len = off;
	return buf;
}

/* The next field of a line, up to a tab (or to the line's end for the last). */
static const char *
facts_fold_field(const char **p, const char *end, int last, size_t *flen)
{
	const char *s = *p, *t = memchr(s, '\t', (size_t)(end - s));

	if (last ? t != NULL : t == NULL)
		return NULL;
	if (last)
		t = end;
	*flen = (size_t)(t - s);
	*p = last ? end : t + 1;
	return s;
}

static int
facts_fold_line(struct facts_fold *ff, const char *p, const char *end, int nranks)
{
	const char *ord, *ranks, *key, *val;
	size_t olen, rlen, klen, vlen;
	struct facts_folded *e;
	long o = 0;

	if ((ord = facts_fold_field(&p, end, 0, &olen)) == NULL ||
	    (ranks = facts_fold_field(&p, end, 0, &rlen)) == NULL ||
	    (key = facts_fold_field(&p, end, 0, &klen)) == NULL ||
	    (val = facts_fold_field(&p, end, 1, &vlen)) == NULL)
		return COLL_EPROTO;
	if (olen == 0 || olen > 5 || klen == 0 || klen >= FACTS_KEY_MAX || vlen >= FACTS_VAL_MAX ||
	    memchr(key, '\0', klen) != NULL || memchr(val, '\0', vlen) != NULL)
		return COLL_EPROTO;
	for (size_t i = 0; i < olen; i++) {
		if (ord[i] < '0' || ord[i] > '9')
			return COLL_EPROTO;
		o = o * 10 + (ord[i] - '0');
	}
	if (o >= FACTS_MAX)
		return COLL_EPROTO;
	e = facts_fold_push(ff);
	e->ord = (int)o;
	e->key = xmalloc(klen + 1);
	memcpy(e->key, key, klen);
	e->key[klen] = '\0';
	e->val = xmalloc(vlen + 1);
	memcpy(e->val, val, vlen);
	e->val[vlen] = '\0';
	/* A bad entry is dropped at once: ff keeps only what parsed. */
	if (!facts_is_clean(e->key) || !facts_is_clean(e->val) ||
	    rankset_parse(&e->ranks, ranks, rlen) != COLL_OK ||
	    rankset_last(&e->ranks) >= nranks ||
	    (ff->n > 1 && facts_fold_cmp(&ff->v[ff->n - 2], e) >= 0)) {
		facts_folded_free(e);
		ff->n--;
		return COLL_EPROTO;
	}
	return COLL_OK;
}

int
facts_fold_unpack(struct facts_fold *ff, const char *buf, size_t len, int nranks)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (nl == NULL || facts_fold_line(ff, p, nl, nranks) != COLL_OK)
			return COLL_EPROTO;
		p = nl + 1;
	}
	return COLL_OK;
}

static int
facts_fold_ordcmp(const void *a, const void *b)
{
	const struct facts_folded *x = *(const struct facts_folded *const *)a;
	const struct facts_folded *y = *(const struct facts_folded *const *)b;

	if (x->ord != y->ord)
		return x->ord < y->ord ? -1 : 1;
	return facts_fold_cmp(x, y);
}

void
facts_fold_expand(const struct facts_fold *ff, struct facts *const *out, int nranks)
{
	const struct facts_folded **by = xcalloc(ff->n > 0 ? (size_t)ff->n : 1, sizeof *by);

	for (int i = 0; i < ff->n; i++)
		by[i] = &ff->v[i];
	if (ff->n > 1)
		qsort(by, (size_t)ff->n, sizeof *by, facts_fold_ordcmp);
	for (int i = 0; i < ff->n; i++) {
		const struct facts_folded *e = by[i];

		for (int r = 0; r < e->ranks.n; r++)
			for (int k = e->ranks.r[r][0]; k <= e->ranks.r[r][1] && k < nranks; k++)
				if (out[k] != NULL && out[k]->n < FACTS_MAX)
					facts_append(out[k], e->key, e->val);
	}
	free(by);
}
