/*
 * collrun --relay: a host of the tree launch's upper layers (launch_sshtree.c).
 * It starts the hosts of its subtree over SSH, as the front end would (and
 * through relays of its own past --tree hosts), and speaks treeproto.h on its
 * stdin and stdout: the unique id and the plan come down, every rank's
 * records go up, each prefixed with its rank, and a rank's end only after
 * its output. A signal record coming down goes to every rank below; the end
 * of stdin (the front end stopped the job, or its connection broke) stops
 * them all, and the relay ends once every rank below has.
 *
 * It also relays the root (proxy.h): the ranks below, and the relays below,
 * reach the job's root through this process, so that the root holds one
 * connection per relay of the first layer instead of one per rank. Where
 * that cannot be set up (the root refuses us), they reach it directly, as
 * in a flat launch, and the relay says so on its stderr.
 *
 * It is internal, like --agent: `collrun --relay --uid-stdin [--env-stdin]
 * [--path DIR] [--libpath DIR] --nranks N --nhosts H --tree K --fanout F
 * --connect-timeout-ms MS --master-port P --master ADDR [--root-via ADDR] [--accept-new]
 * [--ssh-config FILE] [--cwd DIR] -- PROGRAM ARGS`. The user's variables for
 * the ranks come among the plan's lines (envwire.h), never in argv.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "agentproto.h"
#include "clock.h"
#include "comm.h"
#include "envwire.h"
#include "err.h"
#include "launch.h"
#include "linebuf.h"
#include "net.h"
#include "opt.h"
#include "proxy.h"
#include "treeproto.h"
#include "uid.h"
#include "xmalloc.h"

#define RELAY_PLAN_WAIT_MS 30000
#define RELAY_MAX_HOSTS 1000000

struct relay {
	struct launch_opts o;
	struct coll_uid uid;
	char **names;		/* per job host: its name, NULL outside the subtree */
	int *rank_host;
	int *pid_sent;
	int *todo;		/* ranks below whose pid did not go up yet */
	int ntodo;
	int pending[65];	/* signal records that came before the ranks started */
	int stage;		/* 0: the uid next, 1: plan lines, 2: signal records */
	int bad;		/* the plan was refused */
	int stdin_open;
	int stopped;
	int gone;		/* the launcher no longer reads us */
	struct linebuf in;
	char *out;		/* records not yet written up */
	size_t out_len, out_cap;
	struct launch *l;
	const char *root_via;	/* the relay above ours, if any (else the root itself) */
	char **env;		/* the user's variables for every rank, from stdin (envwire.h) */
	int nenv;
	struct proxy *proxy;
};

static volatile sig_atomic_t relay_sig;

static void
relay_on_signal(int sig)
{
	relay_sig = sig;
}

static void
relay_put(struct relay *r, const char *p, size_t n)
{
	if (r->gone)
		return;
	if (r->out_len + n > r->out_cap) {
		r->out_cap = (r->out_len + n) * 2;
		r->out = xreallocarray(r->out, r->out_cap, 1);
	}
	memcpy(r->out + r->out_len, p, n);
	r->out_len += n;
}

/* Every record of the buffer rec (one or more lines), each behind "RANK ". */
static void
relay_put_rank(struct relay *r, int rank, const char *rec, size_t n)
{
	char head[16];
	int h = snprintf(head, sizeof head, "%d ", rank);

	while (n > 0) {
		const char *nl = memchr(rec, '\n', n);
		size_t k = nl ? (size_t)(nl - rec) + 1 : n;

		relay_put(r, head, (size_t)h);
		relay_put(r, rec, k);
		rec += k;
		n -= k;
	}
}

/* Write what is queued; the launcher gone, stop everything below. */
static void
relay_flush(struct relay *r)
{
	size_t off = 0;

	while (off < r->out_len && !r->gone) {
		ssize_t w = write(STDOUT_FILENO, r->out + off, r->out_len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r->gone = 1;
		else
			off += (size_t)w;
	}
	r->out_len = 0;
	if (r->gone && !r->stopped && r->l != NULL) {
		r->stopped = 1;
		launch_signal(r->l, SIGTERM);
	}
}

/* Send the rank's pid once known; 1 once it went. */
static int
relay_pid(struct relay *r, int rank)
{
	char rec[AGENTPROTO_LINE];
	pid_t pid = launch_pid(r->l, rank);

	if (r->pid_sent[rank])
		return 1;
	if (pid <= 1)
		return 0;
	r->pid_sent[rank] = 1;
	relay_put_rank(r, rank, rec, agentproto_encode_number(rec, AGENTPROTO_PID, pid));
	return 1;
}

static void
relay_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct relay *r = arg;
	char *rec = xmalloc((len / AGENTPROTO_PIECE + 1) * AGENTPROTO_LINE);

	relay_put_rank(r, rank, rec, agentproto_encode_output(rec, stream, line, len, 1));
	free(rec);
}

static void
relay_exited(void *arg, int rank, int state, int code)
{
	struct relay *r = arg;
	char rec[AGENTPROTO_LINE];
	size_t n;

	relay_pid(r, rank);
	if (state == LAUNCH_EXITED || state == LAUNCH_SIGNALED)
		n = agentproto_encode_number(rec, state == LAUNCH_EXITED ? AGENTPROTO_EXIT :
		    AGENTPROTO_SIGNAL, code);
	else
		n = (size_t)snprintf(rec, sizeof rec, "%c\n", state == LAUNCH_LOST ? 'l' : 'f');
	relay_put_rank(r, rank, rec, n);
}

static void
relay_host_failed(void *arg, int host, const char *why)
{
	struct relay *r = arg;
	char line[AGENTPROTO_LINE + 32];
	int n = snprintf(line, sizeof line, "h %d %.*s", host, AGENTPROTO_PIECE, why);

	/* One line: a reason never breaks the record. */
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (n >= (int)sizeof line)
		n = (int)sizeof line - 1;
	relay_put(r, line, (size_t)n);
	relay_put(r, "\n", 1);
}

/* A variable of the user's for the ranks (envwire.h); kept for the relay's life. */
static void
relay_env_line(struct relay *r, const char *line, size_t len)
{
	char *var = xmalloc(len + 1);

	if (envwire_decode(line, len, var, len + 1) != 0) {
		fprintf(stderr, "collrun --relay: bad variable line on stdin\n");
		free(var);
		r->bad = 1;
		return;
	}
	r->env = xreallocarray(r->env, (size_t)r->nenv + 2, sizeof *r->env);
	r->env[r->nenv++] = var;
	r->env[r->nenv] = NULL;
	r->o.env = r->env;
}

static void
relay_input(void *arg, const char *line, size_t len)
{
	struct relay *r = arg;
	struct agentproto_msg m;
	char name[256], s[UID_STR_LEN];
	int host;

	if (r->bad)
		return;
	switch (r->stage) {
	case 0:
		snprintf(s, sizeof s, "%.*s", (int)len, line);
		if (len >= sizeof s || uid_parse(&r->uid, s) != COLL_OK) {
			fprintf(stderr, "collrun --relay: the first line of stdin is not a unique id\n");
			r->bad = 1;
		}
		r->stage = 1;
		return;
	case 1:
		if (len == 1 && line[0] == '.') {
			r->stage = 2;
			return;
		}
		if (len > strlen(ENVWIRE_PREFIX) && memcmp(line, ENVWIRE_PREFIX, strlen(ENVWIRE_PREFIX)) == 0) {
			relay_env_line(r, line, len);
			return;
		}
		if (treeproto_parse_host(line, len, r->o.nranks, r->o.nhosts, &host, name,
		    sizeof name, r->rank_host) != COLL_OK || r->names[host] != NULL) {
			fprintf(stderr, "collrun --relay: bad plan line '%.*s'\n",
			    len > 200 ? 200 : (int)len, line);
			r->bad = 1;
			return;
		}
		r->names[host] = xstrdup(name);
		return;
	default:
		if (agentproto_parse(line, len, &m) != COLL_OK || m.kind != AGENTPROTO_KILL)
			return;
		if (r->l != NULL)
			launch_signal(r->l, (int)m.value);
		else
			r->pending[m.value] = 1;
	}
}

/* Read what stdin has; its end stops the ranks below. */
static void
relay_read(struct relay *r)
{
	size_t room;
	char *p = linebuf_space(&r->in, &room);
	ssize_t n = read(STDIN_FILENO, p, room);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		r->stdin_open = 0;
		if (r->l != NULL && !r->stopped) {
			r->stopped = 1;
			launch_signal(r->l, SIGTERM);
		}
		return;
	}
	linebuf_commit(&r->in, (size_t)n, relay_input, r);
}

/* The uid and the plan, within RELAY_PLAN_WAIT_MS. */
static int
relay_plan(struct relay *r)
{
	uint64_t end = clock_now_ms() + RELAY_PLAN_WAIT_MS;
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };

	while (r->stage < 2 && !r->bad && r->stdin_open) {
		uint64_t now = clock_now_ms();
		int n = now < end ? poll(&pfd, 1, (int)(end - now)) : 0;

		if (n < 0 && errno == EINTR && relay_sig == 0)
			continue;
		if (relay_sig != 0)
			return -1;
		if (n <= 0) {
			fprintf(stderr, "collrun --relay: no plan on stdin within %d s: is the "
			    "launcher the same coll version?\n", RELAY_PLAN_WAIT_MS / 1000);
			return -1;
		}
		relay_read(r);
	}
	return r->stage == 2 && !r->bad ? 0 : -1;
}

/* Set the number option opt to val: 1, or 0 if opt is no such option or val is out of its range. */
static int
relay_number(struct relay *r, const char *opt, const char *val)
{
	const struct { const char *name; long min, max; int *to; } nums[] = {
		{ "--nranks", 1, COLL_MAX_RANKS, &r->o.nranks },
		{ "--nhosts", 1, RELAY_MAX_HOSTS, &r->o.nhosts },
		{ "--tree", 0, RELAY_MAX_HOSTS, &r->o.tree },
		{ "--fanout", 1, 100000, &r->o.fanout },
		{ "--connect-timeout-ms", 0, 3600000, &r->o.connect_timeout_ms },
		{ "--master-port", 0, 65535, &r->o.master_port },
	};
	char err[128];	/* which value was bad: the caller says only that one was */
	long v;

	for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
		if (strcmp(opt, nums[k].name) != 0)
			continue;
		if (opt_int(opt, val, nums[k].min, nums[k].max, &v, err, sizeof err) != 0)
			return 0;
		*nums[k].to = (int)v;
		return 1;
	}
	return 0;
}

static int
relay_args(struct relay *r, int argc, char **argv)
{
	int i = 2;

	if (i >= argc || strcmp(argv[i++], "--uid-stdin") != 0)
		return -1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(opt, "--accept-new") == 0) {
			r->o.accept_new = 1;
			continue;
		}
		if (strcmp(opt, "--env-stdin") == 0)	/* they come among the plan's lines */
			continue;
		if (val == NULL)
			return -1;
		i++;
		if (strcmp(opt, "--path") == 0)
			r->o.bindir = val;
		else if (strcmp(opt, "--libpath") == 0)
			r->o.libdir = val;
		else if (strcmp(opt, "--master") == 0)
			r->o.master_addr = val;
		else if (strcmp(opt, "--ssh-config") == 0)
			r->o.ssh_config = val;
		else if (strcmp(opt, "--cwd") == 0)
			r->o.cwd = val;
		else if (strcmp(opt, "--root-via") == 0)
			r->root_via = val;
		else if (!relay_number(r, opt, val))
			return -1;
	}
	if (i + 1 >= argc || r->o.nranks == 0 || r->o.nhosts == 0 || r->o.master_addr == NULL)
		return -1;
	/* The front end's -F FILE, when this host has no such file: ~/.ssh/config here. */
	if (r->o.ssh_config != NULL && access(r->o.ssh_config, R_OK) != 0)
		r->o.ssh_config = NULL;
	r->o.argv = argv + i + 1;
	r->o.path = argv[i + 1];
	/* The suite is where it is here on every host: this very program. */
	r->o.agent = argv[0];
	return 0;
}

/* Relay the root for the hosts below, on all our addresses (each is told the one that reached it). */
static void
relay_proxy(struct relay *r)
{
	struct net_addr up = r->uid.root, at;
	char err[COLL_ERR_LEN], host[256];
	int ms = r->o.connect_timeout_ms > 0 ? r->o.connect_timeout_ms : 10000;

	net_addr_any(&at);
	if (r->root_via != NULL && uid_addr_parse(&up, r->root_via) != COLL_OK) {
		snprintf(err, sizeof err, "--root-via %s is not an address", r->root_via);
	} else if (proxy_start(&r->proxy, &r->uid, &up, &at, ms, err, sizeof err) == COLL_OK) {
		r->o.root_via_port = net_addr_port(&at);
		return;
	}
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	fprintf(stderr, "collrun --relay on %s: cannot relay the root (%s): the hosts below reach "
	    "it directly\n", host, err);
}

static void
relay_loop(struct relay *r)
{
	for (;;) {
		int left = launch_poll(r->l, 1000, r->stdin_open ? STDIN_FILENO : -1);
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };

		for (int k = 0; k < r->ntodo; k++)
			if (relay_pid(r, r->todo[k]))
				r->todo[k--] = r->todo[--r->ntodo];
		if (r->stdin_open && poll(&pfd, 1, 0) > 0)
			relay_read(r);
		if (relay_sig != 0 && !r->stopped) {
			r->stopped = 1;
			launch_signal(r->l, SIGTERM);
		}
		relay_flush(r);
		if (left == 0)
			break;
	}
}

int
relay_main(int argc, char **argv)
{
	struct relay r = { .stdin_open = 1 };
	struct launch_cb cb = { relay_output, relay_exited, relay_host_failed, &r, NULL };
	int code = 0;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, relay_on_signal);
	signal(SIGINT, relay_on_signal);
	signal(SIGHUP, relay_on_signal);
	if (relay_args(&r, argc, argv) != 0) {
		fprintf(stderr, "collrun --relay: bad arguments: is the launcher the same coll "
		    "version?\n");
		return 2;
	}
	r.names = xcalloc((size_t)r.o.nhosts, sizeof *r.names);
	r.rank_host = xcalloc((size_t)r.o.nranks, sizeof *r.rank_host);
	r.pid_sent = xcalloc((size_t)r.o.nranks, sizeof *r.pid_sent);
	for (int k = 0; k < r.o.nranks; k++)
		r.rank_host[k] = -1;
	if (relay_plan(&r) != 0) {
		code = 2;
		goto out;
	}
	r.o.kind = LAUNCH_SSH;
	r.o.uid = &r.uid;
	r.o.hosts = (const char *const *)r.names;
	r.o.rank_host = r.rank_host;
	relay_proxy(&r);
	if (launch_start(&r.l, &r.o, &cb) != COLL_OK) {
		fprintf(stderr, "collrun --relay: cannot start the subtree: %s\n", strerror(errno));
		code = 1;
		goto out;
	}
	r.todo = xcalloc((size_t)r.o.nranks, sizeof *r.todo);
	for (int k = 0; k < r.o.nranks; k++)
		if (r.rank_host[k] >= 0)
			r.todo[r.ntodo++] = k;
	/* Signal records that came with the plan. */
	for (int sig = 1; sig < 65; sig++)
		if (r.pending[sig])
			launch_signal(r.l, sig);
	relay_loop(&r);
	launch_free(r.l);
out:
	/* After every rank below ended: none needs the root any more. */
	proxy_stop(r.proxy);
	for (int h = 0; h < r.o.nhosts; h++)
		free(r.names[h]);
	free(r.names);
	free(r.rank_host);
	free(r.pid_sent);
	free(r.todo);
	free(r.env);
	free(r.out);
	linebuf_free(&r.in);
	return code;
}
