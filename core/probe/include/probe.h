/*
 * The all-reduce probe: timed all-reduces with the metrics nccl-tests reports.
 * algbw = bytes / time; busbw = algbw * 2(n-1)/n, the per-link rate a ring
 * needs, comparable across rank counts. #wrong counts elements that differ
 * from the exactly computed expected result, or from rank 0's result.
 */
#ifndef COLL_PROBE_H
#define COLL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

struct probe_opts {
	int iters;
	int warmup;
	int check;
	enum dtype dt;
	enum redop op;
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
	struct probe_opts o;	/* dt and op may change between sizes */
	size_t cap;		/* bytes the buffers hold */
	uint8_t *send, *recv, *expect, *tmp;
	struct probe_pos pos;
};

int probe_init(struct probe *p, struct comm *c, const struct probe_opts *o, size_t max_bytes);
void probe_free(struct probe *p);
/* Go on over another communicator (a shrink's): ranks, size and pos are its from now on. */
void probe_set_comm(struct probe *p, struct comm *c);
/* Measure one size on every rank; the result is complete on every rank. */
int probe_allreduce(struct probe *p, size_t bytes, struct probe_result *res);
/* Bus bandwidth factor of all-reduce: 2(n-1)/n. */
double probe_busbw_factor(int nranks);
/* Fill buf with rank's pattern for dt/op; exposed for tests. */
void probe_fill(void *buf, size_t count, enum dtype dt, enum redop op, int rank);

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
