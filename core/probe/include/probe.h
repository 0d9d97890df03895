/*
 * The collective probes: timed collectives with the metrics nccl-tests
 * reports, sized as it sizes them. algbw = bytes / time; busbw = algbw times
 * the collective's factor (2(n-1)/n for all-reduce), the per-link rate the
 * algorithm needs, comparable across rank counts. #wrong counts elements that
 * differ from the exactly computed expected result, or from rank 0's result.
 *
 * The collectives run on an engine: coll's own over the communicator (host
 * memory, the default), or another (NCCL on GPU memory) that the probe only
 * starts, waits for and copies to and from. Barriers, timings and checks
 * always travel through the communicator, as nccl-tests uses MPI for them.
 */
#ifndef COLL_PROBE_H
#define COLL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

enum probe_coll {
	PROBE_ALLREDUCE, PROBE_ALLGATHER, PROBE_REDUCE_SCATTER, PROBE_BROADCAST, PROBE_REDUCE,
	PROBE_ALLTOALL, PROBE_NCOLL
};

/* "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall". */
const char *probe_coll_name(enum probe_coll k);
/* Accepts those and nccl-tests' spellings (all_reduce, reduce_scatter); -1: unknown. */
int probe_coll_parse(const char *s);
/* Whether the collective reduces (takes an op) and whether it has a root. */
int probe_coll_reduces(enum probe_coll k);
int probe_coll_rooted(enum probe_coll k);

/*
 * How nccl-tests shapes one size of a collective over n ranks, in elements:
 * param is the count passed to the call, send and recv the buffers' lengths,
 * soff and roff where this rank's part sits when in place (times the rank).
 */
struct probe_shape {
	size_t param, send, recv, soff, roff;
};

void probe_shape(enum probe_coll k, size_t bytes, size_t esz, int n, struct probe_shape *s);
/* algbw (GB/s) of param elements of esz bytes moved in us microseconds; busbw factor. */
double probe_algbw(enum probe_coll k, size_t param, size_t esz, int n, double us);
double probe_bw_factor(enum probe_coll k, int n);

/*
 * Where collectives run. start() may return before the op is done (queued
 * on a stream); wait() returns when every started op is. put() and get()
 * copy between host memory and the engine's buffers. Errors are COLL_*
 * codes with the reason in error(). coll's own engine is probe_engine_coll.
 */
struct probe_engine {
	const char *name;
	char where[160];		/* how buffers and links are, for the header */
	void *ctx;
	void *(*alloc)(struct probe_engine *e, size_t bytes);
	void (*release)(struct probe_engine *e, void *buf);
	int (*put)(struct probe_engine *e, void *dst, const void *src, size_t len);
	int (*get)(struct probe_engine *e, void *dst, const void *src, size_t len);
	int (*start)(struct probe_engine *e, enum probe_coll k, const void *s, void *r,
	    size_t count, enum dtype dt, enum redop op, int root);
	int (*wait)(struct probe_engine *e);
	const char *(*error)(struct probe_engine *e);
	void (*close)(struct probe_engine *e);
	int on_comm;			/* its ops are the communicator's (sequence numbers) */
	int inplace_alltoall;		/* 0: in place, all-to-all is timed, not checked */
};

/* coll's collectives on c, in host memory. */
void probe_engine_coll(struct probe_engine *e, struct comm *c);

struct probe_opts {
	int iters;
	int warmup;
	int check;
	enum dtype dt;
	enum redop op;
	enum probe_coll coll;	/* 0: all-reduce */
	int root;		/* broadcast and reduce */
	struct probe_engine *engine;	/* NULL: coll's own on the communicator */
};

/* One measurement (out-of-place or in-place) of one size, combined over ranks. */
struct probe_meas {
	double time_us;		/* mean over ranks of each rank's mean op time */
	double algbw;		/* GB/s */
	double busbw;
	int64_t wrong;		/* summed over ranks; -1 when not checked */
	int slow_rank;
	double slow_us;
};

struct probe_result {
	size_t bytes;
	size_t count;
	struct probe_meas m[2];	/* [0] out-of-place, [1] in-place */
};

/* What the probe is doing, so that a caller can say where a failure struck. */
enum probe_phase { PROBE_IDLE, PROBE_CHECK, PROBE_WARMUP, PROBE_BARRIER, PROBE_TIMED,
	PROBE_COMBINE };

struct probe_pos {
	uint64_t ops;		/* collectives started on c: its seq, when only the probe uses c */
	enum probe_phase phase;	/* of the last one started */
	int iter;		/* 1-based, in the warm-up and timed loops; else 0 */
	int inplace;
};

struct probe {
	struct comm *c;
	struct probe_opts o;	/* dt, op and coll may change between sizes */
	struct probe_engine own;	/* coll's, when o.engine is NULL */
	struct probe_engine *e;
	size_t cap;		/* bytes the buffers hold */
	uint8_t *send, *recv;	/* the engine's */
	uint8_t *host, *expect, *tmp;	/* host memory, for the checks */
	struct probe_pos pos;
	char err[256];		/* why the engine failed, when it did */
};

int probe_init(struct probe *p, struct comm *c, const struct probe_opts *o, size_t max_bytes);
void probe_free(struct probe *p);
/* Go on over another communicator (a shrink's): ranks, size and pos are its from now on. */
void probe_set_comm(struct probe *p, struct comm *c);
/* Measure one size of o.coll on every rank; the result is complete on every rank. */
int probe_run(struct probe *p, size_t bytes, struct probe_result *res);
/* The same for all-reduce, whatever o.coll is. */
int probe_allreduce(struct probe *p, size_t bytes, struct probe_result *res);
/* Why the last call failed: the engine's reason, or the communicator's. */
const char *probe_error(const struct probe *p);
/* Bus bandwidth factor of all-reduce: 2(n-1)/n. */
double probe_busbw_factor(int nranks);
/* Fill buf with rank's pattern for dt/op; exposed for tests. */
void probe_fill(void *buf, size_t count, enum dtype dt, enum redop op, int rank);
/* Elements first .. first + count - 1 of that pattern. */
void probe_fill_at(void *buf, size_t first, size_t count, enum dtype dt, enum redop op,
    int rank);

/* Pairwise probes (pair.c). */
struct pair_opts {
	size_t bytes;		/* each way, per bandwidth iteration */
	int bw_iters;
	int lat_iters;
};

struct probe_link {
	double lat_us;		/* half a round trip of 8 bytes; -1: not measured */
	double bw_gbs;		/* GB/s each way, both ways at once; -1: not measured */
};

/* Partner of rank in round r of the circle method over m (even) slots; >= n: sits out. */
int probe_pair_partner(int m, int r, int rank);
/*
 * Every pair of ranks, in n-1 rounds of disjoint pairs; every rank of c calls
 * it, with pc a communicator of the same ranks (comm_split of c) that carries
 * the pairs' messages. row[p] gets this rank's measurement with rank p.
 */
int probe_links(struct comm *c, struct comm *pc, const struct pair_opts *o,
    struct probe_link *row, void (*progress)(void *arg, int round, int rounds), void *arg);
/*
 * Clock of every rank against rank 0's (realtime), best of samples exchanges
 * over pc; every rank calls it; offset_us and rtt_us (size entries) are set on
 * rank 0. Leaves pc's sequence uneven: use a communicator for pairs only.
 */
int probe_clock_offsets(struct comm *pc, int samples, double *offset_us, double *rtt_us);

#endif
