/*
 * Retried ops as findings: a link that broke under a collective and was made
 * again leaves the results right, so only the core's retry log (comm.h:
 * comm_retry_log) tells of it. The sweeps and the check gather every rank's
 * log to rank 0, one entry per op and link (both ends usually log it), and
 * report each as an error naming the link's two ranks and hosts.
 */
#ifndef COLL_CHECK_RETRIED_H
#define COLL_CHECK_RETRIED_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "check.h"

struct comm;

/* Room for a host name (the core's address book keeps at most 64 bytes). */
#define RETRIED_HOST 65
/* The most entries one rank sends (the core keeps the last 64 per communicator). */
#define RETRIED_MAX 128
/*
 * The most a merged set lists: a NIC that flaps under a large job breaks
 * many links per op, each an entry; past this they are only counted.
 */
#define RETRIED_LISTED (RETRIED_MAX * 4)

/* One retried op on one link; rank[1] -1: the core did not say which link. */
struct retried {
	uint64_t seq;
	uint64_t wall_ns;	/* when it was first run again */
	uint32_t kind;
	uint32_t count;
	uint32_t which;		/* the communicator, of several a tool runs (seqs are each's own) */
	int32_t rank[2];
	char host[2][RETRIED_HOST];
};

struct retried_set {
	struct retried *v;
	int n;
	int more;		/* merged entries past RETRIED_LISTED, not kept */
};

/*
 * Take c's log into s (the newest RETRIED_MAX kept), ranks numbered through
 * orig (current rank -> rank at the start; NULL: as they are), hosts from c;
 * which tells c from the tool's other communicators.
 */
void retried_take(struct retried_set *s, struct comm *c, int which, const int *orig);
/*
 * Gather every rank's set to rank 0 (one coll_gatherv on c); on rank 0 *out
 * gets them merged, one per op and link, ordered by seq. Ranks are checked
 * against nranks (the job's at the start); a malformed entry is skipped.
 */
int retried_gather(struct comm *c, int nranks, const struct retried_set *mine,
    struct retried_set *out);
/* e into out, once per op and link (past RETRIED_LISTED entries: counted in more). */
void retried_merge(struct retried_set *out, const struct retried *e);
void retried_free(struct retried_set *s);
/* One line, no newline: the op, the link, how many times, what to do. */
void retried_line(const struct retried *e, char *buf, size_t len);
/* [{seq, op, ranks, hosts, count}] of s, and back (checked; -1: malformed). */
json_t *retried_json(const struct retried_set *s);
int retried_from_json(struct retried_set *s, const json_t *arr, int nranks);
/* Each retried op in r->retries as an error of the cluster (analyse.c). */
void retried_find(struct check_result *r);

#endif
