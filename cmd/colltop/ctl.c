/*
 * The control connection: rank 0 connects to the front end at the address of
 * the job's root (COLL_UNIQUE_ID, which every rank is handed) and the port the
 * front end put on the workers' command line, and both prove they hold the
 * job's secret with the core's handshake before a byte is read. The front
 * end then sends text lines: "interval MS" and "quit". Rank 0 reads them
 * without waiting, once an interval, and hands them on in the broadcast that
 * ends each interval.
 *
 * The secret never travels on a command line (it would show in ps): only the
 * port does.
 *
 * The front end's side never runs a handshake where the screen waits: a
 * control thread accepts (non-blocking) and hands each connection to a
 * thread of its own, which has CTL_ACCEPT_MS to prove it holds the secret;
 * at most CTL_SHAKES are in flight. Anyone who can reach the port can
 * connect and then say nothing, or half a header, or its own AUTH_FAIL: that
 * costs a thread for a while, never the screen or its keys, and its words
 * are printed only cleaned. Rank 0's proven connection is handed to the
 * screen's thread through ctl_server_take.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "ifsel.h"
#include "msg.h"
#include "net.h"
#include "top.h"
#include "uid.h"
#include "wire.h"
#include "xmalloc.h"

#define CTL_AUTH_MS 3000
#define CTL_ACCEPT_MS 2000	/* a handshake's thread waits this long at most on a stranger */
#define CTL_SHAKES 8		/* handshakes in flight */
#define CTL_SHAKES_STR "8"
#define CTL_THREADS (2 * CTL_SHAKES)	/* with those shut down and still ending */
#define CTL_BACKLOG 16
#define CTL_BACKOFF_MS 100	/* out of fds: accept again after this */

struct ctl_server {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a handshake thread ended */
	pthread_t thread;
	int lfd, wake[2];
	int stop;
	int have_uid;
	struct coll_uid uid;
	struct {
		int fd;		/* -1: free */
		uint64_t since;
	} slot[CTL_SHAKES];
	int threads;		/* handshake threads alive */
	int ready;		/* rank 0's authenticated connection, not taken yet; -1 none */
	struct ctl_refused refused;
};

struct ctl_shake {
	struct ctl_server *s;
	int slot, fd;
};

/*
 * Where the workers reach us: loopback for a local job; for a remote one the
 * address the job's root listens on, that is the COLL_SOCKET_IFNAME
 * interface's when one is chosen. Without one the root itself is on every
 * address (each host reaches it at the address its SSH session reached,
 * which is known only once the session is up), and so is this port.
 */
int
ctl_listen(int remote, int *fd, int *port, char *err, size_t len)
{
	const char *ifname = getenv("COLL_SOCKET_IFNAME");
	struct net_addr a;
	char name[64];

	if (!remote) {
		net_addr_parse(&a, "127.0.0.1", 0);
	} else if (ifname != NULL && *ifname != '\0') {
		if (ifsel_pick(ifname, AF_UNSPEC, &a, name, sizeof name) != COLL_OK) {
			snprintf(err, len, "COLL_SOCKET_IFNAME=%.64s matches no interface that is up",
			    ifname);
			msg_clean(err);
			return -1;
		}
	} else {
		net_addr_any(&a);
	}
	if (net_listen(&a, CTL_BACKLOG, fd) != COLL_OK) {
		snprintf(err, len, "cannot listen for the workers' control connection: %s",
		    strerror(errno));
		return -1;
	}
	*port = net_addr_port(&a);
	return 0;
}

/* One more refused, and why (the first and the last are kept). Under s->mu. */
static void
ctl_refuse(struct ctl_server *s, const char *why)
{
	struct ctl_refused *r = &s->refused;

	if (r->n++ == 0) {
		snprintf(r->first, sizeof r->first, "%s", why);
		msg_clean(r->first);
	}
	snprintf(r->last, sizeof r->last, "%s", why);
	msg_clean(r->last);
}

/* A handshake's end: its slot back, its fd handed over or closed, and why if refused. */
static void
ctl_handshake_end(struct ctl_server *s, struct ctl_shake *h, int ok, const char *why)
{
	int evicted;

	pthread_mutex_lock(&s->mu);
	evicted = s->slot[h->slot].fd != h->fd;
	if (!evicted)
		s->slot[h->slot].fd = -1;
	if (ok && !evicted && !s->stop) {
		if (s->ready >= 0)
			close(s->ready);	/* a newer rank 0 (after a shrink) wins */
		s->ready = h->fd;
		h->fd = -1;
	} else if (!s->stop) {
		ctl_refuse(s, evicted ? "closed to make room: more than " CTL_SHAKES_STR
		    " connections at once waited to prove the job's secret" : why);
	}
	s->threads--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* One connection's handshake, in a thread of its own: only it ever waits on the stranger. */
static void *
ctl_handshake(void *arg)
{
	struct ctl_shake *h = arg;
	char err[256] = "";
	uint8_t role = 0;
	int r;

	r = auth_accept(h->fd, &h->s->uid, &role, clock_now_ms() + CTL_ACCEPT_MS, -1, err,
	    sizeof err);
	if (r == COLL_OK && role != WIRE_ROLE_CONTROL) {
		snprintf(err, sizeof err, "a control connection asked for role %u", role);
		r = COLL_EPROTO;
	}
	auth_thread_end();
	ctl_handshake_end(h->s, h, r == COLL_OK, err);
	if (h->fd >= 0)
		close(h->fd);
	free(h);
	return NULL;
}

/*
 * A slot for a new connection: a free one, else the oldest handshake's,
 * which is shut down (its thread sees it and ends). Closing the newcomers
 * instead would let a few silent connections, renewed as they time out, keep
 * rank 0 out for good; this way a stranger must connect faster than rank 0
 * answers a challenge (one round trip) to keep it out. -1: too many threads
 * still ending, the newcomer is closed.
 */
static int
ctl_slot_take(struct ctl_server *s, int fd)
{
	int k = -1;

	if (s->threads >= CTL_THREADS)
		return -1;
	for (int i = 0; i < CTL_SHAKES && k < 0; i++)
		if (s->slot[i].fd < 0)
			k = i;
	if (k < 0) {
		k = 0;
		for (int i = 1; i < CTL_SHAKES; i++)
			if (s->slot[i].since < s->slot[k].since)
				k = i;
		shutdown(s->slot[k].fd, SHUT_RDWR);
	}
	s->slot[k].fd = fd;
	s->slot[k].since = clock_now_ns();
	s->threads++;
	return k;
}

static void
ctl_admit(struct ctl_server *s, int fd)
{
	struct ctl_shake *h = xcalloc(1, sizeof *h);
	pthread_attr_t at;
	pthread_t t;
	int k, r;

	pthread_mutex_lock(&s->mu);
	k = s->stop ? -1 : ctl_slot_take(s, fd);
	if (k < 0 && !s->stop)
		ctl_refuse(s, "closed at once: too many connections still ending");
	pthread_mutex_unlock(&s->mu);
	if (k < 0) {
		close(fd);
		free(h);
		return;
	}
	*h = (struct ctl_shake){ s, k, fd };
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	r = pthread_create(&t, &at, ctl_handshake, h);
	pthread_attr_destroy(&at);
	if (r != 0) {
		pthread_mutex_lock(&s->mu);
		s->slot[k].fd = -1;
		s->threads--;
		pthread_mutex_unlock(&s->mu);
		close(fd);
		free(h);
	}
}

/* Every connection waiting; 1 when accept failed for want of fds (back off a while). */
static int
ctl_accept_all(struct ctl_server *s)
{
	int fd;

	for (;;) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			ctl_admit(s, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		return errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
	}
}

/* The control thread: accepts, never waits on a peer; listens only once the job has an id. */
static void *
ctl_server_main(void *arg)
{
	struct ctl_server *s = arg;
	int backoff = 0, n;
	char b[16];

	for (;;) {
		struct pollfd p[2] = { { s->wake[0], POLLIN, 0 }, { s->lfd, POLLIN, 0 } };

		pthread_mutex_lock(&s->mu);
		n = s->stop ? 0 : s->have_uid && !backoff ? 2 : 1;
		pthread_mutex_unlock(&s->mu);
		if (n == 0)
			break;
		backoff = 0;
		if (poll(p, (nfds_t)n, n == 1 ? CTL_BACKOFF_MS : -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			(void)!read(s->wake[0], b, sizeof b);
		if (n == 2 && (p[1].revents & POLLIN))
			backoff = ctl_accept_all(s);
	}
	return NULL;
}

struct ctl_server *
ctl_server_start(int lfd, char *err, size_t len)
{
	struct ctl_server *s = xcalloc(1, sizeof *s);

	*s = (struct ctl_server){ .lfd = lfd, .ready = -1 };
	for (int i = 0; i < CTL_SHAKES; i++)
		s->slot[i].fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0 ||
	    pthread_create(&s->thread, NULL, ctl_server_main, s) != 0) {
		snprintf(err, len, "cannot start the control connection's thread: %s",
		    strerror(errno));
		if (s->wake[0] > 0) {
			close(s->wake[0]);
			close(s->wake[1]);
		}
		free(s);
		return NULL;
	}
	return s;
}

static void
ctl_server_wake(struct ctl_server *s)
{
	(void)!write(s->wake[1], "", 1);
}

int
ctl_server_uid(struct ctl_server *s, const char *uidstr)
{
	struct coll_uid uid;

	if (uid_parse(&uid, uidstr) != COLL_OK)
		return -1;
	pthread_mutex_lock(&s->mu);
	if (!s->have_uid) {
		s->uid = uid;	/* set once, before any handshake thread reads it */
		s->have_uid = 1;
	}
	pthread_mutex_unlock(&s->mu);
	ctl_server_wake(s);
	return 0;
}

int
ctl_server_take(struct ctl_server *s, struct ctl_refused *r)
{
	int fd;

	pthread_mutex_lock(&s->mu);
	fd = s->ready;
	s->ready = -1;
	*r = s->refused;
	pthread_mutex_unlock(&s->mu);
	return fd;
}

void
ctl_server_stop(struct ctl_server *s)
{
	struct timespec ts;
	int left;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_mutex_unlock(&s->mu);
	ctl_server_wake(s);
	pthread_join(s->thread, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += CTL_ACCEPT_MS / 1000 + 1;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < CTL_SHAKES; i++)
		if (s->slot[i].fd >= 0)
			shutdown(s->slot[i].fd, SHUT_RDWR);
	while (s->threads > 0 && pthread_cond_timedwait(&s->cv, &s->mu, &ts) == 0)
		;
	left = s->threads;
	pthread_mutex_unlock(&s->mu);
	if (left > 0)
		return;	/* a handshake thread still holds it: leave it to the exit */
	if (s->ready >= 0)
		close(s->ready);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

int
ctl_send(int fd, const char *line)
{
	size_t n = strlen(line);

	return send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ? 0 : -1;
}

int
ctl_connect(int port, char *err, size_t len)
{
	const char *s = getenv("COLL_UNIQUE_ID");
	struct coll_uid uid;
	struct net_addr a;
	char *comma;
	char first[UID_STR_LEN];
	int fd = -1;

	if (s == NULL || port <= 0 || port > 65535) {
		snprintf(err, len, "no job id or control port");
		return -1;
	}
	/* Several ids (a scalable job): the front end is where the first one's root is. */
	snprintf(first, sizeof first, "%s", s);
	if ((comma = strchr(first, ',')) != NULL)
		*comma = '\0';
	if (uid_parse(&uid, first) != COLL_OK) {
		snprintf(err, len, "COLL_UNIQUE_ID is not a job id");
		return -1;
	}
	a = uid.root;
	net_addr_set_port(&a, (uint16_t)port);
	if (net_connect(&a, clock_now_ms() + CTL_AUTH_MS, -1, &fd) != COLL_OK) {
		snprintf(err, len, "cannot reach the front end's control port %d: %s", port,
		    strerror(errno));
		return -1;
	}
	if (auth_connect(fd, &uid, WIRE_ROLE_CONTROL, clock_now_ms() + CTL_AUTH_MS, -1, err,
	    len) != COLL_OK) {
		close(fd);
		return -1;
	}
	net_set_nonblock(fd);
	return fd;
}

/* One line from the front end into cmd; unknown lines are ignored (a newer front end). */
static void
ctl_line(const char *s, struct ctl_cmd *cmd)
{
	long v;
	char *end;

	if (strcmp(s, "quit") == 0) {
		cmd->quit = 1;
	} else if (strncmp(s, "interval ", 9) == 0) {
		errno = 0;
		v = strtol(s + 9, &end, 10);
		if (errno == 0 && *end == '\0' && v >= 10 && v <= 3600000)
			cmd->interval_ms = (int32_t)v;
	}
}

int
ctl_poll(int fd, struct ctl_cmd *cmd)
{
	static char buf[512];
	static size_t have;
	ssize_t n;
	char *nl;

	for (;;) {
		if (have == sizeof buf - 1)
			have = 0;	/* a line this long is not ours: drop it */
		n = recv(fd, buf + have, sizeof buf - 1 - have, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		if (n < 0)
			return 0;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			ctl_line(buf, cmd);
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have + 1);
		}
	}
}
