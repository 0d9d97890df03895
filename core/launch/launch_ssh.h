/*
 * The SSH launcher's insides, shared by launch_ssh.c (hosts, channels, the
 * poll loop) and launch_sshtree.c (the tree launch: relays and subtrees).
 */
#ifndef COLL_LAUNCH_SSH_H
#define COLL_LAUNCH_SSH_H

#include "agentrx.h"
#include "launch.h"
#include "linebuf.h"
#include "shquote.h"
#include "sshhost.h"

enum { CH_OPEN, CH_EXEC, CH_RUN, CH_CLOSE, CH_WAITCLOSE, CH_DONE };

struct ssh_chan {
	int rank;
	int st;
	LIBSSH2_CHANNEL *ch;
	char *cmd;
	char *input;		/* to the agent's stdin: the unique id, then signal records */
	size_t input_len;
	size_t input_off;
	struct linebuf lb[2];	/* the agent's records; the remote shell's stderr */
	struct agentrx rx;
	int want_eof;
	int signalled[65];	/* a signal record already went out for this signal */
	struct ssh_relay *relay;	/* NULL: one rank's agent; else a relay for a subtree */
};

/* A channel running collrun --relay: the hosts it starts and their ranks. */
struct ssh_relay {
	int nhosts;
	int *hosts;		/* job host indexes */
	int nranks;
	int *ranks;
	struct agentrx *rx;	/* per rank of ranks: its records */
	char said[512];		/* its last line that was not a record (a shell's complaint) */
};

struct ssh_node {
	struct sshhost h;
	int host;		/* index into launch_opts.hosts */
	int reported;
	int stopped;		/* abandoned by a stop before it was ready */
	int watched;		/* the session's fd as watched on the loop, or -1 */
	int nchan;
	struct ssh_chan *chans;
};

struct ssh {
	struct launch_opts o;
	char master_addr[64];
	int nnodes;
	struct ssh_node *nodes;
	int stopping;
	int *done;		/* per rank: its end was reported */
	const struct agentrx **rx;	/* per rank: its channel's records, pid and end */
	struct ssh_chan **via;	/* per rank: the relay channel it runs under, or NULL */
	struct ssh_chan **host_via;	/* per host: likewise */
	/*
	 * Each host's ranks, ascending: host_ranks[host_first[h] ..
	 * host_first[h + 1]). Made once, so that starting a node or writing a
	 * relay's plan looks at its own ranks, not every rank of the job.
	 */
	int *host_first;
	int *host_ranks;
	struct loop *loop;	/* every session's socket, in the direction libssh2 asks for */
};

struct ssh_line_ctx {
	struct launch *l;
	struct ssh_chan *c;
	int stream;
};

/* launch_ssh.c */
void launch_ssh_report_rank(struct launch *l, int rank, int state, int code);
/* "cd CWD; exec AGENT MODE --uid-stdin [--path BIN] [--libpath LIB]" */
void launch_ssh_command_head(const struct ssh *sh, struct shbuf *b, const char *mode);
void launch_ssh_node_init(struct launch *l, struct ssh *sh, struct ssh_node *n, int host,
    const int *sub, int nsub);
/* qsort's order of ints. */
int launch_ssh_int_cmp(const void *a, const void *b);

/* launch_sshtree.c */
/* The nodes the front end talks to: all used hosts, or a first layer of o->tree. */
void launch_sshtree_plan(struct launch *l, struct ssh *sh, const int *used, int nused);
/* The relay channel's command line and its stdin (uid, plan, queued signals). */
void launch_sshtree_relay_ready(struct ssh *sh, struct ssh_chan *c, const char *uidstr, const char *via);
void launch_sshtree_relay_line(struct launch *l, struct ssh_chan *c, int stream, const char *line,
    size_t len);
/* The relay ended, or never ran: every rank it did not report is lost, named with why. */
void launch_sshtree_relay_lose(struct launch *l, struct ssh_node *n, struct ssh_chan *c, const char *why);
void launch_sshtree_relay_free(struct ssh_relay *r);

#endif
