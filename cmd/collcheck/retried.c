/*
 * Retried ops, gathered and told once per link (retried.h). Rank 0 trusts a
 * peer's entries no further than their shape: ranks in range, hosts cut to
 * their room and cleaned before any terminal sees them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "comm.h"
#include "err.h"
#include "kind.h"
#include "msg.h"
#include "retried.h"
#include "xmalloc.h"

void
retried_take(struct retried_set *s, struct comm *c, int which, const int *orig)
{
	struct comm_retry log[COLL_RETRY_LOG];
	int n = comm_retry_log(c, log, COLL_RETRY_LOG, NULL), me = comm_rank(c);

	for (int i = 0; i < n; i++) {
		struct retried *e;
		int peer = log[i].peer;

		if (s->n == RETRIED_MAX) {	/* keep the newest */
			memmove(s->v, s->v + 1, (size_t)(s->n - 1) * sizeof *s->v);
			s->n--;
		}
		s->v = xreallocarray(s->v, (size_t)s->n + 1, sizeof *s->v);
		e = &s->v[s->n++];
		/* Field by field on zeros: the padding goes over the wire too. */
		memset(e, 0, sizeof *e);
		e->seq = log[i].seq;
		e->wall_ns = log[i].wall_ns;
		e->kind = log[i].kind;
		e->count = log[i].count;
		e->which = (uint32_t)which;
		e->rank[0] = orig != NULL ? orig[me] : me;
		e->rank[1] = -1;
		snprintf(e->host[0], RETRIED_HOST, "%s", comm_host(c, me));
		if (peer >= 0 && peer < comm_size(c)) {
			e->rank[1] = orig != NULL ? orig[peer] : peer;
			snprintf(e->host[1], RETRIED_HOST, "%s", comm_host(c, peer));
		}
	}
}

void
retried_free(struct retried_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
	s->more = 0;
}

/* Lower rank first; a link not named keeps only the rank that logged it. */
static void
retried_order(struct retried *e)
{
	if (e->rank[1] >= 0 && e->rank[1] < e->rank[0]) {
		char h[RETRIED_HOST];
		int32_t r = e->rank[0];

		e->rank[0] = e->rank[1];
		e->rank[1] = r;
		memcpy(h, e->host[0], sizeof h);
		memcpy(e->host[0], e->host[1], sizeof h);
		memcpy(e->host[1], h, sizeof h);
	}
}

/*
 * Into out, once per op and link: both ends of a link log the same retry,
 * and the ranks that only stopped for it (their links whole) log it with no
 * link, which says nothing once an end has named the link.
 */
void
retried_merge(struct retried_set *out, const struct retried *in)
{
	struct retried e = *in;
	int i;

	retried_order(&e);
	for (i = 0; i < out->n; i++) {
		struct retried *o = &out->v[i];

		if (o->seq != e.seq || o->kind != e.kind || o->which != e.which)
			continue;
		if (e.rank[1] < 0 || (o->rank[0] == e.rank[0] && o->rank[1] == e.rank[1]))
			break;
		if (o->rank[1] < 0) {	/* a link named at last: it replaces the unnamed */
			if (o->count > e.count)
				e.count = o->count;
			*o = e;
			return;
		}
	}
	if (i < out->n) {
		if (e.count > out->v[i].count)
			out->v[i].count = e.count;
		return;
	}
	if (out->n >= RETRIED_LISTED) {
		out->more++;
		return;
	}
	out->v = xreallocarray(out->v, (size_t)out->n + 1, sizeof *out->v);
	out->v[out->n++] = e;
}

static int
retried_cmp(const void *a, const void *b)
{
	const struct retried *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->rank[0] != y->rank[0] ? (x->rank[0] < y->rank[0] ? -1 : 1) :
	    (x->rank[1] > y->rank[1]) - (x->rank[1] < y->rank[1]);
}

/* A peer's entry, checked: its ranks in the job, its hosts ended and cleaned. */
static int
retried_valid(struct retried *e, int nranks)
{
	if (e->rank[0] < 0 || e->rank[0] >= nranks || e->rank[1] < -1 ||
	    e->rank[1] >= nranks || e->rank[0] == e->rank[1] || e->count == 0 ||
	    e->kind >= KIND_MAX)
		return 0;
	for (int k = 0; k < 2; k++) {
		e->host[k][RETRIED_HOST - 1] = '\0';
		msg_clean(e->host[k]);
	}
	return 1;
}

int
retried_gather(struct comm *c, int nranks, const struct retried_set *mine,
    struct retried_set *out)
{
	struct coll_blobs b = { 0 };
	/* Nothing retried here (the usual case): still a buffer, never NULL, for memcpy. */
	static const struct retried none;
	int rc = coll_gatherv(c, mine->n > 0 ? (const void *)mine->v : &none,
	    (size_t)mine->n * sizeof *mine->v, 0, &b);

	if (rc != COLL_OK || comm_rank(c) != 0) {
		coll_blobs_free(&b);
		return rc;
	}
	for (int k = 0; k < b.n; k++) {
		size_t n = b.len[k] / sizeof(struct retried);

		if (b.len[k] % sizeof(struct retried) != 0 || n > RETRIED_MAX)
			continue;
		for (size_t i = 0; i < n; i++) {
			struct retried e;

			memcpy(&e, b.data + b.off[k] + i * sizeof e, sizeof e);
			if (retried_valid(&e, nranks))
				retried_merge(out, &e);
		}
	}
	coll_blobs_free(&b);
	if (out->n > 1)
		qsort(out->v, (size_t)out->n, sizeof *out->v, retried_cmp);
	return COLL_OK;
}

void
retried_line(const struct retried *e, char *buf, size_t len)
{
	const char *times = e->count == 1 ? "time" : "times";

	if (e->rank[1] >= 0)
		snprintf(buf, len, "retried: %s seq %llu between rank %d (%s) and rank %d (%s), "
		    "%u %s: the link broke and was made again; check the NIC, cable and switch "
		    "port between them (COLL_DEBUG=WARN logs each retry)", coll_kind_name(e->kind),
		    (unsigned long long)e->seq, e->rank[0], e->host[0], e->rank[1], e->host[1],
		    e->count, times);
	else
		snprintf(buf, len, "retried: %s seq %llu, %u %s, seen at rank %d (%s): a link "
		    "broke and was made again, which one the core could not say; run with "
		    "COLL_DEBUG=WARN to see it", coll_kind_name(e->kind), (unsigned long long)e->seq,
		    e->count, times, e->rank[0], e->host[0]);
}

json_t *
retried_json(const struct retried_set *s)
{
	json_t *arr = json_array();

	for (int i = 0; i < s->n; i++) {
		const struct retried *e = &s->v[i];
		int named = e->rank[1] >= 0;

		json_array_append_new(arr, json_pack("{s:I, s:s, s:[i,o], s:[s,o], s:i, s:I}", "seq",
		    (json_int_t)e->seq, "op", coll_kind_name(e->kind), "ranks", e->rank[0],
		    named ? json_integer(e->rank[1]) : json_null(), "hosts", e->host[0],
		    named ? json_string(e->host[1]) : json_null(), "count", (int)e->count,
		    "wall_ns", (json_int_t)e->wall_ns));
	}
	return arr;
}

/* One entry of the record back; 0 when its shape is right. */
static int
retried_entry_from(struct retried *e, const json_t *o, int nranks)
{
	const json_t *ranks = json_object_get(o, "ranks"), *hosts = json_object_get(o, "hosts");
	const char *op = json_string_value(json_object_get(o, "op"));
	json_int_t seq = json_integer_value(json_object_get(o, "seq"));
	json_int_t count = json_integer_value(json_object_get(o, "count"));

	memset(e, 0, sizeof *e);
	if (op == NULL || seq <= 0 || count <= 0 || count > UINT32_MAX ||
	    json_array_size(ranks) != 2 || json_array_size(hosts) != 2)
		return -1;
	e->seq = (uint64_t)seq;
	e->count = (uint32_t)count;
	e->wall_ns = (uint64_t)json_integer_value(json_object_get(o, "wall_ns"));
	for (e->kind = 0; e->kind < KIND_MAX && strcmp(coll_kind_name(e->kind), op) != 0;
	    e->kind++)
		;
	for (int k = 0; k < 2; k++) {
		const json_t *r = json_array_get(ranks, (size_t)k);
		const char *h = json_string_value(json_array_get(hosts, (size_t)k));

		e->rank[k] = json_is_integer(r) && json_integer_value(r) >= 0 &&
		    json_integer_value(r) < nranks ? (int32_t)json_integer_value(r) : -1;
		snprintf(e->host[k], RETRIED_HOST, "%s", h != NULL ? h : "");
	}
	return retried_valid(e, nranks) ? 0 : -1;
}

int
retried_from_json(struct retried_set *s, const json_t *arr, int nranks)
{
	size_t i;
	const json_t *o;

	if (!json_is_array(arr) || json_array_size(arr) > (size_t)RETRIED_LISTED)
		return -1;
	s->v = xcalloc(json_array_size(arr) + 1, sizeof *s->v);
	json_array_foreach(arr, i, o) {
		if (retried_entry_from(&s->v[s->n], o, nranks) != 0) {
			retried_free(s);
			return -1;
		}
		s->n++;
	}
	return 0;
}

void
retried_find(struct check_result *r)
{
	struct retried_set s = { 0 };
	char line[512];

	if (retried_from_json(&s, r->retries, r->nranks) != 0) {
		check_find(r, -1, SEV_ERROR, "retried", "rank 0's record of retried ops is "
		    "malformed: use the same coll version on every host");
		return;
	}
	for (int i = 0; i < s.n; i++) {
		retried_line(&s.v[i], line, sizeof line);
		check_find(r, -1, SEV_ERROR, "retried", "%s", line);
	}
	retried_free(&s);
}
