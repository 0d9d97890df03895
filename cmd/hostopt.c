/*
 * The host options and rank placement shared by collrun and collcheck.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm.h"
#include "err.h"
#include "hostopt.h"
#include "msg.h"
#include "regfile.h"
#include "xmalloc.h"

/*
 * -F FILE is read once per host, so it must be a file: a FIFO there would
 * block every connection for as long as its writer likes, and a pipe
 * (<(...)) would feed only the first host. Said here, once, in one line.
 */
static int
hostopt_ssh_config(struct hostopt *a, const char *val, char *err, size_t len)
{
	char q[MSG_QUOTE_LEN(128)];
	struct stat sb;
	int fd, r = regfile_open(val, 0, &fd, &sb);

	msg_quote(q, val, strlen(val), 128);
	if (r == COLL_EUNSAFE) {
		snprintf(err, len, "-F %s is %s, not a file: give an ssh_config file", q,
		    regfile_kind(sb.st_mode));
		return -1;
	}
	if (r != COLL_OK) {
		snprintf(err, len, "-F %s: %s", q, strerror(errno));
		return -1;
	}
	close(fd);
	a->jo.ssh_config = val;
	return 0;
}

int
hostopt_value(struct hostopt *a, int id, const char *val, char *err, size_t len)
{
	long v;

	switch (id) {
	case HO_PER_HOST: return opt_int("-N", val, 1, 4096, &a->per_host, err, len);
	case HO_HOSTS: a->hosts = val; return 0;
	case HO_EXCLUDE: a->exclude = val; return 0;
	case HO_HOSTFILE: a->hostfile = val; return 0;
	case HO_PLACE: a->place = val; return 0;
	case HO_LAUNCHER: a->launcher = val; return 0;
	case HO_SSH_CONFIG: return hostopt_ssh_config(a, val, err, len);
	case HO_ACCEPT_NEW: a->jo.accept_new = 1; return 0;
	case HO_OVERSUBSCRIBE: a->oversubscribe = 1; return 0;
	case HO_PREFIX:
		if (val[0] != '/') {
			snprintf(err, len, "--prefix must be an absolute path, not '%s'", val);
			return -1;
		}
		a->jo.prefix = val;
		return 0;
	case HO_FANOUT:
		if (opt_int("--fanout", val, 1, 100000, &v, err, len) != 0)
			return -1;
		a->jo.fanout = (int)v;
		return 0;
	case HO_TREE:
		if (opt_int("--tree", val, 0, 1000000, &v, err, len) != 0)
			return -1;
		a->jo.tree = (int)v;
		a->tree_given = 1;
		return 0;
	case HO_CONNECT_TIMEOUT: {
		double s;
		if (opt_double("--connect-timeout", val, 0.1, 3600, &s, err, len) != 0)
			return -1;
		a->jo.connect_timeout_ms = (int)(s * 1000);
		return 0;
	}
	}
	return 1;
}

int
hostopt_given(const struct hostopt *a)
{
	return a->hosts != NULL || a->hostfile != NULL || a->slurm_nodes != NULL ||
	    getenv("SLURM_JOB_NODELIST") != NULL;
}

/* Is every host this machine? Then the local launcher does. */
static int
hostopt_all_local(const struct hostlist *hl)
{
	char me[256] = "";

	gethostname(me, sizeof me - 1);
	for (int i = 0; i < hl->n; i++) {
		const char *h = hl->hosts[i].name;
		if (strcmp(h, "localhost") != 0 && strcmp(h, "127.0.0.1") != 0 &&
		    strcmp(h, "::1") != 0 && strcmp(h, me) != 0)
			return 0;
	}
	return 1;
}

static int
hostopt_hosts(struct hostopt *a, struct hostlist *hl, char *err, size_t len)
{
	const char *nodes = a->slurm_nodes ? a->slurm_nodes : getenv("SLURM_JOB_NODELIST");

	if (a->hosts != NULL && a->hostfile != NULL) {
		snprintf(err, len, "give hosts with -H or --hostfile, not both");
		return -1;
	}
	if (a->hosts != NULL && hostlist_parse(hl, a->hosts, err, len) != COLL_OK)
		return -1;
	if (a->hostfile != NULL && hostlist_parse_file(hl, a->hostfile, err, len) != COLL_OK)
		return -1;
	if (a->hosts == NULL && a->hostfile == NULL && nodes != NULL &&
	    hostlist_parse_slurm(hl, nodes, a->slurm_nodes ? NULL : getenv("SLURM_TASKS_PER_NODE"),
	    err, len) != COLL_OK)
		return -1;
	if (a->exclude != NULL && hostlist_exclude(hl, a->exclude, err, len) != COLL_OK)
		return -1;
	if ((a->hosts || a->hostfile || nodes) && hl->n == 0) {
		snprintf(err, len, "no hosts left to run on");
		return -1;
	}
	return 0;
}

/* srun places the ranks; it is told the hosts only when they were given here. */
static int
hostopt_slurm(struct hostopt *a, const struct hostlist *hl, enum place_mode mode,
    char *err, size_t len)
{
	static char folded[65536];
	const char **names;

	a->jo.kind = LAUNCH_SLURM;
	a->jo.per_host = (int)a->per_host;
	a->jo.cyclic = mode == PLACE_ROUNDROBIN;
	/* An allocation's nodes are srun's own; a job's go as squeue gave them, unless -x cut some. */
	if (a->hosts == NULL && a->hostfile == NULL && a->slurm_nodes == NULL)
		return 0;
	if (a->hosts == NULL && a->hostfile == NULL && a->exclude == NULL) {
		a->jo.nodelist = a->slurm_nodes;
		return 0;
	}
	names = xcalloc((size_t)hl->n, sizeof *names);
	for (int i = 0; i < hl->n; i++)
		names[i] = hl->hosts[i].name;
	if (hostlist_fold(names, hl->n, folded, sizeof folded) != COLL_OK) {
		free(names);
		snprintf(err, len, "too many hosts for srun --nodelist");
		return -1;
	}
	free(names);
	a->jo.nodelist = folded;
	return 0;
}

/* The hosts' slots (or -N each) in all, counted up to just past the most ranks. */
static long
hostopt_slots(const struct hostopt *a, const struct hostlist *hl)
{
	long slots = 0;

	for (int i = 0; i < hl->n && slots <= COLL_MAX_RANKS; i++)
		slots += a->per_host ? a->per_host : (hl->hosts[i].slots ? hl->hosts[i].slots : 1);
	return slots;
}

/*
 * --oversubscribe: more ranks than slots. As mpirun does, every host takes
 * its slots' worth and the rest are dealt over the hosts again, in order.
 */
static void
hostopt_oversubscribe(struct hostopt *a, struct hostlist *hl)
{
	long have = 0;

	if (a->per_host) {
		a->per_host = (a->jo.nranks + hl->n - 1) / hl->n;
		return;
	}
	for (int i = 0; i < hl->n; i++) {
		if (hl->hosts[i].slots == 0)
			hl->hosts[i].slots = 1;
		have += hl->hosts[i].slots;
	}
	for (int i = 0; have < a->jo.nranks; i = (i + 1) % hl->n, have++)
		hl->hosts[i].slots++;
}

/* Hosts, rank count, placement and launcher into the job options. */
int
hostopt_plan(struct hostopt *a, struct hostlist *hl, int **rank_host, char *err, size_t len)
{
	enum place_mode mode = PLACE_BLOCK;
	long slots = 0;

	if (hostopt_hosts(a, hl, err, len) != 0)
		return -1;
	if (a->place != NULL && strcmp(a->place, "roundrobin") == 0)
		mode = PLACE_ROUNDROBIN;
	else if (a->place != NULL && strcmp(a->place, "block") != 0) {
		snprintf(err, len, "--place must be block or roundrobin, not '%s'", a->place);
		return -1;
	}
	/* Outside an allocation, without hosts, srun finds the nodes: no slots to check here. */
	if (hl->n == 0 && a->launcher != NULL && strcmp(a->launcher, "slurm") == 0) {
		a->jo.nranks = (int)(a->np ? a->np : (a->per_host ? a->per_host : 1));
		*rank_host = xcalloc((size_t)a->jo.nranks, sizeof **rank_host);
		return hostopt_slurm(a, hl, mode, err, len);
	}
	if (hl->n == 0)
		hostlist_parse(hl, "localhost", err, len);
	slots = hostopt_slots(a, hl);
	if (!a->np && slots > COLL_MAX_RANKS) {
		snprintf(err, len, "the hosts' slots add up to more than %d ranks: give -n",
		    COLL_MAX_RANKS);
		return -1;
	}
	a->jo.nranks = (int)(a->np ? a->np : (hostopt_given(a) || a->per_host ? slots : 1));
	/* This machine alone, its slots not given: as many as asked (mpirun's default host). */
	if (hl->n == 1 && hostopt_all_local(hl) && !a->per_host && hl->hosts[0].slots == 0)
		hl->hosts[0].slots = a->jo.nranks;
	if (a->oversubscribe && a->jo.nranks > hostopt_slots(a, hl))
		hostopt_oversubscribe(a, hl);
	*rank_host = xcalloc((size_t)a->jo.nranks, sizeof **rank_host);
	if (a->jo.nranks > (slots = hostopt_slots(a, hl))) {
		snprintf(err, len, "%d ranks but only %ld slots on %d host%s: give fewer ranks, "
		    "more hosts or --oversubscribe", a->jo.nranks, slots, hl->n, hl->n == 1 ? "" : "s");
		return -1;
	}
	if (hostlist_place(hl, a->jo.nranks, (int)a->per_host, mode, *rank_host, err, len) !=
	    COLL_OK)
		return -1;
	if (a->launcher == NULL || strcmp(a->launcher, "auto") == 0)
		a->jo.kind = hostopt_all_local(hl) ? LAUNCH_LOCAL : LAUNCH_SSH;
	else if (strcmp(a->launcher, "local") == 0)
		a->jo.kind = LAUNCH_LOCAL;
	else if (strcmp(a->launcher, "ssh") == 0)
		a->jo.kind = LAUNCH_SSH;
	else if (strcmp(a->launcher, "slurm") == 0)
		return hostopt_slurm(a, hl, mode, err, len);
	else {
		snprintf(err, len, "--launcher must be auto, local, ssh or slurm, not '%s'",
		    a->launcher);
		return -1;
	}
	return 0;
}

/* The most ranks any host runs. */
static int
hostopt_most_per_host(const struct hostopt *a)
{
	int *n = xcalloc((size_t)a->hl.n + 1, sizeof *n), most = 0;

	for (int r = 0; r < a->jo.nranks; r++)
		if (a->rank_host[r] >= 0 && a->rank_host[r] < a->hl.n &&
		    ++n[a->rank_host[r]] > most)
			most = n[a->rank_host[r]];
	free(n);
	return most;
}

int
hostopt_prepare(struct hostopt *a, char *err, size_t len)
{
	if (hostopt_plan(a, &a->hl, &a->rank_host, err, len) != 0)
		return -1;
	a->names = xcalloc((size_t)a->hl.n, sizeof *a->names);
	for (int i = 0; i < a->hl.n; i++)
		a->names[i] = a->hl.hosts[i].name;
	a->jo.nhosts = a->jo.kind == LAUNCH_SSH ? a->hl.n : 0;
	if (!a->tree_given)
		a->jo.tree = a->jo.nhosts > HOSTOPT_TREE_AUTO_HOSTS &&
		    hostopt_most_per_host(a) < HOSTOPT_TREE_AUTO_MAX_PER_HOST ?
		    HOSTOPT_TREE_AUTO_WIDTH : 0;
	a->jo.hosts = a->names;
	a->jo.rank_host = a->rank_host;
	a->jo.join_timeout_ms = comm_env_timeout_ms();
	if (a->jo.timeout_s > 0 && a->jo.timeout_s * 1000 < a->jo.join_timeout_ms)
		a->jo.join_timeout_ms = (int)(a->jo.timeout_s * 1000) + 1;
	return 0;
}

void
hostopt_release(struct hostopt *a)
{
	free(a->names);
	free(a->rank_host);
	hostlist_free(&a->hl);
	a->names = NULL;
	a->rank_host = NULL;
}
