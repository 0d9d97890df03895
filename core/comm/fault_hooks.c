/*
 * Where COLL_FAULT's faults happen (the plan and its parser are fault.c).
 * The plan is the process's, read once, so that a fault fires at most once
 * per process. RANK names the process by its rank in the first communicator
 * it joined (the job's rank, as collrun numbers it), so that a fault stays
 * with the same process when a shrink renumbers the survivors; SEQ counts
 * the ops of whichever communicator runs them.
 *
 * These are the only places where the core exits or kills its own process:
 * the user asked for exactly that, to rehearse recovery.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"
#include "kind.h"
#include "log.h"

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fault_plan fault_plan;
static int fault_loaded;
static int fault_self = -1;

int
fault_load(int rank, char *err, size_t errlen)
{
	const char *spec = getenv("COLL_FAULT");
	int r = COLL_OK;

	pthread_mutex_lock(&fault_lock);
	if (fault_self < 0)
		fault_self = rank;
	if (!fault_loaded && spec != NULL && *spec != '\0') {
		r = fault_parse(spec, &fault_plan, err, errlen);
		if (r == COLL_OK)
			log_warn("fault injection armed: COLL_FAULT=%s", spec);
	}
	fault_loaded = r == COLL_OK;
	pthread_mutex_unlock(&fault_lock);
	return r;
}

static struct fault *
fault_next(struct comm *c, unsigned mask)
{
	struct fault *f;

	pthread_mutex_lock(&fault_lock);
	f = fault_plan.n > 0 ? fault_take(&fault_plan, fault_self, c->seq, mask) : NULL;
	pthread_mutex_unlock(&fault_lock);
	if (f != NULL)
		log_warn("COLL_FAULT: %s at %s seq %llu", fault_action_name(f->action),
		    comm_op_name(c), (unsigned long long)c->seq);
	return f;
}

void
fault_at_begin(struct comm *c)
{
	struct fault *f = fault_next(c, FAULT_MASK(FAULT_EXIT) | FAULT_MASK(FAULT_KILL) |
	    FAULT_MASK(FAULT_HANG) | FAULT_MASK(FAULT_DELAY));
	struct timespec ts;

	if (f == NULL)
		return;
	switch (f->action) {
	case FAULT_EXIT:
		_exit(1);
	case FAULT_KILL:
		raise(SIGKILL);
		break;
	case FAULT_HANG:
		for (;;)
			pause();
	case FAULT_DELAY:
		ts = (struct timespec){ f->delay_ms / 1000, (long)(f->delay_ms % 1000) * 1000000 };
		while (nanosleep(&ts, &ts) == -1)
			;
		break;
	default:
		break;
	}
}

int
fault_in_xfer(struct comm *c, int fd, uint8_t *hdr)
{
	struct fault *f = fault_next(c, FAULT_MASK(FAULT_CLOSE) | FAULT_MASK(FAULT_CORRUPT));

	if (f == NULL)
		return COLL_OK;
	if (f->action == FAULT_CLOSE)
		/*
		 * Our side ends: bytes of earlier ops still queued reach the peer
		 * first, then it sees the end, and our next send fails. Both ends
		 * see the link break in this op, and no earlier op is damaged.
		 */
		shutdown(fd, SHUT_WR);
	else
		hdr[0] ^= 0xff;			/* the receiver's header check must catch it */
	return COLL_OK;
}
