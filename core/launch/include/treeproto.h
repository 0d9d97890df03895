/*
 * The tree launch's protocol, between a launcher and the relay it starts on
 * a host of the first layer (`collrun --relay`), which starts the hosts of
 * its subtree in turn. Both ways it is one record per line, like
 * agentproto.h, whose records it carries.
 *
 * Down, on the relay's stdin: the unique id (the secret: never argv), then
 * the plan, one line per host of the subtree, then the line ".":
 *
 *   h HOST NAME RANKS   host index HOST of the job is called NAME and runs
 *                       RANKS, as ranges "0-3,8,10-11", ascending
 *
 * and after it, as to an agent, `k SIG` records and the end of stdin (stop).
 *
 * Up, on the relay's stdout, for any rank of the subtree:
 *
 *   RANK REC       an agentproto record of that rank (output, pid, its end)
 *   RANK f         the rank never started: its host could not be used
 *   RANK l         it started, but how it ended never came
 *   h HOST WHY     that host could not be used, and why
 *
 * A relay of a deeper layer speaks the same up to its own relay, which
 * passes its records on: ranks and hosts are the job's, at every level.
 */
#ifndef COLL_TREEPROTO_H
#define COLL_TREEPROTO_H

#include <stddef.h>

enum treeproto_kind {
	TREEPROTO_RECORD,	/* rank, text: one agentproto record */
	TREEPROTO_FAILED,	/* rank */
	TREEPROTO_LOST,		/* rank */
	TREEPROTO_HOST,		/* host, text: why */
};

struct treeproto_up {
	enum treeproto_kind kind;
	int rank;
	int host;
	const char *text;	/* points into the parsed line */
	size_t len;
};

/* Decode one upward line of a job of nranks on nhosts: COLL_OK or COLL_EPROTO. */
int treeproto_parse_up(const char *line, size_t len, int nranks, int nhosts,
    struct treeproto_up *u);
/*
 * Decode one plan line; rank_host (nranks entries, -1 where unset) gets the
 * host's index at each of its ranks, and a rank already placed is refused.
 * name (namecap bytes) gets the host's name. COLL_OK or COLL_EPROTO.
 */
int treeproto_parse_host(const char *line, size_t len, int nranks, int nhosts, int *host,
    char *name, size_t namecap, int *rank_host);
/* The plan line of host (no newline) whose n ranks, ascending, are ranks: malloc'd. */
char *treeproto_encode_host(int host, const char *name, const int *ranks, int n);

#endif
