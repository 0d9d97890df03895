/*
 * The tree launch (launch_opts.tree = K): past K hosts the front end starts
 * only a first layer of K, and each of them runs, beside its own ranks, a
 * relay (collrun --relay) for a contiguous share of the other hosts, which
 * does the same in turn (ClusterShell's gateways, Open MPI's tree spawn). So
 * no process holds more than K SSH sessions plus its share's relays, and the
 * front end K, not one per host.
 *
 * A relay's channel carries treeproto.h: the plan down, and up the records
 * of every rank below it, in the order they were made. A rank's end comes up
 * only after its output, so nothing is lost on the way. A relay that ends
 * (or whose host fails) before its ranks did takes them with it: each host
 * of its subtree still running is named, with the relay and why.
 *
 * The hosts below a relay are given the rendezvous address the relay was
 * given (where the front end reached the relay from): a cluster's hosts
 * share its networks, and a relay has no better idea where the root is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentproto.h"
#include "err.h"
#include "envwire.h"
#include "launch_ssh.h"
#include "msg.h"
#include "treeproto.h"
#include "xmalloc.h"

void
launch_sshtree_plan(struct launch *l, struct ssh *sh, const int *used, int nused)
{
	int k = sh->o.tree, r0 = sh->o.rank_host[0], *sub;

	if (k <= 0 || nused <= k) {
		for (int i = 0; i < nused; i++)
			launch_ssh_node_init(l, sh, &sh->nodes[sh->nnodes++], used[i], NULL, 0);
		return;
	}
	sub = xcalloc((size_t)nused, sizeof *sub);
	for (int g = 0; g < k; g++) {
		int lo = (int)((long long)g * nused / k), hi = (int)((long long)(g + 1) * nused / k);
		int relay = used[lo], ns = 0;

		/* Rank 0's host talks to us directly: MASTER_ADDR is where we reached it. */
		for (int i = lo; i < hi; i++)
			if (used[i] == r0)
				relay = r0;
		for (int i = lo; i < hi; i++)
			if (used[i] != relay)
				sub[ns++] = used[i];
		launch_ssh_node_init(l, sh, &sh->nodes[sh->nnodes++], relay, sub, ns);
	}
	free(sub);
}

static void
launch_sshtree_relay_word_int(struct shbuf *b, const char *opt, long v)
{
	char num[24];

	snprintf(num, sizeof num, "%ld", v);
	shquote_word(b, opt);
	shquote_word(b, num);
}

void
launch_sshtree_relay_ready(struct ssh *sh, struct ssh_chan *c, const char *uidstr, const char *via)
{
	const struct launch_opts *o = &sh->o;
	struct ssh_relay *rl = c->relay;
	struct shbuf b = { 0 }, in = { 0 };

	launch_ssh_command_head(sh, &b, "--relay");
	launch_sshtree_relay_word_int(&b, "--nranks", o->nranks);
	launch_sshtree_relay_word_int(&b, "--nhosts", o->nhosts);
	launch_sshtree_relay_word_int(&b, "--tree", o->tree);
	launch_sshtree_relay_word_int(&b, "--fanout", o->fanout);
	launch_sshtree_relay_word_int(&b, "--connect-timeout-ms", o->connect_timeout_ms);
	launch_sshtree_relay_word_int(&b, "--master-port", o->master_port);
	shquote_word(&b, "--master");
	shquote_word(&b, o->master_addr);
	if (via != NULL) {
		shquote_word(&b, "--root-via");
		shquote_word(&b, via);
	}
	if (o->accept_new)
		shquote_word(&b, "--accept-new");
	if (o->ssh_config != NULL) {
		shquote_word(&b, "--ssh-config");
		shquote_word(&b, o->ssh_config);
	}
	if (o->cwd != NULL) {
		shquote_word(&b, "--cwd");
		shquote_word(&b, o->cwd);
	}
	shquote_word(&b, "--");
	for (char *const *a = o->argv; *a != NULL; a++)
		shquote_word(&b, *a);
	c->cmd = b.p;
	/* The id, the plan, then what was queued before the host was ready. */
	shquote_raw(&in, uidstr);
	shquote_raw(&in, "\n");
	/* The user's variables among the plan's lines: never on the relay's command line. */
	envwire_encode(&in, o->env);
	for (int i = 0; i < rl->nhosts; i++) {
		int h = rl->hosts[i], first = sh->host_first[h];
		char *line = treeproto_encode_host(h, o->hosts[h], sh->host_ranks + first,
		    sh->host_first[h + 1] - first);

		shquote_raw(&in, line);
		shquote_raw(&in, "\n");
		free(line);
	}
	shquote_raw(&in, ".\n");
	if (c->input != NULL) {
		char *pending = c->input;

		pending[c->input_len] = '\0';
		shquote_raw(&in, pending);
		free(pending);
	}
	c->input = in.p;
	c->input_len = in.len;
}

/* The rank's records under this relay (its ranks are in order). */
static struct agentrx *
launch_sshtree_relay_rx(struct ssh_relay *rl, int rank)
{
	int *at = bsearch(&rank, rl->ranks, (size_t)rl->nranks, sizeof *rl->ranks, launch_ssh_int_cmp);

	return at != NULL ? &rl->rx[at - rl->ranks] : NULL;
}

void
launch_sshtree_relay_line(struct launch *l, struct ssh_chan *c, int stream, const char *line, size_t len)
{
	struct ssh *sh = l->impl;
	struct ssh_relay *rl = c->relay;
	struct treeproto_up u;
	struct agentrx *rx;

	/* What is not a record of its own subtree was said by a shell or the relay itself. */
	if (stream == LAUNCH_STDERR ||
	    treeproto_parse_up(line, len, sh->o.nranks, sh->o.nhosts, &u) != COLL_OK ||
	    (u.kind == TREEPROTO_HOST ? sh->host_via[u.host] != c : sh->via[u.rank] != c)) {
		if (len > 0) {
			snprintf(rl->said, sizeof rl->said, "%.*s", (int)len, line);
			msg_clean(rl->said);	/* a remote shell's words, printed when it ends */
		}
		return;
	}
	/* Noise before the relay began speaking is not why it ended. */
	rl->said[0] = '\0';
	if (u.kind == TREEPROTO_HOST) {
		char why[AGENTPROTO_PIECE + 1];

		snprintf(why, sizeof why, "%.*s", (int)u.len, u.text);
		msg_clean(why);
		l->cb.host_failed(l->cb.arg, u.host, why);
		return;
	}
	if (sh->done[u.rank] || (rx = launch_sshtree_relay_rx(rl, u.rank)) == NULL)
		return;
	if (u.kind == TREEPROTO_RECORD)
		agentrx_line(rx, u.text, u.len);
	if (u.kind != TREEPROTO_RECORD || rx->ended) {
		agentrx_flush(rx);
		launch_ssh_report_rank(l, u.rank, u.kind == TREEPROTO_FAILED ? LAUNCH_FAILED :
		    u.kind == TREEPROTO_LOST ? LAUNCH_LOST : rx->state,
		    u.kind == TREEPROTO_RECORD ? rx->code : 255);
	}
}

void
launch_sshtree_relay_lose(struct launch *l, struct ssh_node *n, struct ssh_chan *c, const char *why)
{
	struct ssh *sh = l->impl;
	struct ssh_relay *rl = c->relay;
	char *named = xcalloc((size_t)sh->o.nhosts, 1);

	for (int k = 0; k < rl->nranks; k++) {
		int r = rl->ranks[k], h = sh->o.rank_host[r];
		char text[sizeof rl->said + 512];

		if (sh->done[r])
			continue;
		/* Its host first (the ranks' end alone does not say why), once per host. */
		if (why != NULL && !named[h]) {
			named[h] = 1;
			snprintf(text, sizeof text, "%s: its relay on %s %s%s%s", c->st >= CH_RUN ?
			    "lost" : "not started", sh->o.hosts[n->host], why, rl->said[0] ? ": " :
			    "", rl->said);
			l->cb.host_failed(l->cb.arg, h, text);
		}
		agentrx_flush(&rl->rx[k]);
		launch_ssh_report_rank(l, r, LAUNCH_FAILED, 255);
	}
	free(named);
}

void
launch_sshtree_relay_free(struct ssh_relay *rl)
{
	if (rl == NULL)
		return;
	for (int k = 0; k < rl->nranks; k++)
		agentrx_free(&rl->rx[k]);
	free(rl->rx);
	free(rl->ranks);
	free(rl->hosts);
	free(rl);
}
