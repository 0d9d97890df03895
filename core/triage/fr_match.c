/*
 * The flight recorder dumps of a set (fr.c) matched across ranks as
 * PyTorch's own analyzer does: per process group, entries by
 * collective_seq_id. It says which ranks did not join the newest collective
 * the others are in, where the op, sizes or dtypes of one sequence number
 * differ between ranks, and the Python frames (and, from format 2.10, the
 * thread) each rank's entry was made from: a line each for the report, and a finding (an object) for each
 * problem, which collstack's verdict reads. Every name and file in a line
 * comes from a dump: made printable.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fr.h"
#include "fr_impl.h"
#include "msg.h"
#include "rankset.h"
#include "xmalloc.h"

#define FR_FRAMES_SHOWN 4

/* One collective entry of one rank in one process group. */
struct fr_ent {
	int rank;
	long long seq;
	const char *op, *state;
	json_t *e;
};

static const char *
fr_str(json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : dflt;
}

/* Every process group named in any dump, once. */
static int
fr_pg_names(const struct fr_set *s, const char ***out)
{
	const char **names = NULL;
	int n = 0;

	for (int i = 0; i < s->n; i++) {
		json_t *ents = json_object_get(s->d[i].root, "entries"), *e;
		size_t k;

		json_array_foreach(ents, k, e) {
			const char *pg = fr__pg_of(e);
			int seen = 0;

			if (pg == NULL || json_is_true(json_object_get(e, "is_p2p")))
				continue;
			for (int j = 0; j < n && !seen; j++)
				seen = strcmp(names[j], pg) == 0;
			if (!seen) {
				names = xreallocarray(names, (size_t)n + 1, sizeof *names);
				names[n++] = pg;
			}
		}
	}
	*out = names;
	return n;
}

/* The ranks of a process group, from pg_config's "[0, 1, 2]" in any dump, and its desc. */
static void
fr_pg_ranks(const struct fr_set *s, const char *pg, struct rankset *rs,
    const char **desc)
{
	*desc = NULL;
	for (int i = 0; i < s->n && rs->n == 0; i++) {
		json_t *cfg = json_object_get(json_object_get(s->d[i].root, "pg_config"), pg);
		const char *r = fr_str(cfg, "ranks", NULL);
		char *end;

		if (*desc == NULL)
			*desc = fr_str(cfg, "desc", NULL);
		for (const char *p = r; p != NULL && *p != '\0'; p++) {
			long v;

			if (!isdigit((unsigned char)*p))
				continue;
			v = strtol(p, &end, 10);
			if (v >= 0 && v < RANKSET_MAX)
				rankset_add(rs, (int)v);
			p = end - 1;
		}
	}
}

static int
fr_ent_cmp(const void *a, const void *b)
{
	const struct fr_ent *x = a, *y = b;
	long long rx = json_integer_value(json_object_get(x->e, "record_id")),
	    ry = json_integer_value(json_object_get(y->e, "record_id"));

	/* Ops of one seq (coalesced) in the order they were recorded, on every rank. */
	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	return (rx > ry) - (rx < ry);
}

/* Rank d's collective entries in pg, by seq. */
static int
fr_list(const struct fr_dump *d, const char *pg, struct fr_ent **out)
{
	json_t *ents = json_object_get(d->root, "entries"), *e;
	struct fr_ent *l = NULL;
	size_t k;
	int n = 0;

	json_array_foreach(ents, k, e) {
		const char *p = fr__pg_of(e);
		json_t *seq = json_object_get(e, "collective_seq_id");

		if (p == NULL || strcmp(p, pg) != 0 || !json_is_integer(seq) ||
		    json_is_true(json_object_get(e, "is_p2p")))
			continue;
		l = xreallocarray(l, (size_t)n + 1, sizeof *l);
		l[n++] = (struct fr_ent){ d->rank, json_integer_value(seq),
		    fr_str(e, "profiling_name", "?"), fr_str(e, "state", "?"), e };
	}
	if (n > 1)
		qsort(l, (size_t)n, sizeof *l, fr_ent_cmp);
	*out = l;
	return n;
}

static int
fr_seq_cmp(const void *a, const void *b)
{
	const struct fr_ent *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

static const struct fr_ent *
fr_at(const struct fr_ent *l, int n, long long seq)
{
	struct fr_ent key = { .seq = seq };

	return n > 0 ? bsearch(&key, l, (size_t)n, sizeof *l, fr_seq_cmp) : NULL;
}

static void
fr_frames(json_t *e, char *buf, size_t len)
{
	json_t *frames = json_object_get(e, "frames"), *f;
	size_t k, off = 0;
	int shown = 0;

	buf[0] = '\0';
	json_array_foreach(frames, k, f) {
		const char *file = fr_str(f, "filename", "?"), *slash = strrchr(file, '/');
		int n;

		if (shown == FR_FRAMES_SHOWN)
			break;
		n = snprintf(buf + off, len - off, "%s%s (%s:%lld)", shown ? " < " : "",
		    fr_str(f, "name", "?"), slash ? slash + 1 : file,
		    (long long)json_integer_value(json_object_get(f, "line")));
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
		shown++;
	}
}

/* Do two ranks' entries of one seq agree on what the op is? NULL, or what differs. */
static const char *
fr_differ(json_t *a, json_t *b)
{
	static const char *const keys[] = { "profiling_name", "input_sizes", "input_dtypes",
		"output_sizes", "output_dtypes" };

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
			return keys[i];
	return NULL;
}

void
fr__say(struct fr_report *r, json_t *item, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* Names and files come from the dumps. */
	msg_clean(buf);
	json_array_append_new(r->lines, json_string(buf));
	if (item != NULL)
		json_array_append_new(r->findings, item);
}

/* The first seq both ranks recorded where they disagree on the op: -1 when none. */
static long long
fr_first_mismatch(const struct fr_ent *a, int na, const struct fr_ent *b, int nb,
    const char **what)
{
	for (int i = 0, k = 0; i < na && k < nb;) {
		if (a[i].seq < b[k].seq)
			i++;
		else if (a[i].seq > b[k].seq)
			k++;
		else if ((*what = fr_differ(a[i].e, b[k].e)) != NULL)
			return a[i].seq;
		else
			i++, k++;
	}
	return -1;
}

/* Ranks that did not reach the newest collective of the group. */
static void
fr_behind(const struct fr_set *s, const char *pg, struct fr_ent **l, const int *n,
    long long top, const char *op, struct fr_report *r)
{
	char frames[512];
	const char *thread;
	json_t *item;

	for (int i = 0; i < s->n; i++) {
		const struct fr_ent *last = n[i] > 0 ? &l[i][n[i] - 1] : NULL;

		if (last == NULL || last->seq >= top)
			continue;
		fr_frames(last->e, frames, sizeof frames);
		/* Format 2.10 names the thread that made the entry: which of the rank's threads to look at. */
		thread = fr_str(last->e, "thread_name", NULL);
		item = json_pack("{s:s, s:s, s:i, s:I, s:s, s:I, s:s, s:s}", "kind", "not_joined",
		    "pg", pg, "rank", s->d[i].rank, "seq", top, "op", op, "last_seq", last->seq,
		    "last_op", last->op, "last_state", last->state);
		if (thread != NULL && thread[0] != '\0')
			json_object_set_new(item, "thread", json_string(thread));
		else
			thread = NULL;
		fr__say(r, item, "rank %d did not join %s seq %lld: its newest is %s seq %lld (%s%s%.64s%s)"
		    "%s%s", s->d[i].rank, op, top, last->op, last->seq, last->state,
		    thread ? ", thread '" : "", thread ? thread : "", thread ? "'" : "",
		    frames[0] ? ", from " : "", frames);
		r->problems++;
	}
}

/* Ranks of the group with no entry of it at all: no dump given, or nothing recorded. */
static void
fr_absent(const struct fr_set *s, const char *pg, const struct rankset *rs,
    const int *n, struct fr_report *r)
{
	for (int k = 0; k < rs->n; k++)
		for (int rank = rs->r[k][0]; rank <= rs->r[k][1]; rank++) {
			int have = 0;

			for (int i = 0; i < s->n && !have; i++)
				have = s->d[i].rank == rank && n[i] > 0;
			if (have)
				continue;
			fr__say(r, json_pack("{s:s, s:s, s:i}", "kind", "no_dump", "pg", pg, "rank", rank),
			    "rank %d of the group has no dump here (or no entry of the group in it)",
			    rank);
			r->problems++;
		}
}

/* Dumps with entries of the group. */
static int
fr_with_entries(const int *n, int count)
{
	int k = 0;

	for (int i = 0; i < count; i++)
		k += n[i] > 0;
	return k;
}

static void
fr_pg(const struct fr_set *s, const char *pg, struct fr_report *r)
{
	struct rankset rs = { 0 };
	struct fr_ent **l = xcalloc((size_t)s->n, sizeof *l);
	const struct fr_ent *ref = NULL, *at;
	int *n = xcalloc((size_t)s->n, sizeof *n), joined = 0, base = -1;
	long long top = LLONG_MIN, bad;
	char ranks[256], frames[512];
	const char *what, *desc;

	fr_pg_ranks(s, pg, &rs, &desc);
	rankset_fold(&rs, ranks, sizeof ranks);
	for (int i = 0; i < s->n; i++) {
		n[i] = fr_list(&s->d[i], pg, &l[i]);
		if (n[i] > 0 && l[i][n[i] - 1].seq > top)
			top = l[i][n[i] - 1].seq;
	}
	for (int i = 0; i < s->n; i++)
		if ((at = fr_at(l[i], n[i], top)) != NULL) {
			ref = ref ? ref : at;
			joined++;
		}
	if (ref == NULL) {
		/* Entries that name the group but carry no collective_seq_id: an older format. */
		fr__say(r, json_pack("{s:s, s:s}", "kind", "unreadable", "pg", pg), "process group %s: "
		    "its entries carry no collective_seq_id (a flight recorder format older than "
		    "this reader knows): nothing matched", pg);
		r->unreadable++;
		free(n);
		free(l);
		rankset_free(&rs);
		return;
	}
	fr__say(r, NULL, "process group %s%s%s%s (ranks %s): newest collective %s seq %lld, in %d "
	    "of the %d dumps", pg, desc ? " '" : "", desc ? desc : "", desc ? "'" : "",
	    rs.n ? ranks : "?", ref->op, top, joined, s->n);
	fr_behind(s, pg, l, n, top, ref->op, r);
	fr_absent(s, pg, &rs, n, r);
	for (int i = 0; i < s->n; i++) {
		if ((at = fr_at(l[i], n[i], top)) == NULL)
			continue;
		fr_frames(at->e, frames, sizeof frames);
		fr__say(r, NULL, "  rank %d: %s seq %lld %s%s%s", s->d[i].rank, at->op, top,
		    at->state, frames[0] ? ", from " : "", frames);
	}
	/* Desync: each rank against the lowest one with entries, from the first seq they differ. */
	for (int i = 0; i < s->n; i++) {
		if (n[i] == 0)
			continue;
		if (base < 0) {
			base = i;
			continue;
		}
		if ((bad = fr_first_mismatch(l[base], n[base], l[i], n[i], &what)) < 0)
			continue;
		/* among: the ranks compared, so that a reader can tell the odd side (verdict_gpu.c). */
		fr__say(r, json_pack("{s:s, s:s, s:I, s:s, s:i, s:i, s:s, s:s, s:i}", "kind",
		    "mismatch", "pg", pg, "seq", bad, "field", what, "rank", s->d[i].rank, "versus",
		    s->d[base].rank, "op", fr_at(l[i], n[i], bad)->op, "versus_op",
		    fr_at(l[base], n[base], bad)->op, "among", fr_with_entries(n, s->n)),
		    "mismatch in process group %s at seq %lld: rank %d's %s differs from rank %d's "
		    "(%s against %s)",
		    pg, bad, s->d[i].rank, what, s->d[base].rank, fr_at(l[i], n[i], bad)->op,
		    fr_at(l[base], n[base], bad)->op);
		r->problems++;
	}
	for (int i = 0; i < s->n; i++)
		free(l[i]);
	free(l);
	free(n);
	rankset_free(&rs);
}

void
fr_analyze(const struct fr_set *s, struct fr_report *r)
{
	const char **pgs = NULL;
	int npg;

	memset(r, 0, sizeof *r);
	r->lines = json_array();
	r->findings = json_array();
	fr__versions(s, r);
	npg = fr_pg_names(s, &pgs);
	for (int i = 0; i < npg; i++)
		fr_pg(s, pgs[i], r);
	if (npg == 0)
		fr__say(r, NULL, "no collective entries in the dumps (PyTorch records them with "
		    "TORCH_NCCL_TRACE_BUFFER_SIZE > 0)");
	free(pgs);
}

void
fr_report_free(struct fr_report *r)
{
	json_decref(r->lines);
	json_decref(r->findings);
	memset(r, 0, sizeof *r);
}
