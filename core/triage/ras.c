/*
 * The NCCL RAS client: the conversation (CLIENT PROTOCOL 2, TIMEOUT, SET
 * FORMAT json, VERBOSE STATUS, then the report until the server closes) and
 * the report read into one shape, from its JSON or from its text.
 *
 * The server is another program's, on the network: every line and the
 * report are bounded, and a report that is not what we expect is said, not
 * guessed at.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "net.h"
#include "ras.h"
#include "ras_monitor.h"
#include "sockown.h"
#include "xmalloc.h"

#define RAS_LINE 256
#define RAS_OPS_MAX 64	/* kinds of operation (NCCL has about ten) */

struct ras_conn {
	int fd;
	uint64_t deadline;
	char *buf;
	size_t len, cap;
	int eof;
};

/* A word of the report we keep: printable ASCII only (jansson takes UTF-8 alone). */
static int
ras_word(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

/* More bytes in; 0, or -1 at the deadline or an error (EOF sets eof). */
static int
ras_more(struct ras_conn *c)
{
	ssize_t n;

	if (c->len + 4096 > c->cap) {
		if (c->cap >= RAS_MAX)
			return -1;
		c->cap = c->cap ? c->cap * 2 : 8192;
		c->buf = xreallocarray(c->buf, c->cap + 1, 1);
	}
	if (io_wait(c->fd, POLLIN, c->deadline, -1) != 0)
		return -1;
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		c->eof = 1;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	return 0;
}

/* Send a command, read its one-line answer into line; -1 if none came. */
static int
ras_ask(struct ras_conn *c, const char *cmd, char *line, size_t len)
{
	char *nl;

	if (io_send_all(c->fd, cmd, strlen(cmd), c->deadline, -1) != 0)
		return -1;
	while ((nl = c->len ? memchr(c->buf, '\n', c->len) : NULL) == NULL) {
		if (c->eof || c->len > RAS_LINE || ras_more(c) != 0)
			return -1;
	}
	snprintf(line, len, "%.*s", (int)(nl - c->buf), c->buf);
	c->len -= (size_t)(nl + 1 - c->buf);
	memmove(c->buf, nl + 1, c->len);
	return 0;
}

/*
 * Connect to the first address of addr whose listener is the job's (pids):
 * any user can bind the port while NCCL's own service is not running, so a
 * listener of another is not spoken to at all, and is said as ignored.
 */
static int
ras_connect(const char *addr, const pid_t *job, int njob, uint64_t deadline, char *why,
    size_t whylen)
{
	char host[256], *colon, whose[160] = "";
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int fd = -1, r;

	snprintf(host, sizeof host, "%s", addr);
	if ((colon = strrchr(host, ':')) == NULL || colon[1] == '\0') {
		snprintf(why, whylen, "NCCL_RAS_ADDR '%s' is not host:port", addr);
		return -1;
	}
	*colon = '\0';
	if ((r = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
		snprintf(why, whylen, "NCCL_RAS_ADDR '%s': %s", addr, gai_strerror(r));
		return -1;
	}
	for (struct addrinfo *p = ai; p != NULL && fd < 0; p = p->ai_next) {
		struct net_addr na = { .len = p->ai_addrlen };
		char mine[160];

		if ((r = sockown_check(p->ai_addr, job, njob, mine, sizeof mine)) < 0 &&
		    whose[0] == '\0')
			snprintf(whose, sizeof whose, "%s", mine);
		if (r <= 0)
			continue;
		memcpy(&na.ss, p->ai_addr, p->ai_addrlen);
		if (net_connect(&na, deadline, -1, &fd) != 0)
			fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0 && whose[0] != '\0')
		snprintf(why, whylen, "ignored: NCCL RAS on %s %s", addr, whose);
	else if (fd < 0)
		snprintf(why, whylen, "no NCCL RAS service answers at %s", addr);
	return fd;
}

/* The greeting: CLIENT PROTOCOL 2 answered by a server of protocol 2 or later; 0, or -1 with why. */
static int
ras_hello(struct ras_conn *c, const char *addr, char *why, size_t whylen)
{
	char line[RAS_LINE + 1];
	int proto = 0;

	if (ras_ask(c, "CLIENT PROTOCOL 2\n", line, sizeof line) != 0 ||
	    sscanf(line, "SERVER PROTOCOL %d", &proto) != 1) {
		snprintf(why, whylen, "%s does not speak NCCL's RAS protocol", addr);
		return -1;
	}
	if (proto < 2) {
		snprintf(why, whylen, "the NCCL RAS service at %s speaks protocol %d, older "
		    "than 2: skipped", addr, proto);
		return -1;
	}
	return 0;
}

char *
ras_fetch(const char *addr, const pid_t *job, int njob, int timeout_ms, char *why,
    size_t whylen)
{
	struct ras_conn c = { .deadline = clock_now_ms() + (uint64_t)timeout_ms };
	char line[RAS_LINE + 1], cmd[64];

	if ((c.fd = ras_connect(addr, job, njob, c.deadline, why, whylen)) < 0)
		return NULL;
	if (ras_hello(&c, addr, why, whylen) != 0)
		goto fail;
	/* Its own wait for the other hosts' answers: within ours. */
	snprintf(cmd, sizeof cmd, "TIMEOUT %d\n", timeout_ms > 4000 ? timeout_ms / 2000 : 1);
	if (ras_ask(&c, cmd, line, sizeof line) != 0)
		goto lost;
	/* An older server says ERROR: its text report is read instead. */
	if (ras_ask(&c, "SET FORMAT json\n", line, sizeof line) != 0)
		goto lost;
	if (io_send_all(c.fd, "VERBOSE STATUS\n", 15, c.deadline, -1) != 0)
		goto lost;
	while (!c.eof)
		if (ras_more(&c) != 0) {
			snprintf(why, whylen, c.cap >= RAS_MAX ? "the NCCL RAS report at %s "
			    "is over 8 MiB" : "the NCCL RAS service at %s did not finish its "
			    "report in time", addr);
			goto fail;
		}
	close(c.fd);
	if (c.buf == NULL)
		c.buf = xstrdup("");
	return c.buf;
lost:
	snprintf(why, whylen, "the NCCL RAS service at %s stopped answering", addr);
fail:
	close(c.fd);
	free(c.buf);
	return NULL;
}

int
ras_monitor_open(const char *addr, const pid_t *job, int njob, int timeout_ms, char *rest,
    size_t restcap, size_t *restlen, char *why, size_t whylen)
{
	struct ras_conn c = { .deadline = clock_now_ms() + (uint64_t)timeout_ms };
	char line[RAS_LINE + 1];

	*restlen = 0;
	if ((c.fd = ras_connect(addr, job, njob, c.deadline, why, whylen)) < 0)
		return -1;
	if (ras_hello(&c, addr, why, whylen) != 0)
		goto fail;
	/* An older server says ERROR and keeps its text format: both are read. */
	if (ras_ask(&c, "SET FORMAT json\n", line, sizeof line) != 0 ||
	    ras_ask(&c, "MONITOR\n", line, sizeof line) != 0) {
		snprintf(why, whylen, "the NCCL RAS service at %s stopped answering", addr);
		goto fail;
	}
	if (strcmp(line, "OK") != 0) {
		snprintf(why, whylen, "the NCCL RAS service at %s has no MONITOR (NCCL before 2.29)",
		    addr);
		goto fail;
	}
	*restlen = c.len < restcap ? c.len : restcap;
	if (*restlen > 0)
		memcpy(rest, c.buf, *restlen);
	free(c.buf);
	return c.fd;
fail:
	close(c.fd);
	free(c.buf);
	return -1;
}

static json_t *
ras_int(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer(json_integer_value(v)) : NULL;
}

/* One rank of a JSON report, or NULL if it is not one; its ops' names into ops. */
static json_t *
ras_rank(json_t *r, json_t *ops)
{
	json_t *st = json_object_get(r, "status"), *cc = json_object_get(r, "collective_counts");
	json_t *counts = json_object(), *out, *v;
	const char *op;

	if (!json_is_integer(json_object_get(r, "rank")) || !json_is_object(cc)) {
		json_decref(counts);
		return NULL;
	}
	json_object_foreach(cc, op, v)
		if (json_is_integer(v) && json_integer_value(v) >= 0 && ras_word(op)) {
			json_object_set_new(counts, op, json_integer(json_integer_value(v)));
			json_object_set_new(ops, op, json_true());
		}
	out = json_pack("{s:I, s:o}", "rank", json_integer_value(json_object_get(r, "rank")),
	    "counts", counts);
	if ((v = ras_int(r, "pid")) != NULL)
		json_object_set_new(out, "pid", v);
	if (json_is_string(json_object_get(r, "host")) &&
	    ras_word(json_string_value(json_object_get(r, "host"))))
		json_object_set(out, "host", json_object_get(r, "host"));
	if ((v = ras_int(st, "async_error")) != NULL)
		json_object_set_new(out, "async_error", v);
	json_object_set_new(out, "abort", json_boolean(json_is_true(json_object_get(st,
	    "abort_flag"))));
	return out;
}

static json_t *
ras_from_json(json_t *in, json_t *ops, char *why, size_t whylen)
{
	json_t *comms = json_object_get(in, "communicators"), *out = json_array(), *c, *v;
	size_t i;

	if (!json_is_array(comms)) {
		snprintf(why, whylen, "the NCCL RAS report has no communicators list");
		json_decref(out);
		return NULL;
	}
	json_array_foreach(comms, i, c) {
		json_t *ranks = json_array(), *miss = json_array(), *r, *oc;
		size_t k;

		json_array_foreach(json_object_get(c, "ranks"), k, r)
			if ((oc = ras_rank(r, ops)) != NULL)
				json_array_append_new(ranks, oc);
		json_array_foreach(json_object_get(c, "missing_ranks"), k, r) {
			json_t *m = json_is_integer(r) ? r : json_object_get(r, "rank");

			if (json_is_integer(m))
				json_array_append_new(miss, json_integer(json_integer_value(m)));
		}
		oc = json_pack("{s:o, s:o, s:s}", "ranks", ranks, "missing", miss, "hash",
		    json_is_string(json_object_get(c, "hash")) &&
		    ras_word(json_string_value(json_object_get(c, "hash"))) ?
		    json_string_value(json_object_get(c, "hash")) : "?");
		if (json_is_integer(json_object_get(c, "size")))
			json_object_set(oc, "size", json_object_get(c, "size"));
		json_array_append_new(out, oc);
	}
	v = json_object_get(in, "nccl_version");
	return json_pack("{s:s, s:o}", "version", json_is_string(v) &&
	    ras_word(json_string_value(v)) ? json_string_value(v) : "?", "comms", out);
}

/*
 * The communicator of the warning at hash, made if new: found through the
 * index by hash, not by a walk of comms (a report of many warnings would
 * cost its square).
 */
static json_t *
ras_comm(json_t *comms, json_t *index, const char *hash)
{
	json_t *c = json_object_get(index, hash);

	if (c != NULL)
		return c;
	c = json_pack("{s:s, s:[], s:[]}", "hash", hash, "ranks", "missing");
	json_array_append_new(comms, c);
	json_object_set(index, hash, c);
	return c;
}

/*
 * The text report: its MISMATCH warnings name each rank's count, under a
 * "#G-C (hash) MISMATCH" line and a "different OP operation counts" line.
 */
static json_t *
ras_from_text(const char *buf, size_t len, json_t *ops, char *why, size_t whylen)
{
	json_t *comms = json_array(), *index = json_object(), *cur = NULL;
	char ver[32] = "", op[32] = "", line[512];
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char hash[24], host[64];
		long long cnt;
		int rank, pid, g, c;

		snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
		p = nl ? nl + 1 : end;
		if (ver[0] == '\0' && sscanf(line, "NCCL version %31s", ver) == 1) {
			if (!ras_word(ver))
				ver[0] = '\0';
			continue;
		}
		if (sscanf(line, "#%d-%d (%20[0-9a-fA-F]) MISMATCH", &g, &c, hash) == 3) {
			char h[32];

			snprintf(h, sizeof h, "0x%s", hash);
			cur = ras_comm(comms, index, h);
			op[0] = '\0';
		} else if (sscanf(line, " Communicator ranks have different %31s operation counts",
		    op) == 1) {
			if (!ras_word(op))
				op[0] = '\0';
			else
				json_object_set_new(ops, op, json_true());
		} else if (cur != NULL && op[0] != '\0' && sscanf(line, " Rank %d has launched up "
		    "to operation %lld -- GPU %d managed by process %d on node %63s", &rank, &cnt,
		    &g, &pid, host) == 5 && rank >= 0 && cnt >= 0 && ras_word(host)) {
			json_array_append_new(json_object_get(cur, "ranks"), json_pack("{s:i, s:i, "
			    "s:s, s:b, s:{s:I}}", "rank", rank, "pid", pid, "host", host, "abort", 0,
			    "counts", op, (json_int_t)cnt));
		}
	}
	json_decref(index);
	if (ver[0] == '\0') {
		json_decref(comms);
		snprintf(why, whylen, "the NCCL RAS report is neither JSON nor its text report");
		return NULL;
	}
	return json_pack("{s:s, s:o}", "version", ver, "comms", comms);
}

/*
 * The report read: linear in its length (communicators are found by hash,
 * never by a walk), and of few kinds of operation, so that what judges it
 * (for each op, each rank) stays linear too.
 */
json_t *
ras_parse(const char *buf, size_t len, char *why, size_t whylen)
{
	json_t *in, *out = NULL, *ops = json_object();
	size_t i = 0;

	why[0] = '\0';
	if (len > RAS_MAX) {
		snprintf(why, whylen, "the NCCL RAS report is over %u MiB: not read", RAS_MAX >> 20);
		goto out;
	}
	while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
		i++;
	if (i == len || buf[i] != '{') {
		out = ras_from_text(buf, len, ops, why, whylen);
	} else if ((in = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL)) == NULL) {
		snprintf(why, whylen, "the NCCL RAS report is not valid JSON");
	} else {
		out = ras_from_json(in, ops, why, whylen);
		json_decref(in);
	}
	if (out != NULL && json_object_size(ops) > RAS_OPS_MAX) {
		snprintf(why, whylen, "the NCCL RAS report names %zu kinds of operation, more than "
		    "NCCL has (%d): not read", json_object_size(ops), RAS_OPS_MAX);
		json_decref(out);
		out = NULL;
	}
	if (out == NULL && why[0] == '\0')
		snprintf(why, whylen, "the NCCL RAS report could not be read");
out:
	json_decref(ops);
	return out;
}

json_t *
ras_query(const char *addr, const pid_t *job, int njob, int timeout_ms, char *why,
    size_t whylen)
{
	char *rep = ras_fetch(addr, job, njob, timeout_ms, why, whylen);
	json_t *r;

	if (rep == NULL)
		return NULL;
	r = ras_parse(rep, strlen(rep), why, whylen);
	free(rep);
	return r;
}
