/*
 * collrun: start ranks of a program, on this machine or on many hosts over
 * SSH, with a unique id to rendezvous with; label and stream their output,
 * forward signals, fail fast or keep going.
 *
 * Options end at the program name, as with mpirun and srun, so the program's
 * own flags need no "--". Failing fast is the default, since ranks waiting
 * on a dead one in a collective can only hang; -k (--keep-going, as make's)
 * lets the others run to their end, for ranks that can go on without it:
 * independent ones, or survivors that shrink their communicator to carry on.
 * Hosts come from -H, else --hostfile, else a Slurm allocation's
 * SLURM_JOB_NODELIST; without any, every rank runs here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "cmd.h"
#include "comm.h"
#include "err.h"
#include "hostlist.h"
#include "job.h"
#include "xmalloc.h"

/* The core's bound (the wire's): more ranks could never join one communicator. */
#define COLLRUN_MAX_RANKS COLL_MAX_RANKS

enum { O_NP = 1, O_HOSTS, O_EXCLUDE, O_HOSTFILE, O_PER_HOST, O_PLACE, O_LAUNCHER, O_NO_LABEL,
	O_GATHER, O_TIMEOUT, O_GRACE, O_KEEP_GOING, O_CONNECT_TIMEOUT, O_FANOUT, O_ACCEPT_NEW,
	O_SSH_CONFIG, O_PREFIX, O_HELP, O_VERSION };

static const struct opt collrun_opts[] = {
	{ O_NP, 'n', "np", OPT_VALUE, "N", "number of ranks (default: the hosts' slots, or 1)",
	    NULL },
	{ O_HOSTS, 'H', "hosts", OPT_VALUE, "HOSTS", "hosts as node[01-16],n[1-3,7] with "
	    "optional :slots", NULL },
	{ O_EXCLUDE, 'x', "exclude", OPT_VALUE, "HOSTS", "leave these hosts out (ranges too)",
	    NULL },
	{ O_HOSTFILE, 0, "hostfile", OPT_VALUE, "FILE", "hosts from a file: 'host slots=N' or "
	    "'host:N' lines", "@file" },
	{ O_PER_HOST, 'N', "per-host", OPT_VALUE, "N", "ranks per host (instead of slots)", NULL },
	{ O_PLACE, 0, "place", OPT_VALUE, "MODE", "block (fill each host first, the default) or "
	    "roundrobin", "block roundrobin" },
	{ O_LAUNCHER, 0, "launcher", OPT_VALUE, "KIND", "auto (the default: local or ssh), local, "
	    "ssh or slurm (srun)", "auto local ssh slurm" },
	{ O_NO_LABEL, 0, "no-label", OPT_FLAG, NULL, "do not prefix output lines with [rank host]",
	    NULL },
	{ O_GATHER, 'g', "gather", OPT_FLAG, NULL, "print identical outputs once, under their "
	    "hosts and ranks", NULL },
	{ O_TIMEOUT, 't', "timeout", OPT_VALUE, "SECONDS", "stop the whole job after this long "
	    "(exit 124)", NULL },
	{ O_GRACE, 0, "grace", OPT_VALUE, "SECONDS", "after a rank fails, wait this long before "
	    "killing the others (default 3)", NULL },
	{ O_KEEP_GOING, 'k', "keep-going", OPT_FLAG, NULL, "after a rank fails, let the others "
	    "run to their end (the first failure still sets the exit code)", NULL },
	{ O_CONNECT_TIMEOUT, 0, "connect-timeout", OPT_VALUE, "SECONDS", "give up on a host "
	    "after this long connecting (default 10)", NULL },
	{ O_FANOUT, 'f', "fanout", OPT_VALUE, "N", "hosts connecting at once (default 64)", NULL },
	{ O_ACCEPT_NEW, 0, "accept-new", OPT_FLAG, NULL, "add unknown host keys to known_hosts "
	    "(changed keys are still refused)", NULL },
	{ O_SSH_CONFIG, 'F', "ssh-config", OPT_VALUE, "FILE", "ssh client configuration "
	    "(default ~/.ssh/config)", "@file" },
	{ O_PREFIX, 0, "prefix", OPT_VALUE, "DIR", "remote ranks run DIR/bin/collrun with DIR/bin "
	    "and DIR/lib first in PATH and LD_LIBRARY_PATH (default: this collrun's own, when "
	    "started by a path)", "@dir" },
	{ O_HELP, 'h', "help", OPT_FLAG, NULL, "show this help", NULL },
	{ O_VERSION, 'V', "version", OPT_FLAG, NULL, "show the version", NULL },
	OPT_END_TABLE,
};

static int collrun_run(int argc, char **argv);

const struct cmd cmd_collrun = {
	.tool = "collrun",
	.name = NULL,
	.usage = "collrun [-n N] [-H HOSTS | --hostfile FILE] [-N PER_HOST] [options] "
	    "[--] PROGRAM [ARGS...]",
	.summary = "Start N ranks of PROGRAM here or on many hosts over SSH, with COLL_UNIQUE_ID,\n"
	    "COLL_RANK, COLL_SIZE, RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ... and stream "
	    "their output.",
	.opts = collrun_opts,
	.run = collrun_run,
};

struct collrun_args {
	struct job_opts jo;
	const char *hosts, *exclude, *hostfile, *launcher, *place;
	long np, per_host;
};

static int
collrun_value(struct collrun_args *a, int id, const char *val, char *err, size_t len)
{
	long v;

	switch (id) {
	case O_NP: return opt_int("-n", val, 1, COLLRUN_MAX_RANKS, &a->np, err, len);
	case O_PER_HOST: return opt_int("-N", val, 1, 4096, &a->per_host, err, len);
	case O_HOSTS: a->hosts = val; return 0;
	case O_EXCLUDE: a->exclude = val; return 0;
	case O_HOSTFILE: a->hostfile = val; return 0;
	case O_PLACE: a->place = val; return 0;
	case O_LAUNCHER: a->launcher = val; return 0;
	case O_SSH_CONFIG: a->jo.ssh_config = val; return 0;
	case O_PREFIX:
		if (val[0] != '/') {
			snprintf(err, len, "--prefix must be an absolute path, not '%s'", val);
			return -1;
		}
		a->jo.prefix = val;
		return 0;
	case O_NO_LABEL: a->jo.label = 0; return 0;
	case O_GATHER: a->jo.gather = 1; return 0;
	case O_ACCEPT_NEW: a->jo.accept_new = 1; return 0;
	case O_KEEP_GOING: a->jo.keep_going = 1; return 0;
	case O_TIMEOUT: return opt_double("--timeout", val, 0.001, 1e7, &a->jo.timeout_s, err, len);
	case O_GRACE: return opt_double("--grace", val, 0, 3600, &a->jo.grace_s, err, len);
	case O_FANOUT:
		if (opt_int("--fanout", val, 1, 100000, &v, err, len) != 0)
			return -1;
		a->jo.fanout = (int)v;
		return 0;
	case O_CONNECT_TIMEOUT: {
		double s;
		if (opt_double("--connect-timeout", val, 0.1, 3600, &s, err, len) != 0)
			return -1;
		a->jo.connect_timeout_ms = (int)(s * 1000);
		return 0;
	}
	}
	return 0;
}

/* Is every host this machine? Then the local launcher does. */
static int
collrun_all_local(const struct hostlist *hl)
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
collrun_hosts(struct collrun_args *a, struct hostlist *hl, char *err, size_t len)
{
	const char *nodes = getenv("SLURM_JOB_NODELIST");

	if (a->hosts != NULL && a->hostfile != NULL) {
		snprintf(err, len, "give hosts with -H or --hostfile, not both");
		return -1;
	}
	if (a->hosts != NULL && hostlist_parse(hl, a->hosts, err, len) != COLL_OK)
		return -1;
	if (a->hostfile != NULL && hostlist_parse_file(hl, a->hostfile, err, len) != COLL_OK)
		return -1;
	if (a->hosts == NULL && a->hostfile == NULL && nodes != NULL &&
	    hostlist_parse_slurm(hl, nodes, getenv("SLURM_TASKS_PER_NODE"), err, len) != COLL_OK)
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
collrun_slurm(struct collrun_args *a, const struct hostlist *hl, enum place_mode mode,
    char *err, size_t len)
{
	static char folded[65536];
	const char **names;

	a->jo.kind = LAUNCH_SLURM;
	a->jo.per_host = (int)a->per_host;
	a->jo.cyclic = mode == PLACE_ROUNDROBIN;
	if (a->hosts == NULL && a->hostfile == NULL)
		return 0;
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

/* Hosts, rank count, placement and launcher into the job options. */
static int
collrun_plan(struct collrun_args *a, struct hostlist *hl, int **rank_host, char *err, size_t len)
{
	enum place_mode mode = PLACE_BLOCK;
	long slots = 0;

	if (collrun_hosts(a, hl, err, len) != 0)
		return -1;
	if (a->place != NULL && strcmp(a->place, "roundrobin") == 0)
		mode = PLACE_ROUNDROBIN;
	else if (a->place != NULL && strcmp(a->place, "block") != 0) {
		snprintf(err, len, "--place must be block or roundrobin, not '%s'", a->place);
		return -1;
	}
	if (hl->n == 0)
		hostlist_parse(hl, "localhost", err, len);
	for (int i = 0; i < hl->n && slots <= COLLRUN_MAX_RANKS; i++)
		slots += a->per_host ? a->per_host : (hl->hosts[i].slots ? hl->hosts[i].slots : 1);
	if (!a->np && slots > COLLRUN_MAX_RANKS) {
		snprintf(err, len, "the hosts' slots add up to more than %d ranks: give -n",
		    COLLRUN_MAX_RANKS);
		return -1;
	}
	a->jo.nranks = (int)(a->np ? a->np : (a->hosts || a->hostfile ||
	    getenv("SLURM_JOB_NODELIST") || a->per_host ? slots : 1));
	if (hl->n == 1 && collrun_all_local(hl) && !a->per_host)
		hl->hosts[0].slots = a->jo.nranks > hl->hosts[0].slots ? a->jo.nranks :
		    hl->hosts[0].slots;
	*rank_host = xcalloc((size_t)a->jo.nranks, sizeof **rank_host);
	if (hostlist_place(hl, a->jo.nranks, (int)a->per_host, mode, *rank_host, err, len) !=
	    COLL_OK)
		return -1;
	if (a->launcher == NULL || strcmp(a->launcher, "auto") == 0)
		a->jo.kind = collrun_all_local(hl) ? LAUNCH_LOCAL : LAUNCH_SSH;
	else if (strcmp(a->launcher, "local") == 0)
		a->jo.kind = LAUNCH_LOCAL;
	else if (strcmp(a->launcher, "ssh") == 0)
		a->jo.kind = LAUNCH_SSH;
	else if (strcmp(a->launcher, "slurm") == 0)
		return collrun_slurm(a, hl, mode, err, len);
	else {
		snprintf(err, len, "--launcher must be auto, local, ssh or slurm, not '%s'",
		    a->launcher);
		return -1;
	}
	return 0;
}

static int
collrun_parse(struct collrun_args *a, int argc, char **argv)
{
	struct opt_state st;
	const char *val;
	char err[512];
	int id;

	opt_init(&st, collrun_opts, argc, argv, 1);
	while ((id = opt_next(&st, &val)) != OPT_DONE) {
		if (id == OPT_ERROR)
			return cmd_usage_error(&cmd_collrun, st.err);
		if (id == O_HELP) {
			cmd_usage(&cmd_collrun, stdout);
			return -1;
		}
		if (id == O_VERSION) {
			printf("collrun %s\n", COLL_VERSION);
			return -1;
		}
		if (collrun_value(a, id, val, err, sizeof err) != 0)
			return cmd_usage_error(&cmd_collrun, err);
	}
	if (st.ind >= argc)
		return cmd_usage_error(&cmd_collrun, "no program given");
	a->jo.argv = argv + st.ind;
	return EXIT_OK;
}

static int
collrun_run(int argc, char **argv)
{
	struct collrun_args a = { .jo = { .tool = "collrun", .label = 1, .grace_s = 3,
	    .fanout = 64 } };
	struct hostlist hl = { 0 };
	const char **names = NULL;
	int *rank_host = NULL, code;
	char err[512];

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return agent_main(argc, argv);
	a.jo.by_path = strchr(argv[0], '/') != NULL;
	if ((code = collrun_parse(&a, argc, argv)) != EXIT_OK)
		return code < 0 ? cmd_finish_stdout(EXIT_OK) : code;
	if (collrun_plan(&a, &hl, &rank_host, err, sizeof err) != 0) {
		hostlist_free(&hl);
		free(rank_host);
		return cmd_usage_error(&cmd_collrun, err);
	}
	names = xcalloc((size_t)hl.n, sizeof *names);
	for (int i = 0; i < hl.n; i++)
		names[i] = hl.hosts[i].name;
	a.jo.nhosts = a.jo.kind == LAUNCH_SSH ? hl.n : 0;
	a.jo.hosts = names;
	a.jo.rank_host = rank_host;
	a.jo.join_timeout_ms = comm_env_timeout_ms();
	if (a.jo.timeout_s > 0 && a.jo.timeout_s * 1000 < a.jo.join_timeout_ms)
		a.jo.join_timeout_ms = (int)(a.jo.timeout_s * 1000) + 1;
	code = job_run(&a.jo);
	free(names);
	free(rank_host);
	hostlist_free(&hl);
	return cmd_finish_stdout(code);
}
