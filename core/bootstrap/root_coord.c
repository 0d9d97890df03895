/*
 * What the root decides for a communicator's survivors: one agreed set of
 * failed ranks for a shrink, the groups of a split, and whether an op whose
 * link broke may run again (operator retry).
 *
 * Agreement assumes the root lives: it is the one process every rank talks
 * to, so its view (the ranks it saw die, joined to every survivor's exclude
 * list) is the agreed one, and each survivor gets the same answer. When the
 * root dies, nothing is agreed: every rank loses its root connection (EOF or
 * keep-alive) and fails what it waits for with that reason, never hangs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "auth.h"
#include "err.h"
#include "log.h"
#include "root_impl.h"
#include "xmalloc.h"

#define ROOT_RETRY_WAIT_MS 30000
/*
 * A rank that cannot run the op again (it completed it, or moved past) is
 * refused this much later: the link that broke is most often a peer that
 * died, whose end reaches the root a moment after the survivors' requests,
 * and the refusal should name that death, not the rank that moved on.
 */
#define ROOT_RETRY_SETTLE_MS 500

static void
root_regroup_reply(struct root_member *m, const struct wire_regroup_done *d)
{
	size_t cap = 64 + WIRE_MSG_LEN + (size_t)d->nexcl * 4;
	uint8_t *buf = xmalloc(cap);
	struct wire_buf b;

	wire_buf_init(&b, buf, cap);
	wire_regroup_done_encode(&b, d);
	root_send(m->conn, WIRE_REGROUP_DONE, buf, (uint32_t)b.off);
	free(buf);
}

static void
root_regroup_fail(struct root_group *g, int code, const char *msg)
{
	struct wire_regroup_done d = { .code = code, .rank = -1 };

	snprintf(d.msg, sizeof d.msg, "%s", msg);
	log_warn("root: %s", msg);
	for (int i = 0; i < g->nranks; i++)
		if (g->m[i].state == RM_JOINED && g->m[i].rg_asked)
			root_regroup_reply(&g->m[i], &d);
	for (int i = 0; i < g->nranks; i++)
		g->m[i].rg_asked = 0;
	memset(g->rg_excl, 0, (size_t)g->nranks);
	g->rg_kind = 0;
}

/* Members of the new communicator of color, ordered by (key, old rank); their count. */
static int
root_split_members(struct root_group *g, int32_t color, int *out)
{
	int n = 0;

	for (int i = 0; i < g->nranks; i++) {
		struct root_member *m = &g->m[i];
		int j;

		if (m->state != RM_JOINED || !m->rg_asked || g->rg_excl[i] || m->color != color)
			continue;
		/* Insertion sort: stable in old rank, so equal keys keep the old order. */
		for (j = n; j > 0 && g->m[out[j - 1]].key > m->key; j--)
			out[j] = out[j - 1];
		out[j] = i;
		n++;
	}
	return n;
}

/* Everyone who must ask has asked: make the new communicators and tell each its place. */
static void
root_regroup_decide(struct root *root, struct root_group *g)
{
	int *members = xcalloc((size_t)g->nranks, sizeof *members), n;
	uint32_t *excl = xcalloc((size_t)g->nranks, sizeof *excl), nexcl = 0;
	uint8_t *done = xcalloc((size_t)g->nranks, 1);

	for (int i = 0; i < g->nranks; i++)
		if (g->rg_excl[i] || g->m[i].state != RM_JOINED)
			excl[nexcl++] = (uint32_t)i;
	g->regroups++;
	for (int i = 0; i < g->nranks; i++) {
		struct root_member *m = &g->m[i];
		struct wire_regroup_done d = { .code = COLL_OK, .rank = -1, .nexcl = nexcl,
		    .excl = excl };
		struct root_group *ng;

		if (m->state != RM_JOINED || !m->rg_asked || done[i])
			continue;
		if (g->rg_excl[i] || m->color == WIRE_NO_COLOR) {
			root_regroup_reply(m, &d);
			continue;
		}
		/*
		 * The id from the parent's, the regroup count and the color, keyed
		 * by the job's secret (auth.h): one computable from the public id
		 * let a stranger squat the new communicator's page names.
		 */
		if (auth_commid(&root->uid, g->commid, g->regroups, m->color, &d.commid) !=
		    COLL_OK) {
			d = (struct wire_regroup_done){ .code = COLL_ESYS, .rank = -1 };
			snprintf(d.msg, sizeof d.msg, "the root cannot derive the new "
			    "communicator's id: HMAC-SHA256 failed in libcrypto");
			root_regroup_reply(m, &d);
			continue;
		}
		n = root_split_members(g, m->color, members);
		d.nranks = (uint32_t)n;
		ng = root_group_new(root, d.commid, n);
		ng->parent = g;
		ng->origin = xcalloc((size_t)n, sizeof *ng->origin);
		for (int k = 0; k < n; k++)
			ng->origin[k] = members[k];
		log_info("root: communicator %016" PRIx64 " -> %016" PRIx64 " with %d ranks",
		    g->commid, d.commid, n);
		for (int k = 0; k < n; k++) {
			d.rank = k;
			root_regroup_reply(&g->m[members[k]], &d);
			done[members[k]] = 1;
		}
	}
	for (int i = 0; i < g->nranks; i++)
		g->m[i].rg_asked = 0;
	memset(g->rg_excl, 0, (size_t)g->nranks);
	g->rg_kind = 0;
	free(members);
	free(excl);
	free(done);
}

/* Decide once every live member that is not excluded has asked. */
static void
root_regroup_check(struct root *root, struct root_group *g)
{
	if (g->rg_kind == 0)
		return;
	for (int i = 0; i < g->nranks; i++)
		if (g->m[i].state == RM_JOINED && !g->rg_excl[i] && !g->m[i].rg_asked)
			return;
	root_regroup_decide(root, g);
}

void
root_on_regroup(struct root *root, struct root_conn *rc, const uint8_t *p, uint32_t len)
{
	struct root_group *g = rc->g;
	struct root_member *m = &g->m[rc->rank];
	struct wire_regroup r;
	char msg[WIRE_MSG_LEN];

	if (wire_regroup_decode(p, len, (uint32_t)g->nranks, &r) != COLL_OK) {
		free(r.excl);
		log_warn("root: rank %d sent a malformed regroup request", rc->rank);
		return;
	}
	if (g->rg_kind != 0 && g->rg_kind != (int)r.kind) {
		snprintf(msg, sizeof msg, "rank %d asked to %s while others asked to %s: every rank "
		    "must make the same call", rc->rank, r.kind == WIRE_RG_SHRINK ? "shrink" :
		    "split", g->rg_kind == WIRE_RG_SHRINK ? "shrink" : "split");
		m->rg_asked = 1;
		root_regroup_fail(g, COLL_EMISMATCH, msg);
		free(r.excl);
		return;
	}
	if (g->rg_kind == 0)
		g->rg_deadline = clock_now_ms() + (uint64_t)root->join_timeout_ms;
	g->rg_kind = (int)r.kind;
	m->rg_asked = 1;
	m->color = r.kind == WIRE_RG_SPLIT ? r.color : 0;
	m->key = r.kind == WIRE_RG_SPLIT ? r.key : rc->rank;
	for (uint32_t i = 0; i < r.nexcl; i++)
		g->rg_excl[r.excl[i]] = 1;
	free(r.excl);
	root_regroup_check(root, g);
}

static void
root_retry_refuse(struct root_group *g, int code, int rank, const char *msg)
{
	struct wire_note note = { .code = code, .rank = rank };
	uint8_t buf[WIRE_MSG_LEN + 32];
	struct wire_buf b;

	snprintf(note.msg, sizeof note.msg, "%s", msg);
	/* The later op first: a rank keeps the verdict of the op it is in (retry.c). */
	for (int k = 0; k < (g->rt_seq2 != 0 ? 2 : 1); k++) {
		wire_buf_init(&b, buf, sizeof buf);
		wire_put_u64(&b, k == 0 ? g->rt_seq : g->rt_seq2);
		wire_note_encode(&b, &note);
		root_send_all(g, WIRE_RETRY_REFUSE, buf, (uint32_t)b.off);
	}
	log_warn("root: %s", msg);
	g->rt_active = 0;
	g->rt_refused = g->rt_seq;
	g->rt_seq2 = 0;
	g->rt_refuse_at = 0;
}

static void
root_retry_send(struct root_group *g, uint8_t type)
{
	uint8_t buf[12];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u64(&b, g->rt_seq);
	wire_put_u32(&b, g->rt_epoch);
	root_send_all(g, type, buf, (uint32_t)b.off);
}

/* A dead or departed member makes a retry impossible: it cannot run the op again. */
static int
root_retry_gone(struct root_group *g)
{
	char msg[WIRE_MSG_LEN];

	for (int i = 0; i < g->nranks; i++) {
		if (g->m[i].state == RM_JOINED)
			continue;
		snprintf(msg, sizeof msg, "retry of seq %" PRIu64 " refused: rank %d (host %s) %s",
		    g->rt_seq, i, g->m[i].e.host, g->m[i].state == RM_DEAD ? "died" : "left");
		root_retry_refuse(g, COLL_ERANKDEAD, i, msg);
		return 1;
	}
	return 0;
}

/* rank -> root: u64 seq, u32 epoch (retries of the communicator), u32 tries of this op, u32 max. */
void
root_on_retry_req(struct root *root, struct root_conn *rc, const uint8_t *p, uint32_t len)
{
	struct root_group *g = rc->g;
	char msg[WIRE_MSG_LEN];
	uint32_t epoch, tries, max;
	uint64_t seq;
	struct wire_buf b;

	(void)root;
	wire_buf_init(&b, (void *)p, len);
	seq = wire_get_u64(&b);
	epoch = wire_get_u32(&b);
	tries = wire_get_u32(&b);
	max = wire_get_u32(&b);
	if (b.err || b.off != len || !g->started)
		return;
	if ((g->rt_active && g->rt_seq == seq) || (g->rt_refused && seq <= g->rt_refused))
		return;		/* the other end of the link asked too, or this op was refused */
	if (g->rt_active) {
		/*
		 * Links broke in two ops at once: the ranks cannot all stop at one
		 * seq. Most often a rank died mid-op and its peers were in
		 * neighbouring ops; its death, if it comes within the settling
		 * time, is what the refusal of both names (as for a rank that
		 * could not run the op again).
		 */
		uint64_t lo = g->rt_seq < seq ? g->rt_seq : seq, hi = g->rt_seq < seq ? seq : g->rt_seq;

		if (g->rt_seq2 != 0)
			return;		/* already held for a death to explain it */
		g->rt_seq = hi;
		g->rt_seq2 = lo;
		snprintf(g->rt_refuse_msg, sizeof g->rt_refuse_msg, "retry of seq %" PRIu64
		    " refused: links broke in seq %" PRIu64 " too, so the ranks cannot all stop "
		    "at one op", hi, lo);
		g->rt_refuse_rank = rc->rank;
		g->rt_refuse_at = clock_now_ms() + ROOT_RETRY_SETTLE_MS;
		(void)root_retry_gone(g);
		return;
	}
	g->rt_active = 1;
	g->rt_seq = seq;
	g->rt_epoch = epoch + 1;
	g->rt_deadline = clock_now_ms() + ROOT_RETRY_WAIT_MS;
	g->rt_refuse_at = 0;
	for (int i = 0; i < g->nranks; i++)
		g->m[i].rt_ready = 0;
	if (root_retry_gone(g))
		return;
	if (tries >= max) {
		snprintf(msg, sizeof msg, "retry of seq %" PRIu64 " refused: its links broke %u "
		    "times, the limit (COLL_RETRY_MAX) is %u", seq, tries + 1, max);
		root_retry_refuse(g, COLL_EPEER, rc->rank, msg);
		return;
	}
	log_info("root: rank %d lost a link in seq %" PRIu64 ": asking all %d ranks to stop "
	    "for retry %u", rc->rank, seq, g->nranks, g->rt_epoch);
	root_retry_send(g, WIRE_RETRY_QUERY);
}

/* rank -> root: u64 seq, u32 epoch, i32 state (0 stopped with its input intact). */
void
root_on_retry_state(struct root *root, struct root_conn *rc, const uint8_t *p, uint32_t len)
{
	static const char *why[] = { "", ("its in-place buffer was already partly overwritten "
	    "(pass separate buffers, or raise COLL_RETRY_SAVE_BYTES)"), "it had already completed the op",
	    "it is past the op" };
	struct root_group *g = rc->g;
	char msg[WIRE_MSG_LEN];
	int32_t state;
	uint64_t seq;
	uint32_t epoch;
	struct wire_buf b;

	(void)root;
	wire_buf_init(&b, (void *)p, len);
	seq = wire_get_u64(&b);
	epoch = wire_get_u32(&b);
	state = (int32_t)wire_get_u32(&b);
	/* Two ops at once: no answer can make a retry; only the refusal is awaited. */
	if (b.err || b.off != len || !g->rt_active || seq != g->rt_seq || epoch != g->rt_epoch ||
	    g->rt_seq2 != 0)
		return;
	if (state != 0) {
		if (g->rt_refuse_at != 0)
			return;		/* the first such rank is the one named */
		snprintf(msg, sizeof msg, "retry of seq %" PRIu64 " refused: rank %d (host %s): %s",
		    seq, rc->rank, g->m[rc->rank].e.host,
		    why[state > 0 && state < 4 ? state : 3]);
		snprintf(g->rt_refuse_msg, sizeof g->rt_refuse_msg, "%s", msg);
		g->rt_refuse_rank = rc->rank;
		g->rt_refuse_at = clock_now_ms() + ROOT_RETRY_SETTLE_MS;
		return;
	}
	g->m[rc->rank].rt_ready = 1;
	for (int i = 0; i < g->nranks; i++)
		if (!g->m[i].rt_ready)
			return;
	log_info("root: all %d ranks stopped at seq %" PRIu64 ": retry %u", g->nranks, seq,
	    g->rt_epoch);
	root_retry_send(g, WIRE_RETRY_GO);
	g->rt_active = 0;
}

void
root_coord_member_gone(struct root *root, struct root_group *g, int rank)
{
	(void)rank;
	if (g->rt_active)
		(void)root_retry_gone(g);
	root_regroup_check(root, g);
}

void
root_coord_tick(struct root *root, struct root_group *g, uint64_t now)
{
	char msg[WIRE_MSG_LEN];
	int late = -1;

	(void)root;
	if (g->rt_active && g->rt_refuse_at != 0 && now >= g->rt_refuse_at) {
		/* No death came to explain it: the rank that could not run the op again is named. */
		snprintf(msg, sizeof msg, "%s", g->rt_refuse_msg);
		root_retry_refuse(g, COLL_EPEER, g->rt_refuse_rank, msg);
	}
	if (g->rt_active && now >= g->rt_deadline) {
		for (int i = 0; i < g->nranks && late < 0; i++)
			if (!g->m[i].rt_ready)
				late = i;
		snprintf(msg, sizeof msg, "retry of seq %" PRIu64 " refused: rank %d (host %s) did "
		    "not stop within %d s", g->rt_seq, late, late >= 0 ? g->m[late].e.host : "?",
		    ROOT_RETRY_WAIT_MS / 1000);
		root_retry_refuse(g, COLL_ETIMEDOUT, late, msg);
	}
	late = -1;
	if (g->rg_kind != 0 && now >= g->rg_deadline) {
		for (int i = 0; i < g->nranks && late < 0; i++)
			if (g->m[i].state == RM_JOINED && !g->rg_excl[i] && !g->m[i].rg_asked)
				late = i;
		snprintf(msg, sizeof msg, "rank %d (host %s) never asked to %s within %d s: every "
		    "surviving rank must call it", late, late >= 0 ? g->m[late].e.host : "?",
		    g->rg_kind == WIRE_RG_SHRINK ? "shrink" : "split", root->join_timeout_ms / 1000);
		root_regroup_fail(g, COLL_ETIMEDOUT, msg);
	}
}
