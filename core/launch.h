/*
 * Launching ranks and streaming their output. One poll loop watches every
 * rank's stdout and stderr and its exit (a pidfd on Linux), splits output into
 * whole lines and hands them to the caller with the rank, so that a front end
 * can label and print them without interleaving partial lines.
 *
 * Backends: local fork/exec here. The SSH (libssh2, many sessions in the same
 * loop) and Slurm launchers plug in behind the same calls: a rank is a
 * process somewhere that has output streams and an exit status.
 */
#ifndef COLL_LAUNCH_H
#define COLL_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum launch_stream { LAUNCH_STDOUT = 1, LAUNCH_STDERR = 2 };

enum launch_state {
	LAUNCH_RUNNING = 0,
	LAUNCH_EXITED = 1,	/* code: exit status */
	LAUNCH_SIGNALED = 2,	/* code: signal number */
	LAUNCH_FAILED = 3,	/* could not be started */
};

/* A line longer than this is handed over in pieces of this size. */
#define LAUNCH_LINE_MAX (64u << 10)

struct launch_cb {
	/* One line, without its newline. */
	void (*output)(void *arg, int rank, int stream, const char *line, size_t len);
	/* A rank ended; called once its output available so far has been delivered. */
	void (*exited)(void *arg, int rank, int state, int code);
	void *arg;
};

struct launch_opts {
	int nranks;
	const char *path;		/* resolved program path */
	char *const *argv;		/* argv[0] is shown to the program */
	const char *uid;		/* printable unique id, COLL_UNIQUE_ID */
	uint64_t jobid;
	const char *master_addr;	/* torchrun's MASTER_ADDR / MASTER_PORT */
	int master_port;
	int keep_stdin;			/* rank 0 reads our stdin; others get /dev/null */
};

struct launch;

/* Resolve a program name through PATH as execvp would; COLL_ENOTFOUND if absent. */
int launch_resolve(const char *prog, char *out, size_t len);
/* Start every rank; on failure nothing is left running. */
int launch_start(struct launch **out, const struct launch_opts *o, const struct launch_cb *cb);
/*
 * Run the loop for at most timeout_ms (-1: until something ends), returning
 * early when wake_fd (if >= 0) is readable. Returns the number of ranks whose
 * process or output streams are still open.
 */
int launch_poll(struct launch *l, int timeout_ms, int wake_fd);
/* Send sig to the process group of every rank still running. */
void launch_signal(struct launch *l, int sig);
int launch_running(const struct launch *l);
pid_t launch_pid(const struct launch *l, int rank);
void launch_free(struct launch *l);

#endif
