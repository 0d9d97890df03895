#include <stdlib.h>
#include <string.h>

#include "gather.h"
#include "hostlist.h"
#include "ranges.h"
#include "xmalloc.h"

struct gather_out {
	char *buf;
	size_t len;
	size_t cap;
};

struct gather {
	int nranks;
	struct gather_out *out;
};

struct gather *
gather_new(int nranks)
{
	struct gather *g = xcalloc(1, sizeof *g);

	g->nranks = nranks;
	g->out = xcalloc((size_t)nranks, sizeof *g->out);
	return g;
}

void
gather_add(struct gather *g, int rank, const char *line, size_t len)
{
	struct gather_out *o = &g->out[rank];

	if (o->cap - o->len < len + 1) {
		o->cap = (o->len + len + 1) * 2;
		o->buf = xreallocarray(o->buf, 1, o->cap);
	}
	memcpy(o->buf + o->len, line, len);
	o->len += len;
	o->buf[o->len++] = '\n';
}

static int
gather_same(const struct gather_out *a, const struct gather_out *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->buf, b->buf, a->len) == 0);
}

/* One group: every rank whose output equals rank first's. */
static void
gather_print_group(struct gather *g, FILE *f, int first, int *used, const char *const *hosts,
    const int *rank_host)
{
	int *ranks = xcalloc((size_t)g->nranks, sizeof *ranks), n = 0, nh = 0, maxh = 0;
	const char **names = xcalloc((size_t)g->nranks, sizeof *names);
	char *seen;
	char hostfold[4096], rankfold[4096];

	for (int r = 0; hosts != NULL && r < g->nranks; r++)
		maxh = rank_host[r] > maxh ? rank_host[r] : maxh;
	seen = xcalloc((size_t)maxh + 1, 1);
	for (int r = first; r < g->nranks; r++) {
		if (used[r] || !gather_same(&g->out[first], &g->out[r]))
			continue;
		used[r] = 1;
		ranks[n++] = r;
		if (hosts != NULL && !seen[rank_host[r]]) {
			seen[rank_host[r]] = 1;
			names[nh++] = hosts[rank_host[r]];
		}
	}
	free(seen);
	if (hosts != NULL)
		hostlist_fold(names, nh, hostfold, sizeof hostfold);
	ranges_fold(ranks, n, rankfold, sizeof rankfold);
	fprintf(f, "---------------\n%s%sranks %s (%d)\n---------------\n", hosts ? hostfold : "",
	    hosts ? " " : "", rankfold, n);
	fwrite(g->out[first].buf, 1, g->out[first].len, f);
	free(ranks);
	free(names);
}

void
gather_print(struct gather *g, FILE *f, const char *const *hosts, const int *rank_host)
{
	int *used = xcalloc((size_t)g->nranks, sizeof *used);

	for (int r = 0; r < g->nranks; r++)
		if (!used[r])
			gather_print_group(g, f, r, used, hosts, rank_host);
	free(used);
}

void
gather_free(struct gather *g)
{
	if (g == NULL)
		return;
	for (int r = 0; r < g->nranks; r++)
		free(g->out[r].buf);
	free(g->out);
	free(g);
}
