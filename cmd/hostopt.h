/*
 * Where a tool's ranks run: the host options collrun and collcheck share
 * (-H, --hostfile, a Slurm allocation, -x, -N, --place, --launcher and the
 * SSH settings), turned into the job's hosts, rank placement and launcher.
 * Hosts come from -H, else --hostfile, else a Slurm allocation's
 * SLURM_JOB_NODELIST; without any, every rank runs here.
 */
#ifndef COLL_HOSTOPT_H
#define COLL_HOSTOPT_H

#include <stddef.h>

#include "hostlist.h"
#include "job.h"
#include "opt.h"

/* Option ids of the shared entries; a tool's own ids stay below HO_FIRST. */
enum { HO_FIRST = 1000, HO_HOSTS = HO_FIRST, HO_EXCLUDE, HO_HOSTFILE, HO_PER_HOST, HO_PLACE,
	HO_LAUNCHER, HO_CONNECT_TIMEOUT, HO_FANOUT, HO_TREE, HO_ACCEPT_NEW, HO_SSH_CONFIG,
	HO_PREFIX, HO_OVERSUBSCRIBE, HO_LAST };

/* --tree's default: past this many hosts, start them through relays of this width. */
#define HOSTOPT_TREE_AUTO_HOSTS 128
#define HOSTOPT_TREE_AUTO_WIDTH 32
/*
 * A relay is one more SSH session beside its host's ranks: by default the
 * tree is used only while that stays within sshd's MaxSessions (10).
 */
#define HOSTOPT_TREE_AUTO_MAX_PER_HOST 10

/*
 * The entries, for a tool's option table; per_host_help says what -N means
 * there. HOSTOPT_TABLE gives --exclude pdsh's -x; collrun, whose -x is
 * mpirun's (export a variable), has it long only (exclude_short 0).
 */
#define HOSTOPT_TABLE(per_host_help) HOSTOPT_TABLE_X(per_host_help, 'x')
#define HOSTOPT_TABLE_X(per_host_help, exclude_short) \
	{ HO_HOSTS, 'H', "hosts", OPT_VALUE, "HOSTS", "hosts as node[01-16],n[1-3,7] with " \
	    "optional :slots", NULL }, \
	{ HO_EXCLUDE, exclude_short, "exclude", OPT_VALUE, "HOSTS", "leave these hosts out " \
	    "(ranges too)", NULL }, \
	{ HO_OVERSUBSCRIBE, 0, "oversubscribe", OPT_FLAG, NULL, "run more ranks on a host " \
	    "than its slots", NULL }, \
	{ HO_HOSTFILE, 0, "hostfile", OPT_VALUE, "FILE", "hosts from a file: 'host slots=N' or " \
	    "'host:N' lines", "@file" }, \
	{ HO_PER_HOST, 'N', "per-host", OPT_VALUE, "N", per_host_help, NULL }, \
	{ HO_PLACE, 0, "place", OPT_VALUE, "MODE", "block (fill each host first, the default) or " \
	    "roundrobin", "block roundrobin" }, \
	{ HO_LAUNCHER, 0, "launcher", OPT_VALUE, "KIND", "auto (the default: local or ssh), " \
	    "local, ssh or slurm (srun)", "auto local ssh slurm" }, \
	{ HO_CONNECT_TIMEOUT, 0, "connect-timeout", OPT_VALUE, "SECONDS", "give up on a host " \
	    "after this long connecting (default 10)", NULL }, \
	{ HO_FANOUT, 0, "fanout", OPT_VALUE, "N", "hosts connecting at once (default 64)", \
	    NULL }, \
	{ HO_TREE, 0, "tree", OPT_VALUE, "K", "start hosts through relays: K from here, each " \
	    "starting a share of the rest (0: all from here; default 32 past 128 hosts)", NULL }, \
	{ HO_ACCEPT_NEW, 0, "accept-new", OPT_FLAG, NULL, "add unknown host keys to known_hosts " \
	    "(changed keys are still refused)", NULL }, \
	{ HO_SSH_CONFIG, 'F', "ssh-config", OPT_VALUE, "FILE", "ssh client configuration " \
	    "(default ~/.ssh/config)", "@file" }, \
	{ HO_PREFIX, 0, "prefix", OPT_VALUE, "DIR", "remote ranks run DIR/bin/collrun with " \
	    "DIR/bin and DIR/lib first in PATH and LD_LIBRARY_PATH (default: this program's " \
	    "own, when started by a path)", "@dir" }

struct hostopt {
	struct job_opts jo;
	const char *hosts, *exclude, *hostfile, *launcher, *place;
	/* The nodes of a running Slurm job we are outside of (collstack --slurm). */
	const char *slurm_nodes;
	long np, per_host;
	int tree_given;
	int oversubscribe;	/* more ranks than slots: deal the rest over the hosts again */
	/* Made by hostopt_prepare, freed by hostopt_release. */
	struct hostlist hl;
	const char **names;
	int *rank_host;
};

/* Take a shared option: 0, -1 with err, or 1 when id is not one of them. */
int hostopt_value(struct hostopt *a, int id, const char *val, char *err, size_t len);
/* Hosts, rank count, placement and launcher into a->jo. */
int hostopt_plan(struct hostopt *a, struct hostlist *hl, int **rank_host, char *err, size_t len);
/* hostopt_plan, then the job's hosts, placement and join timeout; 0 or -1 with err. */
int hostopt_prepare(struct hostopt *a, char *err, size_t len);
void hostopt_release(struct hostopt *a);
/* Were hosts given (-H, --hostfile, a Slurm allocation or a Slurm job's nodes)? */
int hostopt_given(const struct hostopt *a);

#endif
