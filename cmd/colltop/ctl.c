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
 * control thread runs an event loop (loop.h) over the core's handshake pool
 * (hspool.h), which gives each connection a thread of its own with
 * CTL_ACCEPT_MS to prove it holds the secret, at most CTL_SHAKES in flight,
 * and rests the listener when accept runs out of fds. Anyone who can reach
 * the port can connect and then say nothing, or half a header, or its own
 * AUTH_FAIL: that costs a thread for a while, never the screen or its keys,
 * and its words are printed only cleaned. Rank 0's proven connection is
 * handed to the screen's thread through ctl_server_take.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "hspool.h"
#include "ifsel.h"
#include "loop.h"
#include "msg.h"
#include "net.h"
#include "top.h"
#include "uid.h"
#include "wire.h"
#include "xmalloc.h"

#define CTL_AUTH_MS 3000
#define CTL_ACCEPT_MS 2000	/* a handshake's thread waits this long at most on a stranger */
#define CTL_SHAKES 8		/* handshakes in flight (and as many cut off, still ending) */
#define CTL_SHAKES_STR "8"
/*
 * A newcomer cuts off the oldest handshake at once when all CTL_SHAKES are
 * in flight (no grace): closing the newcomers instead would let a few silent
 * connections, renewed as they time out, keep rank 0 out for good; this way
 * a stranger must connect faster than rank 0 answers a challenge (one round
 * trip) to keep it out.
 */
#define CTL_CUT_GRACE_MS 0
#define CTL_BACKLOG 16

struct ctl_server {
	pthread_mutex_t mu;	/* stop, have_uid, ready, refused */
	pthread_t thread;
	struct loop *loop;	/* the control thread's */
	struct hspool hp;
	int stop_fd[2];		/* readable once stopping: every handshake ends at once */
	int stop;
	int have_uid;
	struct coll_uid uid;	/* set once, before the listener is served */
	int ready;		/* rank 0's authenticated connection, not taken yet; -1 none */
	struct ctl_refused refused;
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

/* A handshake's end: fd handed over (1) or left to close, and why if refused. */
static int
ctl_handshake_end(struct ctl_server *s, int fd, int kept, int ok, const char *why)
{
	int taken = 0;

	pthread_mutex_lock(&s->mu);
	if (ok && kept && !s->stop) {
		if (s->ready >= 0)
			close(s->ready);	/* a newer rank 0 (after a shrink) wins */
		s->ready = fd;
		taken = 1;
	} else if (!s->stop) {
		ctl_refuse(s, !kept ? "closed to make room: more than " CTL_SHAKES_STR
		    " connections at once waited to prove the job's secret" : why);
	}
	pthread_mutex_unlock(&s->mu);
	return taken;
}

/* One connection's handshake, in a thread of the pool's: only it ever waits on the stranger. */
static void
ctl_handshake(void *arg, int fd)
{
	struct ctl_server *s = arg;
	char err[256] = "";
	uint8_t role = 0;
	int r, kept;

	r = auth_accept(fd, &s->uid, &role, clock_now_ms() + CTL_ACCEPT_MS, s->stop_fd[0], err,
	    sizeof err);
	if (r == COLL_OK && role != WIRE_ROLE_CONTROL) {
		snprintf(err, sizeof err, "a control connection asked for role %u", role);
		r = COLL_EPROTO;
	}
	auth_thread_end();
	/* Before fd is handed on or closed; 0: the pool cut it off for a newcomer. */
	kept = hspool_settle(&s->hp, fd);
	if (!ctl_handshake_end(s, fd, kept, r == COLL_OK, err))
		close(fd);
}

/* The control thread: serves the pool, never waits on a peer; listens only once the job has an id. */
static void *
ctl_server_main(void *arg)
{
	struct ctl_server *s = arg;
	int stop, have_uid;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		stop = s->stop;
		have_uid = s->have_uid;
		pthread_mutex_unlock(&s->mu);
		/* The listener is watched only once the job has an id. */
		if (have_uid)
			(void)hspool_watch(&s->hp, s->loop, clock_now_ms());
		if (stop || loop_once(s->loop, -1) < 0)
			break;
	}
	return NULL;
}

/* Everything the server holds, once no thread uses it (the pool drained first). */
static void
ctl_server_free(struct ctl_server *s)
{
	hspool_unwatch(&s->hp);
	hspool_free(&s->hp);
	loop_free(s->loop);
	for (int i = 0; i < 2; i++)
		if (s->stop_fd[i] >= 0)
			close(s->stop_fd[i]);
	if (s->ready >= 0)
		close(s->ready);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct ctl_server *
ctl_server_start(int lfd, char *err, size_t len)
{
	struct ctl_server *s = xcalloc(1, sizeof *s);
	int r = 0;

	*s = (struct ctl_server){ .stop_fd = { -1, -1 }, .ready = -1 };
	pthread_mutex_init(&s->mu, NULL);
	if (pipe2(s->stop_fd, O_CLOEXEC | O_NONBLOCK) != 0 || (s->loop = loop_new()) == NULL ||
	    hspool_init(&s->hp, lfd, CTL_SHAKES, ctl_handshake, s, CTL_CUT_GRACE_MS,
	    "control") != COLL_OK ||
	    (r = pthread_create(&s->thread, NULL, ctl_server_main, s)) != 0) {
		snprintf(err, len, "cannot start the control connection's thread: %s",
		    strerror(r != 0 ? r : errno));
		ctl_server_free(s);
		return NULL;
	}
	return s;
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
	loop_wake(s->loop);
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
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_mutex_unlock(&s->mu);
	(void)!write(s->stop_fd[1], "", 1);	/* never read: stays readable */
	loop_wake(s->loop);
	pthread_join(s->thread, NULL);
	ctl_server_free(s);	/* waits for the handshakes, which the stop ended */
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
