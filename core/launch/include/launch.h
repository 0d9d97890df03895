/*
 * Launching ranks and streaming their output. One poll loop watches every
 * rank's output streams and its end, splits output into whole lines
 * (linebuf.h) and hands them to the caller with the rank, so that a front
 * end can label and print them without interleaving partial lines.
 *
 * Backends (launch_local.c, launch_ssh.c, launch_slurm.c) sit behind the same calls: a rank
 * is a process somewhere with two output streams and an exit status. The
 * ssh backend runs every host's session, non-blocking, in this same loop.
 */
#ifndef COLL_LAUNCH_H
#define COLL_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "uid.h"

enum launch_stream { LAUNCH_STDOUT = 1, LAUNCH_STDERR = 2 };

enum launch_state {
	LAUNCH_RUNNING = 0,
	LAUNCH_EXITED = 1,	/* code: exit status */
	LAUNCH_SIGNALED = 2,	/* code: signal number */
	LAUNCH_FAILED = 3,	/* never started: its host could not be reached */
	LAUNCH_LOST = 4,	/* started, but how it ended never came: its node died, or
				 * its agent was killed (srun ended without its word) */
};

enum launch_kind { LAUNCH_LOCAL, LAUNCH_SSH, LAUNCH_SLURM };

struct launch_cb {
	/* One line, without its newline. */
	void (*output)(void *arg, int rank, int stream, const char *line, size_t len);
	/* A rank ended; called once its output so far has been delivered. */
	void (*exited)(void *arg, int rank, int state, int code);
	/* A host could not be used (unreachable, refused, host key, auth). */
	void (*host_failed)(void *arg, int host, const char *why);
	void *arg;
	/*
	 * Called as each rank is started (the local launcher's start takes
	 * long at tens of thousands); nonzero stops the start: what was
	 * started is killed, and launch_start fails with COLL_EABORTED. NULL: none.
	 */
	int (*starting)(void *arg, int started, int total);
};

struct launch_opts {
	enum launch_kind kind;
	int nranks;
	const char *path;		/* program: resolved path (local) or as given (ssh) */
	char *const *argv;		/* argv[0] is shown to the program */
	const struct coll_uid *uid;	/* rendezvous; ssh gives each host its own root address */
	const char *master_addr;	/* torchrun's MASTER_ADDR / MASTER_PORT */
	int master_port;
	int keep_stdin;			/* local rank 0 reads our stdin */
	char *const *env;		/* "NAME=value" for every rank, here and remote (mpirun's
					 * -x), NULL-terminated; NULL: none */
	int nhosts;
	const char *const *hosts;	/* host names as the user wrote them */
	const int *rank_host;		/* host index of every rank */
	/*
	 * ssh: a root proxy (proxy.h) listening on every address of this host
	 * at this port (0: none): each host's ranks, and the relays below,
	 * reach the root through it, at the address that reached that host.
	 */
	int root_via_port;
	/* ssh */
	const char *agent;		/* collrun on the remote hosts, run as its agent */
	const char *bindir;		/* first in the ranks' PATH there (NULL: as it is) */
	const char *libdir;		/* first in their LD_LIBRARY_PATH (NULL: as it is) */
	const char *cwd;		/* remote ranks start here when it exists */
	const char *ssh_config;		/* NULL: ~/.ssh/config */
	int connect_timeout_ms;		/* 0: ConnectTimeout from the config, else 10 s */
	int fanout;			/* hosts connecting at once */
	int tree;			/* past this many hosts, start them through relays
					 * (launch_sshtree.c); 0: all from here */
	int accept_new;			/* add unknown host keys instead of refusing */
	/* slurm */
	const char *nodelist;		/* srun --nodelist; NULL: the allocation's */
	const char *jobid;		/* a step in this running job (--jobid, --overlap), not a new job */
	int per_host;			/* srun --ntasks-per-node; 0: Slurm decides */
	int cyclic;			/* srun --distribution=cyclic instead of block */
	int keep_going;			/* a failed rank leaves the others be (srun too) */
};

struct launch;

/* Resolve a program name through PATH as execvp would; COLL_ENOTFOUND if absent. */
int launch_resolve(const char *prog, char *out, size_t len);
/* Start every rank; on failure (COLL_EABORTED: cb->starting said stop) nothing is left running. */
int launch_start(struct launch **out, const struct launch_opts *o, const struct launch_cb *cb);
/*
 * Run the loop for at most timeout_ms (-1: until something happens), returning
 * early when wake_fd (if >= 0) is readable. Returns the number of ranks whose
 * process or output streams are still open.
 */
int launch_poll(struct launch *l, int timeout_ms, int wake_fd);
/* Send sig to the process group of every rank still running. */
void launch_signal(struct launch *l, int sig);
int launch_running(const struct launch *l);
/* Process id of a rank on its host (-1 if not known yet). */
pid_t launch_pid(const struct launch *l, int rank);
void launch_free(struct launch *l);

/*
 * The variables a rank gets, "NAME=value", NULL-terminated (coll's own, then
 * o->env's, less any that would change coll's own); free with
 * launch_env_free(). lrank and lsize are its place among its host's ranks:
 * launch_place() finds them by a scan of every rank, which a launcher that
 * starts many ranks replaces with its own index (one scan per rank would be
 * O(ranks^2) at 80,000 ranks).
 */
char **launch_env_vars(const struct launch_opts *o, int rank, int lrank, int lsize,
    const char *uidstr);
void launch_place(const struct launch_opts *o, int rank, int *lrank, int *lsize);
void launch_env_free(char **env);

/*
 * Under srun, each of the user's variables (-x) travels in srun's
 * environment as this prefix and NAME=VALUE; the agent takes the prefix off
 * in the task, so that srun and the agent run with the environment they had.
 */
#define LAUNCH_SLURM_XPREFIX "COLL_X_"
/* Their names, comma-separated: only those are taken (the user's own COLL_X_* are not). */
#define LAUNCH_SLURM_XNAMES "COLL_XNAMES"

/* Backend entry points, called through launch.c. */
struct launch_ops {
	int (*start)(struct launch *l, const struct launch_opts *o);
	int (*poll)(struct launch *l, int timeout_ms, int wake_fd);
	void (*signal)(struct launch *l, int sig);
	int (*running)(const struct launch *l);
	pid_t (*pid)(const struct launch *l, int rank);
	void (*free)(struct launch *l);
};

struct launch {
	const struct launch_ops *ops;
	struct launch_cb cb;
	int nranks;
	void *impl;
};

extern const struct launch_ops launch_local_ops;
extern const struct launch_ops launch_ssh_ops;
extern const struct launch_ops launch_slurm_ops;

#endif
