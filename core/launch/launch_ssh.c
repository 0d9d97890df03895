/*
 * The SSH launcher: one libssh2 session per host, all non-blocking in one
 * poll loop (no thread or process per host), at most `fanout` hosts
 * connecting at once. Each rank is a channel running this suite's agent
 * (collrun --agent) on its host, which puts the program in its own process
 * group and kills the group when its stdin (our channel) closes: so a rank
 * whose collrun vanished dies by itself. The agent speaks agentproto.h: the
 * program's output, its pid and its end arrive as records on the channel's
 * stdout, and signals go to the agent as records on its stdin (libssh2 1.10
 * cannot send signals), so nothing the program prints can act as control.
 * The channel's stderr carries only what the remote shell and the agent say
 * before the protocol starts.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentproto.h"
#include "agentrx.h"
#include "clock.h"
#include "envwire.h"
#include "err.h"
#include "launch.h"
#include "linebuf.h"
#include "loop.h"
#include "shquote.h"
#include "launch_ssh.h"
#include "sshhost.h"
#include "xmalloc.h"

static int ssh_inited;

void
launch_ssh_command_head(const struct ssh *sh, struct shbuf *b, const char *mode)
{
	/* Start where collrun was started when that directory exists there too. */
	if (sh->o.cwd != NULL) {
		shquote_raw(b, "cd");
		shquote_word(b, sh->o.cwd);
		shquote_raw(b, " 2>/dev/null; ");
	}
	shquote_raw(b, "exec");
	shquote_word(b, sh->o.agent);
	shquote_word(b, mode);
	/* The unique id holds the job's secret: it goes on stdin, never in argv (ps). */
	shquote_word(b, "--uid-stdin");
	/* So may the user's -x variables (envwire.h): tokens and keys travel that way. */
	if (sh->o.env != NULL && sh->o.env[0] != NULL)
		shquote_word(b, "--env-stdin");
	/* The launching installation's bin and lib first there too (Open MPI's --prefix). */
	if (sh->o.bindir != NULL) {
		shquote_word(b, "--path");
		shquote_word(b, sh->o.bindir);
	}
	if (sh->o.libdir != NULL) {
		shquote_word(b, "--libpath");
		shquote_word(b, sh->o.libdir);
	}
}

/* Rank's place among its host's ranks, from the index (ascending: a binary search). */
static void
launch_ssh_place(const struct ssh *sh, int rank, int *lrank, int *lsize)
{
	int h = sh->o.rank_host[rank], lo = sh->host_first[h], hi = sh->host_first[h + 1];

	*lsize = hi - lo;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (sh->host_ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	*lrank = lo - sh->host_first[h];
}

/* Is var one of the user's own (-x), which go on stdin? */
static int
launch_ssh_user_var(const struct ssh *sh, const char *var)
{
	for (char *const *e = sh->o.env; e != NULL && *e != NULL; e++)
		if (strcmp(*e, var) == 0)
			return 1;
	return 0;
}

static char *
launch_ssh_command(const struct ssh *sh, int rank, const char *uidstr, const char *via)
{
	struct shbuf b = { 0 };
	int lrank, lsize;
	char **env;

	launch_ssh_place(sh, rank, &lrank, &lsize);
	env = launch_env_vars(&sh->o, rank, lrank, lsize, uidstr);

	launch_ssh_command_head(sh, &b, "--agent");
	if (via != NULL) {
		char var[NET_ADDRSTR_LEN + 16];

		snprintf(var, sizeof var, "COLL_ROOT_VIA=%s", via);
		shquote_word(&b, "-e");
		shquote_word(&b, var);
	}
	for (char **e = env; *e != NULL; e++) {
		if (strncmp(*e, "COLL_UNIQUE_ID=", 15) == 0 || launch_ssh_user_var(sh, *e))
			continue;
		shquote_word(&b, "-e");
		shquote_word(&b, *e);
	}
	shquote_word(&b, "--");
	for (char *const *a = sh->o.argv; *a != NULL; a++)
		shquote_word(&b, *a);
	launch_env_free(env);
	return b.p;
}

void
launch_ssh_report_rank(struct launch *l, int rank, int state, int code)
{
	struct ssh *sh = l->impl;

	if (sh->done[rank])
		return;
	sh->done[rank] = 1;
	l->cb.exited(l->cb.arg, rank, state, code);
}

static void
launch_ssh_line(void *arg, const char *line, size_t len)
{
	struct ssh_line_ctx *x = arg;

	if (x->c->relay != NULL) {
		launch_sshtree_relay_line(x->l, x->c, x->stream, line, len);
		return;
	}
	if (x->stream == LAUNCH_STDERR) {
		x->l->cb.output(x->l->cb.arg, x->c->rank, LAUNCH_STDERR, line, len);
		return;
	}
	agentrx_line(&x->c->rx, line, len);
}

/* Drain both streams; returns 1 if bytes moved, -1 if the session broke. */
static int
launch_ssh_chan_read(struct launch *l, struct ssh_node *n, struct ssh_chan *c)
{
	char buf[32768];
	int moved = 0;

	for (int s = 0; s < 2; s++) {
		struct ssh_line_ctx ctx = { l, c, s + 1 };
		ssize_t r;

		while ((r = libssh2_channel_read_ex(c->ch, s, buf, sizeof buf)) > 0) {
			linebuf_feed(&c->lb[s], buf, (size_t)r, launch_ssh_line, &ctx);
			moved = 1;
		}
		if (r < 0 && r != LIBSSH2_ERROR_EAGAIN) {
			sshhost_fail(&n->h, "lost the connection while ranks ran: %s",
			    sshhost_error(&n->h));
			return -1;
		}
	}
	return moved;
}

static int
launch_ssh_signum(const char *name)
{
	for (int s = 1; s < 65; s++)
		if (sigabbrev_np(s) != NULL && strcmp(sigabbrev_np(s), name) == 0)
			return s;
	return SIGKILL;
}

/* The channel closed: its exit status or signal ends the rank. */
static void
launch_ssh_chan_finish(struct launch *l, struct ssh_node *n, struct ssh_chan *c)
{
	char *sig = NULL;
	size_t siglen = 0;

	for (int s = 0; s < 2; s++) {
		struct ssh_line_ctx ctx = { l, c, s + 1 };
		linebuf_flush(&c->lb[s], launch_ssh_line, &ctx);
	}
	agentrx_flush(&c->rx);
	/* The agent's word first; sshd's when the agent itself was killed. */
	libssh2_channel_get_exit_signal(c->ch, &sig, &siglen, NULL, NULL, NULL, NULL);
	if (c->relay != NULL) {
		char why[160];

		if (sig != NULL && siglen > 0)
			snprintf(why, sizeof why, "was killed by signal %s", sig);
		else
			snprintf(why, sizeof why, "exited with code %d before its ranks ended",
			    libssh2_channel_get_exit_status(c->ch));
		launch_sshtree_relay_lose(l, n, c, why);
	} else if (c->rx.ended)
		launch_ssh_report_rank(l, c->rank, c->rx.state, c->rx.code);
	else if (sig != NULL && siglen > 0)
		launch_ssh_report_rank(l, c->rank, LAUNCH_SIGNALED, launch_ssh_signum(sig));
	else
		launch_ssh_report_rank(l, c->rank, LAUNCH_EXITED, libssh2_channel_get_exit_status(c->ch));
	free(sig);
	libssh2_channel_free(c->ch);
	c->ch = NULL;
	c->st = CH_DONE;
}

static int
launch_ssh_chan_start(struct launch *l, struct ssh_node *n, struct ssh_chan *c)
{
	LIBSSH2_SESSION *s = n->h.s;
	int r;

	if (c->st == CH_OPEN) {
		if ((c->ch = libssh2_channel_open_session(s)) == NULL) {
			if (libssh2_session_last_errno(s) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			l->cb.host_failed(l->cb.arg, n->host, c->relay != NULL ? "cannot open a "
			    "channel for the relay beside this host's ranks: raise sshd's MaxSessions "
			    "(10 by default) above ranks per host, or use --tree 0" : "cannot open a "
			    "channel for a rank: raise sshd's MaxSessions (10 by default) for many "
			    "ranks per host");
			if (c->relay != NULL)
				launch_sshtree_relay_lose(l, n, c, "could not be started");
			else
				launch_ssh_report_rank(l, c->rank, LAUNCH_FAILED, 255);
			c->st = CH_DONE;
			return 1;
		}
		c->st = CH_EXEC;
	}
	r = libssh2_channel_exec(c->ch, c->cmd);
	if (r == LIBSSH2_ERROR_EAGAIN)
		return 0;
	if (r != 0) {
		sshhost_fail(&n->h, "cannot start a command: %s", sshhost_error(&n->h));
		return 1;
	}
	c->st = CH_RUN;
	return 1;
}

static int
launch_ssh_chan_drive(struct launch *l, struct ssh_node *n, struct ssh_chan *c)
{
	int moved = 0, r;

	if (c->st == CH_OPEN || c->st == CH_EXEC)
		moved = launch_ssh_chan_start(l, n, c);
	if (c->st == CH_RUN && c->input_off < c->input_len) {
		ssize_t w = libssh2_channel_write(c->ch, c->input + c->input_off,
		    c->input_len - c->input_off);
		if (w > 0) {
			c->input_off += (size_t)w;
			moved = 1;
		}
	}
	if (c->st == CH_RUN) {
		/* The end of stdin stops the rank: only once every record went out. */
		if (c->want_eof && c->input_off == c->input_len &&
		    libssh2_channel_send_eof(c->ch) != LIBSSH2_ERROR_EAGAIN)
			c->want_eof = 0;
		if ((r = launch_ssh_chan_read(l, n, c)) < 0)
			return 1;
		moved |= r;
		if (libssh2_channel_eof(c->ch))
			c->st = CH_CLOSE;
	}
	if (c->st == CH_CLOSE && (r = libssh2_channel_close(c->ch)) != LIBSSH2_ERROR_EAGAIN)
		c->st = CH_WAITCLOSE;
	if (c->st == CH_WAITCLOSE &&
	    (r = libssh2_channel_wait_closed(c->ch)) != LIBSSH2_ERROR_EAGAIN) {
		launch_ssh_chan_finish(l, n, c);
		moved = 1;
	}
	return moved;
}

/* Channel handles belong to the session: let go of them before it goes. */
static void
launch_ssh_node_drop_channels(struct ssh_node *n)
{
	sshhost_block(&n->h);
	for (int i = 0; i < n->nchan; i++) {
		struct ssh_chan *c = &n->chans[i];

		if (c->ch != NULL && n->h.s != NULL)
			libssh2_channel_free(c->ch);
		c->ch = NULL;
		c->st = CH_DONE;
	}
}

/* A host failed: say why once, and end every rank it had. */
static void
launch_ssh_node_report(struct launch *l, struct ssh_node *n)
{
	if (n->reported)
		return;
	n->reported = 1;
	/* A host we stopped ourselves did not fail: its ranks just never ran. */
	if (!n->stopped)
		l->cb.host_failed(l->cb.arg, n->host, n->h.why);
	for (int i = 0; i < n->nchan; i++) {
		if (n->chans[i].relay == NULL)
			launch_ssh_report_rank(l, n->chans[i].rank, LAUNCH_FAILED, 255);
		else if (!n->stopped)
			launch_sshtree_relay_lose(l, n, &n->chans[i], n->chans[i].st >= CH_RUN ?
			    "lost its connection" : "could not be used");
		else
			launch_sshtree_relay_lose(l, n, &n->chans[i], NULL);
	}
	launch_ssh_node_drop_channels(n);
	sshhost_close(&n->h);
}

/* An agent's stdin: the unique id, the user's variables, then what was queued for it. */
static char *
launch_ssh_input(const struct ssh *sh, const char *uidstr, const char *pending, size_t plen)
{
	struct shbuf in = { 0 };
	char *rest = xasprintf("%.*s", (int)plen, pending != NULL ? pending : "");

	shquote_raw(&in, uidstr);
	shquote_raw(&in, "\n");
	if (sh->o.env != NULL && sh->o.env[0] != NULL) {
		envwire_encode(&in, sh->o.env);
		shquote_raw(&in, ".\n");
	}
	shquote_raw(&in, rest);
	free(rest);
	return in.p;
}

static void
launch_ssh_node_ready(struct ssh *sh, struct ssh_node *n)
{
	struct coll_uid uid = *sh->o.uid;
	char uidstr[UID_STR_LEN], buf[NET_ADDRSTR_LEN];
	const char *via = NULL;
	struct net_addr at;

	/*
	 * A root on every address (no COLL_SOCKET_IFNAME): give this host the
	 * address that reached it. A root on a chosen interface keeps its own.
	 */
	if (net_addr_is_any(&sh->o.uid->root)) {
		uid.root = n->h.local;
		net_addr_set_port(&uid.root, net_addr_port(&sh->o.uid->root));
	}
	uid_format(&uid, uidstr, sizeof uidstr);
	/* Our root proxy, likewise: at the address that reached this host. */
	if (sh->o.root_via_port > 0) {
		at = n->h.local;
		net_addr_set_port(&at, (uint16_t)sh->o.root_via_port);
		net_addr_format(&at, buf, sizeof buf);
		via = buf;
	}
	for (int i = 0; i < n->nchan; i++) {
		struct ssh_chan *c = &n->chans[i];
		char *pending = c->input;	/* signal records queued before the host was ready */

		if (c->relay != NULL) {
			launch_sshtree_relay_ready(sh, c, uidstr, via);
			continue;
		}
		c->cmd = launch_ssh_command(sh, c->rank, uidstr, via);
		c->input = launch_ssh_input(sh, uidstr, pending, c->input_len);
		c->input_len = strlen(c->input);
		free(pending);
	}
}

static int
launch_ssh_node_run(struct launch *l, struct ssh_node *n)
{
	int moved = 0, live = 0, next;

	for (int i = 0; i < n->nchan && n->h.state == SH_READY; i++) {
		moved |= launch_ssh_chan_drive(l, n, &n->chans[i]);
		live += n->chans[i].st != CH_DONE;
	}
	if (n->h.state == SH_READY)
		libssh2_keepalive_send(n->h.s, &next);
	if (n->h.state == SH_READY && live == 0) {
		sshhost_close(&n->h);
		n->h.state = SH_DONE;
		moved = 1;
	}
	return moved;
}

static int
launch_ssh_node_drive(struct launch *l, struct ssh_node *n)
{
	struct ssh *sh = l->impl;
	int moved = 0;

	while (n->h.state > SH_IDLE && n->h.state < SH_READY && sshhost_step(&n->h))
		moved = 1;
	if (moved && n->h.state == SH_READY)
		launch_ssh_node_ready(sh, n);
	if (n->h.state == SH_READY)
		moved |= launch_ssh_node_run(l, n);
	if (n->h.state == SH_FAILED && !n->reported) {
		launch_ssh_node_report(l, n);
		moved = 1;
	}
	return moved;
}

static void
launch_ssh_start_more(struct ssh *sh)
{
	int connecting = 0;

	for (int i = 0; i < sh->nnodes; i++)
		connecting += sh->nodes[i].h.state > SH_IDLE && sh->nodes[i].h.state < SH_READY;
	for (int i = 0; i < sh->nnodes && connecting < sh->o.fanout && !sh->stopping; i++) {
		if (sh->nodes[i].h.state != SH_IDLE)
			continue;
		sshhost_start(&sh->nodes[i].h, sh->o.connect_timeout_ms);
		connecting++;
	}
}

int
launch_ssh_int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Each host's ranks, ascending, in one pass over the ranks (a counting sort). */
static void
launch_ssh_index_hosts(struct ssh *sh)
{
	const struct launch_opts *o = &sh->o;
	int *at;

	sh->host_first = xcalloc((size_t)o->nhosts + 1, sizeof *sh->host_first);
	sh->host_ranks = xcalloc((size_t)o->nranks + 1, sizeof *sh->host_ranks);
	for (int r = 0; r < o->nranks; r++)
		if (o->rank_host[r] >= 0)
			sh->host_first[o->rank_host[r] + 1]++;
	for (int h = 0; h < o->nhosts; h++)
		sh->host_first[h + 1] += sh->host_first[h];
	at = xcalloc((size_t)o->nhosts + 1, sizeof *at);
	memcpy(at, sh->host_first, (size_t)o->nhosts * sizeof *at);
	for (int r = 0; r < o->nranks; r++)
		if (o->rank_host[r] >= 0)
			sh->host_ranks[at[o->rank_host[r]]++] = r;
	free(at);
}

/* A node's relay channel c for the hosts sub below it: their ranks' records come up c. */
static void
launch_ssh_relay_init(struct launch *l, struct ssh *sh, struct ssh_chan *c, const int *sub, int nsub)
{
	struct ssh_relay *rl = xcalloc(1, sizeof *rl);

	*c = (struct ssh_chan){ .rank = -1, .st = CH_OPEN, .relay = rl };
	rl->nhosts = nsub;
	rl->hosts = xcalloc((size_t)nsub, sizeof *rl->hosts);
	memcpy(rl->hosts, sub, (size_t)nsub * sizeof *sub);
	for (int i = 0; i < nsub; i++) {
		sh->host_via[sub[i]] = c;
		rl->nranks += sh->host_first[sub[i] + 1] - sh->host_first[sub[i]];
	}
	rl->ranks = xcalloc((size_t)rl->nranks, sizeof *rl->ranks);
	rl->rx = xcalloc((size_t)rl->nranks, sizeof *rl->rx);
	for (int i = 0, k = 0; i < nsub; i++)
		for (int j = sh->host_first[sub[i]]; j < sh->host_first[sub[i] + 1]; j++)
			rl->ranks[k++] = sh->host_ranks[j];
	/* In rank order: launch_sshtree_relay_rx finds a rank's records by bsearch. */
	qsort(rl->ranks, (size_t)rl->nranks, sizeof *rl->ranks, launch_ssh_int_cmp);
	for (int k = 0; k < rl->nranks; k++) {
		int r = rl->ranks[k];

		agentrx_init(&rl->rx[k], l, r);
		sh->rx[r] = &rl->rx[k];
		sh->via[r] = c;
	}
}

void
launch_ssh_node_init(struct launch *l, struct ssh *sh, struct ssh_node *n, int host, const int *sub,
    int nsub)
{
	const struct launch_opts *o = &sh->o;
	int first = sh->host_first[host], own = sh->host_first[host + 1] - first;

	n->host = host;
	n->watched = -1;
	sshhost_init(&n->h, o->hosts[host], o->ssh_config, o->accept_new);
	/* The host's own ranks' channels, then the relay's, if it has one. */
	n->nchan = own + (nsub > 0);
	n->chans = xcalloc((size_t)n->nchan, sizeof *n->chans);
	if (nsub > 0)
		launch_ssh_relay_init(l, sh, &n->chans[own], sub, nsub);
	for (int k = 0; k < own; k++) {
		int r = sh->host_ranks[first + k];

		n->chans[k] = (struct ssh_chan){ .rank = r, .st = CH_OPEN };
		agentrx_init(&n->chans[k].rx, l, r);
		sh->rx[r] = &n->chans[k].rx;
	}
}

static void launch_ssh_free(struct launch *l);

static int
launch_ssh_start(struct launch *l, const struct launch_opts *o)
{
	struct ssh *sh = xcalloc(1, sizeof *sh);
	int *used = xcalloc((size_t)o->nhosts, sizeof *used), nused = 0;

	if (!ssh_inited++)
		libssh2_init(0);
	l->impl = sh;
	sh->o = *o;
	sh->done = xcalloc((size_t)o->nranks, sizeof *sh->done);
	sh->rx = xcalloc((size_t)o->nranks, sizeof *sh->rx);
	sh->via = xcalloc((size_t)o->nranks, sizeof *sh->via);
	sh->host_via = xcalloc((size_t)o->nhosts, sizeof *sh->host_via);
	launch_ssh_index_hosts(sh);
	/* A relay knows only its subtree's ranks: the others are no business of its. */
	for (int r = 0; r < o->nranks; r++)
		sh->done[r] = o->rank_host[r] < 0;
	for (int h = 0; h < o->nhosts; h++)
		if (sh->host_first[h + 1] > sh->host_first[h])
			used[nused++] = h;
	sh->nodes = xcalloc((size_t)nused, sizeof *sh->nodes);
	launch_sshtree_plan(l, sh, used, nused);
	/* torchrun's MASTER_ADDR: where rank 0's host was reached (a relay is told). */
	snprintf(sh->master_addr, sizeof sh->master_addr, "%s", o->master_addr ? o->master_addr :
	    "");
	for (int i = 0; i < sh->nnodes; i++)
		if (sh->nodes[i].host == o->rank_host[0])
			net_addr_host(&sh->nodes[i].h.addr, sh->master_addr, sizeof sh->master_addr);
	sh->o.master_addr = sh->master_addr;
	free(used);
	if ((sh->loop = loop_new()) == NULL) {
		int e = errno;

		launch_ssh_free(l);
		errno = e;
		return COLL_ESYS;
	}
	return COLL_OK;
}

static int launch_ssh_running(const struct launch *l);

/* How long poll may sleep: the caller's limit, the nearest connect deadline, keepalives. */
static int
launch_ssh_wait_ms(struct ssh *sh, int timeout_ms)
{
	uint64_t now = clock_now_ms();
	int t = timeout_ms < 0 || timeout_ms > 1000 ? 1000 : timeout_ms;

	for (int i = 0; i < sh->nnodes; i++) {
		struct sshhost *h = &sh->nodes[i].h;

		if (h->state > SH_IDLE && h->state < SH_READY)
			t = h->deadline <= now ? 0 : (h->deadline - now < (uint64_t)t ?
			    (int)(h->deadline - now) : t);
	}
	return t;
}

/* The round only wakes: libssh2 needs every session driven after it anyway. */
static void
launch_ssh_on_ready(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events, (void)arg;
}

/*
 * Each live session's socket in the direction libssh2 waits for. A closed
 * session's fd number may be a newer session's now: every stale watch goes
 * before any new one is made.
 */
static void
launch_ssh_watch(struct ssh *sh)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < sh->nnodes; i++) {
			struct ssh_node *n = &sh->nodes[i];
			struct sshhost *h = &n->h;
			int fd = h->fd >= 0 && h->state > SH_IDLE && h->state <= SH_READY ? h->fd : -1;
			short ev = fd >= 0 ? sshhost_events(h) : 0;
			int mask = ((ev & POLLIN) ? LOOP_READ : 0) | ((ev & POLLOUT) ? LOOP_WRITE : 0);

			if (pass == 0 && n->watched >= 0 && n->watched != fd) {
				loop_unwatch(sh->loop, n->watched);
				n->watched = -1;
			} else if (pass == 1 && fd >= 0 &&
			    loop_watch(sh->loop, fd, mask, launch_ssh_on_ready, n) == COLL_OK) {
				n->watched = fd;
			}
		}
}

static int
launch_ssh_poll(struct launch *l, int timeout_ms, int wake_fd)
{
	struct ssh *sh = l->impl;
	int moved = 0, r;

	launch_ssh_start_more(sh);
	for (int i = 0; i < sh->nnodes; i++)
		moved |= launch_ssh_node_drive(l, &sh->nodes[i]);
	if (moved || launch_ssh_running(l) == 0)
		return launch_ssh_running(l);
	launch_ssh_watch(sh);
	if (wake_fd >= 0)
		loop_watch(sh->loop, wake_fd, LOOP_READ, launch_ssh_on_ready, NULL);
	r = loop_once(sh->loop, launch_ssh_wait_ms(sh, timeout_ms));
	if (wake_fd >= 0)
		loop_unwatch(sh->loop, wake_fd);
	if (r < 0)
		return launch_ssh_running(l);
	for (int i = 0; i < sh->nnodes; i++)
		launch_ssh_node_drive(l, &sh->nodes[i]);
	return launch_ssh_running(l);
}

/* Queue a signal record for the rank's agent, which signals its own group. */
static void
launch_ssh_queue_signal(struct ssh_chan *c, int sig)
{
	char rec[AGENTPROTO_LINE];
	size_t n = agentproto_encode_number(rec, AGENTPROTO_KILL, sig);

	c->input = xreallocarray(c->input, c->input_len + n + 1, 1);
	memcpy(c->input + c->input_len, rec, n + 1);
	c->input_len += n;
}

static void
launch_ssh_signal(struct launch *l, int sig)
{
	struct ssh *sh = l->impl;
	int stop = sig == SIGTERM || sig == SIGKILL;

	sh->stopping |= stop;
	for (int i = 0; i < sh->nnodes; i++) {
		struct ssh_node *n = &sh->nodes[i];

		if (stop && n->h.state < SH_READY && n->h.state != SH_FAILED) {
			n->stopped = 1;
			sshhost_fail(&n->h, "not started: the job was stopped first");
		}
		/* A host still connecting gets the record after its id (launch_ssh_node_ready). */
		if (n->h.state > SH_READY)
			continue;
		for (int k = 0; k < n->nchan; k++) {
			struct ssh_chan *c = &n->chans[k];

			/* A stop by SIGTERM is the end of stdin alone: the agent sends that TERM. */
			if (c->st != CH_DONE && sig > 0 && sig < 65 && !c->signalled[sig] &&
			    sig != SIGTERM) {
				c->signalled[sig] = 1;
				launch_ssh_queue_signal(c, sig);
			}
			/*
			 * Closing stdin makes the agent end the group whatever it was
			 * doing; a channel still opening closes it once the id is out.
			 */
			if (stop && c->st != CH_DONE)
				c->want_eof = 1;
		}
	}
}

static int
launch_ssh_running(const struct launch *l)
{
	const struct ssh *sh = l->impl;
	int n = 0;

	for (int r = 0; r < sh->o.nranks; r++)
		n += !sh->done[r];
	return n;
}

static pid_t
launch_ssh_pid(const struct launch *l, int rank)
{
	const struct agentrx *rx = ((const struct ssh *)l->impl)->rx[rank];

	return rx != NULL ? rx->pid : -1;
}

static void
launch_ssh_free_chans(struct ssh_chan *c, int n)
{
	for (int i = 0; i < n; i++) {
		linebuf_free(&c[i].lb[0]);
		linebuf_free(&c[i].lb[1]);
		agentrx_free(&c[i].rx);
		free(c[i].cmd);
		free(c[i].input);
	}
	free(c);
}

static void
launch_ssh_free(struct launch *l)
{
	struct ssh *sh = l->impl;

	for (int i = 0; i < sh->nnodes; i++) {
		struct ssh_node *n = &sh->nodes[i];

		launch_ssh_node_drop_channels(n);
		sshhost_close(&n->h);
		for (int k = 0; k < n->nchan; k++)
			launch_sshtree_relay_free(n->chans[k].relay);
		launch_ssh_free_chans(n->chans, n->nchan);
	}
	free(sh->nodes);
	free(sh->done);
	free(sh->rx);
	free(sh->via);
	free(sh->host_via);
	free(sh->host_first);
	free(sh->host_ranks);
	loop_free(sh->loop);
	free(sh);
	l->impl = NULL;
}

const struct launch_ops launch_ssh_ops = {
	launch_ssh_start, launch_ssh_poll, launch_ssh_signal, launch_ssh_running, launch_ssh_pid, launch_ssh_free,
};
