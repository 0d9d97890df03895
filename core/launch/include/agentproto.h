/*
 * The control protocol between the launcher and collrun's agent, the small
 * process that runs each remote rank (over SSH, or as an srun task). It is
 * defined here once, for both ends and for its fuzz target.
 *
 * The agent owns the program's stdout and stderr pipes, so nothing the
 * program writes reaches the launcher unwrapped: a program that prints a
 * line looking like a control message only ever produces an output record.
 * Everything flows as one record per line on the agent's stdout:
 *
 *   o TEXT    a piece of the program's stdout that ends a line
 *   O TEXT    a piece that does not (the line goes on in the next record)
 *   e TEXT    the same for stderr
 *   E TEXT
 *   p PID     the program started with this process id (over SSH, its group's too)
 *   x CODE    the program exited with CODE (0..255)
 *   s SIG     the program was killed by signal SIG (1..64)
 *   t STEP    under srun, the Slurm step the task runs in (sent before 'p'),
 *             so that collrun can signal its own step of an allocation alone
 *
 * TEXT holds no newline (the agent splits lines there) and at most
 * AGENTPROTO_PIECE bytes, so a record stays below the 1024 bytes that srun
 * --label passes through whole. Numbers are plain decimal, range-checked.
 *
 * The other way, over SSH (the agent's stdin), the first line is the unique
 * id (it holds the secret: never argv), then one command per line:
 *
 *   k SIG     send SIG to the program's process group
 *
 * and the end of stdin means "stop": SIGTERM to the group, SIGKILL after a
 * grace period. The agent signals only its own child's group, so no number
 * from the network ever picks the process that gets a signal.
 */
#ifndef COLL_AGENTPROTO_H
#define COLL_AGENTPROTO_H

#include <stddef.h>

#define AGENTPROTO_PIECE 1000
#define AGENTPROTO_LINE (AGENTPROTO_PIECE + 3)

enum agentproto_kind {
	AGENTPROTO_OUTPUT,	/* stream, text, len, more */
	AGENTPROTO_PID,		/* value */
	AGENTPROTO_EXIT,	/* value: exit code */
	AGENTPROTO_SIGNAL,	/* value: signal number */
	AGENTPROTO_KILL,	/* launcher to agent; value: signal number */
	AGENTPROTO_STEP,	/* value: Slurm step id */
};

struct agentproto_msg {
	enum agentproto_kind kind;
	int stream;		/* 1 stdout, 2 stderr (launch_stream's values) */
	int more;		/* the line goes on in the next piece */
	const char *text;	/* points into the parsed line */
	size_t len;
	long value;
};

/* Decode one record (a line without its newline): COLL_OK or COLL_EPROTO. */
int agentproto_parse(const char *line, size_t len, struct agentproto_msg *m);
/*
 * Encode output of a stream as records into out (room for at least
 * AGENTPROTO_LINE bytes per started AGENTPROTO_PIECE of text); ends_line says
 * whether text is the end of a line. Returns the bytes written.
 */
size_t agentproto_encode_output(char *out, int stream, const char *text, size_t len,
    int ends_line);
/* Encode a numeric record ('p', 'x', 's', 'k' or 't'); out holds AGENTPROTO_LINE bytes. */
size_t agentproto_encode_number(char *out, enum agentproto_kind kind, long value);

#endif
