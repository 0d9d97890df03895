/*
 * The launcher's end of the agent protocol (agentproto.h), shared by the SSH
 * and Slurm backends: record lines in, the rank's output lines (reassembled
 * from pieces), its process id and how it ended out.
 *
 * A line that is not a record did not come from the agent (a remote shell's
 * start-up file printing to stdout, say): it is shown as the rank's stdout,
 * so nothing is lost, and it can never act as a control message.
 */
#ifndef COLL_AGENTRX_H
#define COLL_AGENTRX_H

#include <stddef.h>
#include <sys/types.h>

#include "launch.h"
#include "linebuf.h"

struct agentrx {
	struct launch *l;
	int rank;
	struct linebuf acc[2];	/* stdout and stderr pieces, joined into lines */
	pid_t pid;		/* -1 until the agent said */
	long step;		/* its Slurm step, -1 until the agent said (srun only) */
	int ended;		/* an exit or signal record came */
	int state;		/* LAUNCH_EXITED or LAUNCH_SIGNALED */
	int code;
};

void agentrx_init(struct agentrx *rx, struct launch *l, int rank);
/* One line of the agent's stdout, without its newline. */
void agentrx_line(struct agentrx *rx, const char *line, size_t len);
/* The agent's stream ended: hand over partial lines. */
void agentrx_flush(struct agentrx *rx);
void agentrx_free(struct agentrx *rx);

#endif
