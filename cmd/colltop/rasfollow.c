/*
 * colltop --ras: NCCL RAS's MONITOR stream (NCCL 2.29 on) followed on this
 * host, so that a process of the job declared dead shows among the alerts
 * the moment RAS knows it, before any page goes still. RAS spans the whole
 * job, so the front end needs only be on one of its hosts.
 *
 * The service is NCCL_RAS_ADDR's, else localhost:28028, and it is spoken to
 * only when the socket that takes the connection is held by a process of a
 * watched NCCL job's rank on this host (as collstack's check: any user can
 * bind the port first). Until there is one, and after the stream ends, the
 * thread tries again every RASFOLLOW_RETRY_MS; how it goes is ras_note.
 *
 * That job, and its user, are said with every event: anyone can run a
 * process that looks like an NCCL rank and serve its own stream. A death is
 * an alert only when the process is a rank of that same job as colltop sees
 * it; any other is a dim note, so that a stranger cannot put a death in
 * another user's job on root's screen.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "ras.h"
#include "ras_monitor.h"
#include "status.h"
#include "top.h"
#include "xmalloc.h"

#define RASFOLLOW_RETRY_MS 5000
#define RASFOLLOW_PIDS 256	/* ranks' processes on this host looked at */

struct rasfollow {
	struct top_front *f;
	pthread_t t;
	atomic_int stop;
	char addr[256];
	char host[80];
	struct rasmon mon;
	char job[64], user[64];	/* whose rank serves the stream followed */
};

/*
 * Newest first. When full, the oldest event that is no death makes room, so
 * that a death stays in view while later notes come; the oldest of all only
 * when every one kept is a death.
 */
void
rasfollow_post(struct top_model *m, const char *text, int dead)
{
	int gone = m->nras < TOP_RAS_EVENTS ? m->nras : TOP_RAS_EVENTS - 1;

	if (m->nras == TOP_RAS_EVENTS)
		for (int i = TOP_RAS_EVENTS - 1; i >= 0; i--)
			if (!m->ras[i].dead) {
				gone = i;
				break;
			}
	memmove(&m->ras[1], &m->ras[0], (size_t)gone * sizeof m->ras[0]);
	snprintf(m->ras[0].text, sizeof m->ras[0].text, "%s", text);
	m->ras[0].dead = dead;
	if (m->nras < TOP_RAS_EVENTS)
		m->nras++;
}

static void
rasfollow_note(struct rasfollow *r, const char *text)
{
	front_lock_model(r->f);
	snprintf(r->f->m.ras_note, sizeof r->f->m.ras_note, "NCCL RAS: %.240s", text);
	r->f->dirty = 1;
	front_unlock_model(r->f);
}

/* The processes of watched NCCL job j's ranks on this host, from the model; their count. */
static int
rasfollow_pids(struct rasfollow *r, int j, pid_t *pids)
{
	const struct top_model *m = &r->f->m;
	int n = 0;

	for (int k = 0; k < m->jobs[j].nr && n < RASFOLLOW_PIDS; k++) {
		const struct top_jobrank *x = &m->jobs[j].r[k];

		/* Not a rank whose process is gone ('?'): its pid may be anyone's now. */
		if (x->source == STATUS_SRC_NCCL && x->pid > 0 && x->proc != '?' &&
		    strcmp(x->host, r->host) == 0)
			pids[n++] = x->pid;
	}
	return n;
}

/* Is pid a rank of the job followed, on any host colltop watches? Under the model's lock. */
static int
rasfollow_is_rank(const struct rasfollow *r, int pid)
{
	const struct top_model *m = &r->f->m;

	for (int j = 0; j < m->njobs; j++) {
		if (strcmp(m->jobs[j].jobid, r->job) != 0 || strcmp(m->jobs[j].user, r->user) != 0)
			continue;
		for (int k = 0; k < m->jobs[j].nr; k++)
			if (m->jobs[j].r[k].pid == pid)
				return 1;
	}
	return 0;
}

#define RASFOLLOW_EV 8
#define RASFOLLOW_CHUNK 40	/* the shortest record rasmon takes, "[1]A:\n", is 6 bytes */

static void rasfollow_chunk(struct rasfollow *r, const char *buf, size_t len);

/* Each event read into the model; deaths are alerts, the rest kept as notes. */
static void
rasfollow_events(struct rasfollow *r, const char *buf, size_t len)
{
	/*
	 * Fed RASFOLLOW_CHUNK bytes at a time: no record is shorter than 6
	 * bytes, so a piece completes at most 7 (one begun before it), within
	 * RASFOLLOW_EV: none is dropped for room.
	 */
	for (size_t off = 0; off < len; off += RASFOLLOW_CHUNK)
		rasfollow_chunk(r, buf + off, len - off < RASFOLLOW_CHUNK ? len - off :
		    RASFOLLOW_CHUNK);
}

static void
rasfollow_chunk(struct rasfollow *r, const char *buf, size_t len)
{
	struct rasmon_event ev[RASFOLLOW_EV];
	char text[320], who[128];
	int n = rasmon_feed(&r->mon, buf, len, ev, RASFOLLOW_EV), dead;

	front_lock_model(r->f);
	for (int i = 0; i < n; i++) {
		if (ev[i].pid > 0)
			snprintf(who, sizeof who, "process %d on %s%s%s", ev[i].pid, ev[i].host,
			    ev[i].gpus[0] ? " (GPU " : "", ev[i].gpus[0] ? ev[i].gpus : "");
		else
			snprintf(who, sizeof who, "%s", ev[i].host[0] ? ev[i].host : "a peer");
		dead = ev[i].kind == RASMON_PEER_DEAD && ev[i].pid > 0 &&
		    rasfollow_is_rank(r, ev[i].pid);
		/* What decides how it is shown comes first: a screen's line may cut the tail. */
		snprintf(text, sizeof text, "NCCL RAS of job %.40s (%.24s): %s%s: %s%s%s%s",
		    r->job, r->user, ev[i].name, ev[i].kind == RASMON_PEER_DEAD && !dead ?
		    " (not a rank of that job colltop sees)" : "", who, ev[i].pid > 0 &&
		    ev[i].gpus[0] ? ")" : "", ev[i].when[0] ? " at " : "", ev[i].when);
		rasfollow_post(&r->f->m, text, dead);
	}
	if (n > 0)
		r->f->dirty = 1;
	front_unlock_model(r->f);
}

/* Try job j's ranks on this host as the stream's server; the socket, or -1 (why said). */
static int
rasfollow_try(struct rasfollow *r, int j, char *rest, size_t *restlen, char *why, size_t len)
{
	pid_t *pids = xcalloc(RASFOLLOW_PIDS, sizeof *pids);
	int n, fd = -1;

	front_lock_model(r->f);
	/* A frame may have compacted the jobs since njobs was read. */
	n = j < r->f->m.njobs ? rasfollow_pids(r, j, pids) : 0;
	if (n > 0) {
		snprintf(r->job, sizeof r->job, "%s", r->f->m.jobs[j].jobid);
		snprintf(r->user, sizeof r->user, "%s", r->f->m.jobs[j].user);
	}
	front_unlock_model(r->f);
	if (n > 0)
		fd = ras_monitor_open(r->addr, pids, n, 2000, rest, 4096, restlen, why, len);
	free(pids);
	return fd;
}

/* Connect and ask for MONITOR, trying each watched job in turn; the socket, or -1. */
static int
rasfollow_connect(struct rasfollow *r)
{
	char why[256] = "", rest[4096], note[512];
	size_t restlen = 0;
	int fd = -1, njobs;

	front_lock_model(r->f);
	njobs = r->f->m.njobs;
	front_unlock_model(r->f);
	for (int j = 0; j < njobs && fd < 0; j++)
		fd = rasfollow_try(r, j, rest, &restlen, why, sizeof why);
	if (fd >= 0)
		snprintf(note, sizeof note, "following MONITOR at %s, served by job %.40s (%.24s)",
		    r->addr, r->job, r->user);
	else if (why[0] == '\0')
		snprintf(note, sizeof note, "waiting for a watched NCCL job's rank on %s (its RAS "
		    "service is followed, at %s)", r->host, r->addr);
	else
		snprintf(note, sizeof note, "%s; trying again", why);
	rasfollow_note(r, note);
	if (fd >= 0) {
		rasmon_init(&r->mon);
		rasfollow_events(r, rest, restlen);
	}
	return fd;
}

static void *
rasfollow_thread(void *arg)
{
	struct rasfollow *r = arg;
	uint64_t retry_at = 0;
	char buf[4096];
	int fd = -1;

	while (!atomic_load(&r->stop)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (fd < 0 && clock_now_ms() >= retry_at && (fd = rasfollow_connect(r)) < 0)
			retry_at = clock_now_ms() + RASFOLLOW_RETRY_MS;
		if (fd < 0 || poll(&p, 1, 200) <= 0) {
			if (fd < 0)
				poll(NULL, 0, 200);
			continue;
		}
		if ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
			rasfollow_events(r, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		close(fd);
		fd = -1;
		retry_at = clock_now_ms() + RASFOLLOW_RETRY_MS;
		rasfollow_note(r, "the MONITOR stream ended (the job, or this host's first NCCL "
		    "process, ended); trying again");
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

struct rasfollow *
rasfollow_start(struct top_front *f, char *err, size_t len)
{
	struct rasfollow *r = xcalloc(1, sizeof *r);
	const char *addr = getenv("NCCL_RAS_ADDR");

	r->f = f;
	snprintf(r->addr, sizeof r->addr, "%s", addr != NULL && *addr != '\0' ? addr : RAS_DEFAULT);
	if (gethostname(r->host, sizeof r->host - 1) != 0)
		r->host[0] = '\0';
	atomic_init(&r->stop, 0);
	if (pthread_create(&r->t, NULL, rasfollow_thread, r) != 0) {
		snprintf(err, len, "--ras: cannot start its thread");
		free(r);
		return NULL;
	}
	return r;
}

void
rasfollow_stop(struct rasfollow *r)
{
	if (r == NULL)
		return;
	atomic_store(&r->stop, 1);
	pthread_join(r->t, NULL);
	free(r);
}
