/*
 * New communicators from an old one: shrink and split ask the root
 * (root_coord.c), which agrees for everyone and names a derived communicator
 * id; each member then joins it through the same root like any init, so no
 * new unique id is needed. Grow makes a new root in this process.
 *
 * In non-blocking mode the new communicator comes back at once and its
 * comm_get_async_error() says COLL_EINPROGRESS until the regroup and the join
 * are done.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm_impl.h"
#include "log.h"
#include "ranges.h"
#include "root.h"
#include "xmalloc.h"

struct regroup {
	struct comm *old;
	struct comm *c;			/* the new one, rank and size not known yet */
	struct wire_regroup req;
	struct coll_config cfg;
};

static int
regroup_answered(struct comm *c)
{
	return c->rg.have || atomic_load(&c->root_lost);
}

/* Ask the root and wait for its answer; *d is the answer (free d->excl). */
static int
regroup_ask(struct comm *old, struct comm *c, const struct wire_regroup *req,
    struct wire_regroup_done *d)
{
	uint64_t dl;
	size_t cap = 32 + (size_t)req->nexcl * 4;
	uint8_t *buf = xmalloc(cap);
	struct wire_buf b;
	int r;

	pthread_mutex_lock(&old->lock);
	old->rg.have = 0;
	pthread_mutex_unlock(&old->lock);
	wire_buf_init(&b, buf, cap);
	wire_regroup_encode(&b, req);
	r = comm_root_send(old, WIRE_REGROUP, buf, (uint32_t)b.off);
	free(buf);
	/*
	 * The root gives the slowest rank its join timeout; wait a little longer.
	 * The wait is on the old communicator: look at the new one's abort every
	 * 20 ms, so that comm_abort of either stops it.
	 */
	dl = comm_deadline(old) + 5000;
	while (r == COLL_OK && !atomic_load(&c->aborted)) {
		uint64_t slice = clock_now_ms() + 20;

		r = comm_wait(old, regroup_answered, slice < dl ? slice : dl);
		if (r != COLL_ETIMEDOUT || clock_now_ms() >= dl)
			break;
		r = COLL_OK;	/* a slice ran out, not the wait */
	}
	if (r == COLL_OK && atomic_load(&c->aborted) && !old->rg.have)
		r = COLL_EABORTED;
	pthread_mutex_lock(&old->lock);
	if (r == COLL_OK && old->rg.have) {
		/* Answered: when this one is destroyed, it leaves; it did not die. */
		old->regrouped = 1;
		*d = old->rg.d;
		old->rg.d.excl = NULL;
		old->rg.have = 0;
	} else if (r == COLL_OK) {
		r = COLL_EROOTLOST;
	}
	pthread_mutex_unlock(&old->lock);
	return r;
}

static void
regroup_log(struct comm *old, const struct wire_regroup_done *d)
{
	int *v = xcalloc(d->nexcl ? d->nexcl : 1, sizeof *v);
	char list[160];

	for (uint32_t i = 0; i < d->nexcl; i++)
		v[i] = (int)d->excl[i];
	ranges_fold(v, (int)d->nexcl, list, sizeof list);
	log_info("rank %d of %016" PRIx64 " -> rank %d of %u in %016" PRIx64 "; left out: %s",
	    old->rank, old->commid, d->rank, d->nranks, d->commid, d->nexcl ? list : "none");
	free(v);
}

/* Ask, then join the new communicator (its object exists: rank and size unknown till now). */
static int
regroup_run(struct regroup *rg)
{
	struct comm *old = rg->old, *c = rg->c;
	struct wire_regroup_done d = { 0 };
	int r, old_rank = old->rank, root_lost;

	r = regroup_ask(old, c, &rg->req, &d);
	if (r == COLL_OK && d.code == COLL_OK && d.rank >= 0)
		regroup_log(old, &d);
	root_lost = atomic_load(&old->root_lost);
	/* From here the old communicator is not touched: its destroy may go on. */
	atomic_fetch_sub(&old->regroups, 1);
	if (r != COLL_OK) {
		r = comm_fail(c, r, "rank %d: no answer from the root to a %s request: %s",
		    old_rank, rg->req.kind == WIRE_RG_SHRINK ? "shrink" : "split",
		    r == COLL_EROOTLOST || root_lost ? "the root service is "
		    "gone, nothing can be agreed" : coll_strerror(r));
	} else if (d.code != COLL_OK) {
		r = comm_fail(c, d.code, "rank %d: %s refused: %s", old_rank,
		    rg->req.kind == WIRE_RG_SHRINK ? "shrink" : "split", d.msg);
	} else if (d.rank < 0) {
		r = COLL_ENOTFOUND;	/* left out: no new communicator for this rank */
	}
	if (r != COLL_OK) {
		free(d.excl);
		atomic_store(&c->state, r);
		return r;
	}
	free(d.excl);
	comm_setup(c, d.commid, d.rank, (int)d.nranks);
	return comm_start(c, 0);
}

static void *
regroup_thread(void *arg)
{
	struct regroup *rg = arg;

	regroup_run(rg);
	free(rg->req.excl);
	free(rg);
	return NULL;
}

/* Run rg here (blocking) or in a thread (non-blocking); *out gets the new communicator. */
static int
regroup_start(struct regroup *rg, struct comm **out)
{
	struct comm *c = rg->c;
	int r;

	*out = c;
	if (rg->cfg.blocking) {
		r = regroup_run(rg);
		free(rg->req.excl);
		free(rg);
		if (r == COLL_ENOTFOUND) {
			comm_destroy(c);
			*out = NULL;
			return COLL_OK;
		}
		return r;
	}
	/* The comm's own init thread: destroy waits for it. */
	r = pthread_create(&c->init_thread, NULL, regroup_thread, rg);
	c->init_started = r == 0;
	if (r != 0) {
		atomic_fetch_sub(&rg->old->regroups, 1);
		free(rg->req.excl);
		free(rg);
		return comm_fail(c, COLL_ESYS, "cannot start a thread for the regroup");
	}
	return COLL_OK;
}

static int
regroup_check(struct comm *old, const char *what)
{
	if (old == NULL)
		return COLL_EINVAL;
	if (atomic_load(&old->aborted))
		return comm_fail(old, COLL_EABORTED, "rank %d: cannot %s an aborted communicator",
		    old->rank, what);
	if (atomic_load(&old->root_lost))
		return comm_fail(old, COLL_EROOTLOST, "rank %d: cannot %s: the root service is "
		    "gone, so the survivors cannot agree; start a new job", old->rank, what);
	if (old->book == NULL)
		return comm_fail(old, COLL_EINVAL, "rank %d: cannot %s a communicator that never "
		    "finished joining", old->rank, what);
	if (old->nroots > 1)
		return comm_fail(old, COLL_EINVAL, "rank %d: cannot %s a communicator made from "
		    "several unique ids: the survivors agree at one root; make it from one id "
		    "(comm_init) to %s it", old->rank, what, what);
	return COLL_OK;
}

static struct regroup *
regroup_new(struct comm *old, const struct coll_config *cfg)
{
	static const struct coll_config defaults = COLL_CONFIG_INIT;
	struct regroup *rg = xcalloc(1, sizeof *rg);

	rg->old = old;
	rg->cfg = cfg ? *cfg : defaults;
	if (rg->cfg.timeout_ms <= 0)
		rg->cfg.timeout_ms = old->timeout_ms;
	if (rg->cfg.ifname == NULL)
		rg->cfg.ifname = old->ifname;
	rg->c = comm_new(&old->uid, 0, 0, 0, &rg->cfg);
	/* A root that lives in this process serves the new communicator too. */
	rg->c->shared_root = comm_root_ref(old->shared_root);
	atomic_fetch_add(&old->regroups, 1);
	return rg;
}

int
comm_shrink(struct comm *old, const int *exclude, int nexclude, struct comm **out,
    const struct coll_config *cfg, int flags)
{
	struct regroup *rg;
	int r;

	*out = NULL;
	if ((r = regroup_check(old, "shrink")) != COLL_OK)
		return r;
	if (nexclude < 0 || nexclude > old->nranks || (nexclude > 0 && exclude == NULL) ||
	    (flags != COLL_SHRINK_DEFAULT && flags != COLL_SHRINK_ABORT))
		return COLL_EINVAL;
	for (int i = 0; i < nexclude; i++) {
		if (exclude[i] < 0 || exclude[i] >= old->nranks)
			return comm_fail(old, COLL_EINVAL, "shrink: rank %d is not in 0..%d",
			    exclude[i], old->nranks - 1);
		if (exclude[i] == old->rank)
			return COLL_OK;		/* this rank leaves: nothing to join */
	}
	if (flags == COLL_SHRINK_DEFAULT && atomic_load(&old->job_pending))
		return comm_fail(old, COLL_EBUSY, "rank %d: shrink: an op is in flight: wait for it "
		    "(comm_get_async_error), or shrink with COLL_SHRINK_ABORT", old->rank);
	if (flags == COLL_SHRINK_DEFAULT && atomic_load(&old->state) != COLL_OK)
		return comm_fail(old, COLL_EINVAL, "rank %d: shrink: the communicator failed (%s): "
		    "shrink it with COLL_SHRINK_ABORT", old->rank, comm_last_error(old));
	if (flags == COLL_SHRINK_ABORT) {
		/* Ops in flight in other threads return now; the root connection stays up. */
		atomic_store(&old->cancelled, 1);
		comm_interrupt(old);
	}
	rg = regroup_new(old, cfg);
	rg->req = (struct wire_regroup){ .kind = WIRE_RG_SHRINK, .nexcl = (uint32_t)nexclude };
	rg->req.excl = xcalloc((size_t)nexclude + 1, sizeof *rg->req.excl);
	for (int i = 0; i < nexclude; i++)
		rg->req.excl[i] = (uint32_t)exclude[i];
	return regroup_start(rg, out);
}

int
comm_split(struct comm *old, int color, int key, struct comm **out,
    const struct coll_config *cfg)
{
	struct regroup *rg;
	int r;

	*out = NULL;
	if ((r = regroup_check(old, "split")) != COLL_OK)
		return r;
	if (color < COLL_SPLIT_NOCOLOR)
		return comm_fail(old, COLL_EINVAL, "split: color %d: use a color >= 0, or "
		    "COLL_SPLIT_NOCOLOR", color);
	if (atomic_load(&old->state) != COLL_OK)
		return comm_fail(old, COLL_EINVAL, "rank %d: split: the communicator failed (%s): "
		    "shrink it first", old->rank, comm_last_error(old));
	rg = regroup_new(old, cfg);
	rg->req = (struct wire_regroup){ .kind = WIRE_RG_SPLIT, .color = color, .key = key };
	rg->req.excl = xcalloc(1, sizeof *rg->req.excl);
	if (color == COLL_SPLIT_NOCOLOR && !rg->cfg.blocking) {
		/* Known here: no communicator for this rank. The root still counts our answer. */
		rg->cfg.blocking = 1;
		r = regroup_start(rg, out);
		comm_destroy(*out);
		*out = NULL;
		return r;
	}
	return regroup_start(rg, out);
}

int
comm_grow_uid(struct comm *c, int nranks, struct coll_uid *uid)
{
	struct net_addr addr;
	int r;

	if (c == NULL || uid == NULL || c->book == NULL || nranks < c->nranks ||
	    nranks > COLL_MAX_RANKS)
		return COLL_EINVAL;
	if (c->grow_root != NULL)
		return comm_fail(c, COLL_EINVAL, "rank %d: a grow is already under way: join it "
		    "with comm_grow before making another id", c->rank);
	/* The new root listens where this rank does: the others can reach it there. */
	addr = c->book[c->rank].addr;
	net_addr_set_port(&addr, 0);
	if ((r = root_start(&c->grow_root, &addr, nranks, c->timeout_ms, uid)) != COLL_OK)
		return comm_fail(c, r, "rank %d: cannot start a root for the grown communicator: "
		    "%s", c->rank, coll_strerror(r));
	return COLL_OK;
}

int
comm_grow(struct comm *c, int nranks, const struct coll_uid *uid, struct comm **out,
    const struct coll_config *cfg)
{
	int r;

	*out = NULL;
	if (c == NULL || uid == NULL || nranks < c->nranks)
		return COLL_EINVAL;
	if ((r = comm_init(out, nranks, uid, c->rank, cfg)) != COLL_OK && *out == NULL)
		return r;
	/* The grown communicator's failure detector lives as long as it (and what it makes) does. */
	if (c->grow_root != NULL) {
		(*out)->shared_root = comm_root_new(c->grow_root);
		c->grow_root = NULL;
	}
	return r;
}
