/*
 * colltop --listen: /metrics over HTTP for Prometheus, on a thread of its
 * own that runs an event loop (loop.h) and never waits on a client.
 *
 * Each scrape renders the model (metrics.c) into a buffer while holding the
 * model's lock, which is as long as the screen holds it to draw, and writes
 * the buffer out after letting go: a slow reader holds a buffer, never the
 * lock, the screen or the workers. Everything a client can make us hold is
 * bounded: a request's header is at most LISTEN_HEAD_MAX bytes and must come
 * within LISTEN_READ_MS, its answer must be taken within LISTEN_WRITE_MS, and
 * at most LISTEN_CLIENTS connections are kept. When they are all taken, a
 * newcomer cuts off the oldest client still reading a header it has had
 * LISTEN_GRACE_MS to send, else the oldest that has sent nothing (a scraper
 * sends its request at once: one that has not is likelier a stranger holding
 * a slot), else the oldest still reading. A client whose request is whole is
 * never cut off (it is being answered, and its write deadline bounds it), so
 * strangers churning connections cannot cut off a scrape mid-answer; when
 * every slot holds one, the newcomer is closed at once. Few are taken per
 * wakeup, so a scraper's request is read before many newcomers come. One
 * answer per connection (Connection: close): Prometheus opens the next.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "loop.h"
#include "msg.h"
#include "net.h"
#include "promtext.h"
#include "top.h"
#include "xmalloc.h"

#define LISTEN_CLIENTS 64
#define LISTEN_HEAD_MAX 8192
#define LISTEN_READ_MS 5000
#define LISTEN_WRITE_MS 10000
#define LISTEN_GRACE_MS 200	/* a reader this old without a whole request may be cut off */
#define LISTEN_TICK_MS 250
#define LISTEN_REST_MS 200	/* out of fds: the listener rests this long */
#define LISTEN_BACKLOG 64
#define LISTEN_ACCEPTS 4	/* taken per wakeup: the clients' own events come between */

struct listen_server;

struct listen_client {
	struct listen_server *s;
	int fd;
	uint64_t serial;	/* in the order accepted: the lowest is the oldest */
	uint64_t since_ms;	/* accepted, then its answer begun: the deadline's start */
	int writing;
	size_t hlen;
	char head[LISTEN_HEAD_MAX + 1];
	struct promtext out;
	size_t off;
};

struct listen_server {
	struct top_front *f;
	pthread_t thread;
	struct loop *loop;
	int lfd;
	atomic_int stop;
	uint64_t serial;	/* the last client's */
	struct listen_client *c[LISTEN_CLIENTS];
};

/* [ADDR:]PORT: ADDR numeric (IPv6 in brackets) or localhost; none: every address. */
int
listen_parse(const char *spec, struct net_addr *a, char *err, size_t len)
{
	const char *h = spec, *port = spec, *colon = strrchr(spec, ':');
	char host[64] = "", *end;
	size_t n = 0;
	long p;

	if (colon != NULL) {
		n = (size_t)(colon - spec);
		if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
			h++, n -= 2;
		if (n >= sizeof host || memchr(h, '[', n) != NULL || memchr(h, ']', n) != NULL)
			goto bad;
		memcpy(host, h, n);
		host[n] = '\0';
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (*port < '0' || *port > '9' || *end != '\0' || errno != 0 || p > 65535)
		goto bad;
	if (host[0] == '\0')
		net_addr_any(a);
	else if (net_addr_parse(a, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, 0) !=
	    COLL_OK)
		goto bad;
	net_addr_set_port(a, (uint16_t)p);
	return 0;
bad:
	snprintf(err, len, "--listen '%.80s': give PORT (every address), 127.0.0.1:PORT or "
	    "[::1]:PORT (a numeric address; a port from 0 to 65535, 0 picks a free one)", spec);
	msg_clean(err);
	return -1;
}

static void
listen_close(struct listen_server *s, int i)
{
	struct listen_client *c = s->c[i];

	loop_unwatch(s->loop, c->fd);
	close(c->fd);
	promtext_free(&c->out);
	free(c);
	s->c[i] = NULL;
}

static int
listen_slot(const struct listen_server *s, const struct listen_client *c)
{
	for (int i = 0; i < LISTEN_CLIENTS; i++)
		if (s->c[i] == c)
			return i;
	return -1;
}

static void
listen_flush(struct listen_server *s, struct listen_client *c)
{
	ssize_t n;

	while (c->off < c->out.len) {
		n = send(c->fd, c->out.p + c->off, c->out.len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;	/* the loop says when it can take more */
		if (n <= 0)
			break;
		c->off += (size_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	listen_close(s, listen_slot(s, c));
}

/* The answer: its head, then the body (none for HEAD). */
static void
listen_answer(struct listen_client *c, int head_only, const char *status, const char *type,
    const char *extra, const char *body, size_t blen)
{
	struct promtext *o = &c->out;

	promtext_printf(o, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
	    "Connection: close\r\n\r\n", status, type, blen, extra);
	if (!head_only && blen > 0)
		promtext_printf(o, "%.*s", (int)blen, body);
}

static const char listen_index[] = "<html><head><title>colltop</title></head><body>"
    "<h1>colltop</h1><p>Prometheus metrics: <a href=\"/metrics\">/metrics</a></p>"
    "</body></html>\n";

/* The model as text: the lock is held only while it is rendered. */
static void
listen_metrics(struct listen_server *s, struct listen_client *c, int head_only)
{
	struct promtext body = { 0 };

	front_lock_model(s->f);
	metrics_render(&s->f->m, &body);
	front_unlock_model(s->f);
	listen_answer(c, head_only, "200 OK", PROMTEXT_TYPE, "", body.p, body.len);
	promtext_free(&body);
}

/* The request line (METHOD TARGET HTTP/1.x) of a whole header: what to answer. */
static void
listen_route(struct listen_server *s, struct listen_client *c)
{
	char *line = c->head, *sp1, *sp2, *q;
	int head_only;

	line[strcspn(line, "\r\n")] = '\0';
	if ((sp1 = strchr(line, ' ')) == NULL || (sp2 = strchr(sp1 + 1, ' ')) == NULL ||
	    strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		listen_answer(c, 0, "400 Bad Request", "text/plain", "", "bad request\n", 12);
		return;
	}
	*sp1 = *sp2 = '\0';
	head_only = strcmp(line, "HEAD") == 0;
	if (!head_only && strcmp(line, "GET") != 0) {
		listen_answer(c, 0, "405 Method Not Allowed", "text/plain", "Allow: GET, HEAD\r\n",
		    "only GET and HEAD\n", 18);
		return;
	}
	if ((q = strchr(sp1 + 1, '?')) != NULL)
		*q = '\0';
	if (strcmp(sp1 + 1, "/metrics") == 0)
		listen_metrics(s, c, head_only);
	else if (strcmp(sp1 + 1, "/") == 0)
		listen_answer(c, head_only, "200 OK", "text/html; charset=utf-8", "", listen_index,
		    sizeof listen_index - 1);
	else
		listen_answer(c, head_only, "404 Not Found", "text/plain", "", "not found: try "
		    "/metrics\n", 21);
}

/* Start answering: the deadline is the answer's from now. */
static void
listen_reply(struct listen_server *s, struct listen_client *c)
{
	c->writing = 1;
	c->since_ms = clock_now_ms();
	listen_route(s, c);
	loop_mask(s->loop, c->fd, LOOP_WRITE);
	listen_flush(s, c);
}

/* A client's fd is ready: more of its header, or room for more of the answer. */
static void
listen_client_io(struct loop *l, int fd, int events, void *arg)
{
	struct listen_client *c = arg;
	struct listen_server *s = c->s;
	ssize_t n;

	(void)l;
	if (c->writing) {
		listen_flush(s, c);
		return;
	}
	(void)events;
	n = recv(fd, c->head + c->hlen, LISTEN_HEAD_MAX - c->hlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		listen_close(s, listen_slot(s, c));
		return;
	}
	c->hlen += (size_t)n;
	c->head[c->hlen] = '\0';
	if (strstr(c->head, "\r\n\r\n") != NULL || strstr(c->head, "\n\n") != NULL) {
		listen_reply(s, c);
	} else if (c->hlen == LISTEN_HEAD_MAX || memchr(c->head, '\0', c->hlen) != NULL) {
		c->writing = 1;
		c->since_ms = clock_now_ms();
		listen_answer(c, 0, "431 Request Header Fields Too Large", "text/plain", "",
		    "header too large\n", 17);
		loop_mask(s->loop, c->fd, LOOP_WRITE);
		listen_flush(s, c);
	}
}

/* Whether slot I is a better one to cut off than slot BEST (-1: none yet). */
static int
listen_older(const struct listen_server *s, int i, int best)
{
	return best < 0 || s->c[i]->serial < s->c[best]->serial;
}

/*
 * A slot for a newcomer: a free one, else the oldest reader past its grace,
 * else the oldest that has sent nothing, else the oldest reader; -1: none
 * (every slot holds a client being answered).
 */
static int
listen_free_slot(struct listen_server *s)
{
	uint64_t now = clock_now_ms();
	int stale = -1, silent = -1, old = -1, v;

	for (int i = 0; i < LISTEN_CLIENTS; i++) {
		if (s->c[i] == NULL)
			return i;
		if (s->c[i]->writing)
			continue;
		if (now - s->c[i]->since_ms > LISTEN_GRACE_MS && listen_older(s, i, stale))
			stale = i;
		if (s->c[i]->hlen == 0 && listen_older(s, i, silent))
			silent = i;
		if (listen_older(s, i, old))
			old = i;
	}
	v = stale >= 0 ? stale : silent >= 0 ? silent : old;
	if (v >= 0)
		listen_close(s, v);
	return v;
}

static int
listen_rest_over(struct loop *l, uint64_t id, void *arg)
{
	struct listen_server *s = arg;

	(void)id;
	loop_mask(l, s->lfd, LOOP_READ);
	return -1;
}

static void
listen_accept(struct loop *l, int lfd, int events, void *arg)
{
	struct listen_server *s = arg;
	struct listen_client *c;
	int fd, i;

	(void)events;
	for (int k = 0; k < LISTEN_ACCEPTS; k++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)) {
			loop_mask(l, lfd, 0);	/* out of fds: rest, or it would spin */
			loop_timer(l, LISTEN_REST_MS, listen_rest_over, s);
			return;
		}
		if (fd < 0)
			return;	/* EAGAIN, or a connection gone before it was taken */
		c = xcalloc(1, sizeof *c);
		*c = (struct listen_client){ .s = s, .fd = fd, .serial = ++s->serial,
		    .since_ms = clock_now_ms() };
		if ((i = listen_free_slot(s)) < 0 ||
		    loop_watch(l, fd, LOOP_READ, listen_client_io, c) != 0) {
			close(fd);
			free(c);
			continue;
		}
		s->c[i] = c;
		listen_client_io(l, fd, LOOP_READ, c);	/* its request may be here already */
	}
}

/* Every tick: cut off the clients past their deadline. */
static int
listen_tick(struct loop *l, uint64_t id, void *arg)
{
	struct listen_server *s = arg;
	uint64_t now = clock_now_ms();

	(void)l;
	(void)id;
	for (int i = 0; i < LISTEN_CLIENTS; i++)
		if (s->c[i] != NULL && now - s->c[i]->since_ms >
		    (uint64_t)(s->c[i]->writing ? LISTEN_WRITE_MS : LISTEN_READ_MS))
			listen_close(s, i);
	return LISTEN_TICK_MS;
}

static void *
listen_main(void *arg)
{
	struct listen_server *s = arg;

	while (!atomic_load(&s->stop))
		if (loop_once(s->loop, -1) < 0)
			break;
	return NULL;
}

static void
listen_free(struct listen_server *s)
{
	for (int i = 0; i < LISTEN_CLIENTS; i++)
		if (s->c[i] != NULL)
			listen_close(s, i);
	if (s->loop != NULL)
		loop_free(s->loop);
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
}

/* Bind --listen's address (before the workers start: a port in use is said at once). */
static int
listen_bind(struct listen_server *s, const char *spec, char *where, char *err, size_t len)
{
	struct net_addr a;

	if (listen_parse(spec, &a, err, len) != 0)
		return -1;
	if (net_listen(&a, LISTEN_BACKLOG, &s->lfd) != COLL_OK) {
		snprintf(err, len, "--listen %.80s: cannot listen there: %s%s", spec, strerror(errno),
		    errno == EADDRINUSE ? " (another program has the port: pick another)" : "");
		msg_clean(err);
		return -1;
	}
	/* Connections that send nothing are not handed to accept() for a while: a
	 * stranger's silent ones then never take a scraper's slot (best effort). */
	(void)setsockopt(s->lfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &(int){ LISTEN_READ_MS / 1000 },
	    sizeof(int));
	if (net_addr_is_any(&a))
		snprintf(where, NET_ADDRSTR_LEN, "every address, port %u", net_addr_port(&a));
	else
		net_addr_format(&a, where, NET_ADDRSTR_LEN);
	return 0;
}

struct listen_server *
listen_start(struct top_front *f, char *err, size_t len)
{
	struct listen_server *s = xcalloc(1, sizeof *s);
	char where[NET_ADDRSTR_LEN];
	int r = 0;

	s->f = f;
	s->lfd = -1;
	atomic_init(&s->stop, 0);
	if (listen_bind(s, f->a->listen, where, err, len) != 0)
		goto fail;
	if ((s->loop = loop_new()) == NULL ||
	    loop_watch(s->loop, s->lfd, LOOP_READ, listen_accept, s) != 0 ||
	    loop_timer(s->loop, LISTEN_TICK_MS, listen_tick, s) == 0 ||
	    (r = pthread_create(&s->thread, NULL, listen_main, s)) != 0) {
		snprintf(err, len, "--listen: cannot start the metrics server's thread: %s",
		    strerror(r != 0 ? r : errno));
		goto fail;
	}
	fprintf(stderr, "colltop: serving Prometheus metrics on %s (/metrics)\n", where);
	return s;
fail:
	listen_free(s);
	return NULL;
}

void
listen_stop(struct listen_server *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stop, 1);
	loop_wake(s->loop);
	pthread_join(s->thread, NULL);
	listen_free(s);
}
