/*
 * Operator retry, after HCCL's: when a data link breaks while both of its
 * ends live, the op is run again on fresh connections, but only if every
 * rank of the communicator stopped at the same sequence number with its
 * input intact. The root runs each round (root_coord.c): a rank whose link
 * broke asks, the root asks every rank where it is, and answers all of them
 * with go or refuse. Refusals carry the reason: a rank died, a rank had
 * already completed the op, an in-place input was partly overwritten, or
 * the retries ran out (COLL_RETRY_MAX).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_impl.h"
#include "log.h"

enum { RETRY_READY = 0, RETRY_NOT_INTACT = 1, RETRY_COMPLETED = 2 };

static void
retry_send(struct comm *c, uint8_t type, uint64_t seq, int n, const uint32_t *v)
{
	uint8_t buf[32];
	struct wire_buf w;

	wire_buf_init(&w, buf, sizeof buf);
	wire_put_u64(&w, seq);
	for (int i = 0; i < n; i++)
		wire_put_u32(&w, v[i]);
	(void)comm_root_send(c, type, buf, (uint32_t)w.off);
}

/* Service thread: a query, a go-ahead or a refusal from the root. */
void
retry_on_root(struct comm *c, uint8_t type, const uint8_t *p, uint32_t len)
{
	struct wire_note note;
	struct wire_buf b;
	uint64_t seq;
	uint32_t epoch = 0;
	int completed = 0, past_refused = 0;

	wire_buf_init(&b, (void *)p, len);
	seq = wire_get_u64(&b);
	if (type != WIRE_RETRY_REFUSE)
		epoch = wire_get_u32(&b);
	if (b.err || (type == WIRE_RETRY_REFUSE ?
	    wire_note_decode(p + 8, len - 8, &note) != COLL_OK : b.off != len)) {
		log_warn("the root sent a malformed retry message");
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (type == WIRE_RETRY_QUERY) {
		c->rt.query_seq = seq;
		c->rt.query_epoch = epoch;
		c->rt.answered = 0;
		c->rt.verdict = 0;
		/* Done with seq, or past it: this rank cannot run it again. */
		completed = c->seq > seq || (c->seq == seq && !c->in_op);
		if (completed)
			c->rt.answered = 1;
		else if (c->in_op && c->seq == seq)
			atomic_store(&c->rt_pending, 1);
	} else if (c->in_op && c->rt.verdict != 0 && c->rt.verdict_seq == c->seq &&
	    seq != c->seq) {
		/* Keep the verdict of the op this rank is in; a later op's is not ours yet. */
	} else {
		c->rt.verdict = type == WIRE_RETRY_GO ? 1 : 2;
		c->rt.verdict_seq = seq;
		c->rt.verdict_epoch = epoch;
		if (type == WIRE_RETRY_REFUSE) {
			snprintf(c->rt.why, sizeof c->rt.why, "%s", note.msg);
			c->rt.why_code = note.code;
			past_refused = c->seq > seq || (c->seq == seq && !c->in_op);
		}
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (completed)
		retry_send(c, WIRE_RETRY_STATE, seq, 2, (uint32_t[]){ epoch, RETRY_COMPLETED });
	/* Only the op in question is stopped; a later one sees the query when it begins. */
	if (atomic_load(&c->rt_pending) || type != WIRE_RETRY_QUERY)
		comm_interrupt(c);
	/* Refused while this rank is already past that op: its next op can only hang. */
	if (past_refused)
		comm_verdict_set(c, note.code, -1, note.msg);
}

static int
retry_asked(struct comm *c)
{
	return (c->rt.query_seq == c->seq && !c->rt.answered) ||
	    (c->rt.verdict != 0 && c->rt.verdict_seq == c->seq) || atomic_load(&c->failed);
}

static int
retry_decided(struct comm *c)
{
	return (c->rt.verdict != 0 && c->rt.verdict_seq == c->seq) || atomic_load(&c->failed);
}

/* Drain the interrupt left by the round, unless something else still stands. */
static void
retry_clear(struct comm *c, uint32_t epoch)
{
	uint64_t v;

	peer_reset(c, epoch);
	pthread_mutex_lock(&c->lock);
	c->rt.verdict = 0;
	/* A query of a newer round may already be in: it stays. */
	if (c->rt.query_epoch <= epoch) {
		c->rt.query_seq = 0;
		atomic_store(&c->rt_pending, 0);
	}
	pthread_mutex_unlock(&c->lock);
	if (!atomic_load(&c->aborted) && !atomic_load(&c->failed) && !atomic_load(&c->cancelled))
		while (read(c->intr_fd, &v, sizeof v) == (ssize_t)sizeof v)
			;
	c->link_peer = -1;
	c->op_recv_bytes = 0;
}

static int
retry_refused(struct comm *c, int peer)
{
	char why[COLL_ERR_LEN];
	int code;

	pthread_mutex_lock(&c->lock);
	snprintf(why, sizeof why, "%s", c->rt.why);
	code = c->rt.why_code < 0 ? c->rt.why_code : COLL_EPEER;
	pthread_mutex_unlock(&c->lock);
	/* A death is told the usual way, with the pid, once the root's notice is in. */
	if (code == COLL_ERANKDEAD)
		return comm_fail_peer(c, peer >= 0 ? peer : 0, COLL_EPEER, "exchanging with");
	if (peer >= 0)
		code = comm_fail(c, code, "rank %d: %s seq %" PRIu64 " lost its link to rank %d "
		    "(host %s) and was not retried: %s", c->rank, comm_op_name(c), c->seq, peer,
		    comm_host(c, peer), why);
	else
		code = comm_fail(c, code, "rank %d: %s seq %" PRIu64 " stopped for a retry that "
		    "was refused: %s", c->rank, comm_op_name(c), c->seq, why);
	atomic_store(&c->state, code);
	return code;
}

/*
 * A retry is worth telling whoever checks the cluster (collcheck): the op
 * came out right, but a link broke under it. Written only here, on a retry:
 * a rerun of the op already last in the ring counts there.
 */
void
retry_log_add(struct comm *c, int peer)
{
	struct comm_retry *e;

	pthread_mutex_lock(&c->lock);
	e = c->rlog_total > 0 ? &c->rlog[(c->rlog_total - 1) % COLL_RETRY_LOG] : NULL;
	if (e == NULL || e->seq != c->seq || e->kind != c->kind) {
		e = &c->rlog[c->rlog_total++ % COLL_RETRY_LOG];
		*e = (struct comm_retry){ .seq = c->seq, .kind = c->kind, .peer = -1,
		    .wall_ns = clock_wall_ns() };
	}
	e->count++;
	/* The first broken link this rank saw names it; a later rerun's may differ. */
	if (e->peer < 0 && peer >= 0 && peer < c->nranks)
		e->peer = peer;
	pthread_mutex_unlock(&c->lock);
}

int
retry_op(struct comm *c, int rc, int intact)
{
	int peer = c->link_peer, r, state;

	/* From here this function says what happened to the link: nobody else names it. */
	c->link_peer = -1;
	uint64_t dl = comm_deadline(c);
	uint32_t epoch;
	struct timespec pause;

	if (!(rc == COLL_ERETRY || (rc == COLL_EPEER && peer >= 0)))
		return rc;
	pthread_mutex_lock(&c->lock);
	state = c->rt.verdict != 0 && c->rt.verdict_seq == c->seq;
	pthread_mutex_unlock(&c->lock);
	if (rc == COLL_EPEER && !state) {
		log_warn("rank %d: link to rank %d broke in %s seq %" PRIu64 ": asking to retry",
		    c->rank, peer, comm_op_name(c), c->seq);
		retry_send(c, WIRE_RETRY_REQ, c->seq, 3, (uint32_t[]){ c->epoch,
		    (uint32_t)c->op_retries, (uint32_t)c->retry_max });
	}
	if ((r = comm_wait(c, retry_asked, dl)) == COLL_OK && !retry_decided(c)) {
		pthread_mutex_lock(&c->lock);
		c->rt.answered = 1;
		epoch = c->rt.query_epoch;
		pthread_mutex_unlock(&c->lock);
		state = intact ? RETRY_READY : RETRY_NOT_INTACT;
		retry_send(c, WIRE_RETRY_STATE, c->seq, 2, (uint32_t[]){ epoch, (uint32_t)state });
		r = comm_wait(c, retry_decided, dl);
	}
	/* A refusal says why; a rank that died after it (one that gave up) is not the reason. */
	pthread_mutex_lock(&c->lock);
	state = c->rt.verdict_seq == c->seq ? c->rt.verdict : 0;
	pthread_mutex_unlock(&c->lock);
	if (state == 2)
		return retry_refused(c, peer);
	if (state != 1 || atomic_load(&c->failed) || atomic_load(&c->aborted) || r != COLL_OK)
		return comm_fail_peer(c, peer >= 0 ? peer : 0, r == COLL_ETIMEDOUT ||
		    r == COLL_EABORTED ? r : COLL_EPEER, "exchanging with");
	epoch = c->rt.verdict_epoch;
	retry_clear(c, epoch);
	c->op_retries++;
	/* The peer whose link broke here (-1: this rank was asked to stop, its links whole). */
	status_retry_peer(&c->status, epoch, peer);
	retry_log_add(c, peer);
	log_warn("rank %d: retrying %s seq %" PRIu64 " (retry %u of at most %d)", c->rank,
	    comm_op_name(c), c->seq, epoch, c->retry_max);
	pause = (struct timespec){ c->retry_interval_ms / 1000,
	    (long)(c->retry_interval_ms % 1000) * 1000000 };
	nanosleep(&pause, NULL);
	return COLL_OK;
}
