/*
 * Pairwise probes: the links between every two ranks, and each rank's clock
 * against rank 0's.
 *
 * Links are measured in the n-1 rounds of a round-robin tournament (the
 * circle method): every round pairs the ranks into disjoint couples that
 * measure at once, so the whole matrix costs n-1 pair times, not n(n-1)/2,
 * and no link carries two measurements at a time. Rounds are separated by a
 * barrier on c. The pairs talk over a second communicator split off c, since
 * point-to-point messages count in a communicator's sequence and the ranks
 * left out of a round (one, when n is odd) would fall behind on c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "coll.h"
#include "err.h"
#include "probe.h"
#include "xmalloc.h"

/* Partner of rank in round r of m (even) slots; slot m-1 stays, the others turn. */
int
probe_pair_partner(int m, int r, int rank)
{
	int k = m - 1;

	if (rank == k)
		return r;
	if (rank == r)
		return k;
	return ((2 * r - rank) % k + k) % k;
}

static double
pair_now_us(void)
{
	return (double)clock_now_ns() / 1000.0;
}

static int
pair_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pair_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, pair_cmp);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/*
 * Latency (half a round trip of 8 bytes) and bandwidth (both ways at once)
 * with one peer, each the median of its iterations: a link is slow when it
 * is slow most of the time, not when the scheduler took a core away once.
 */
static int
pair_measure(struct comm *pc, int peer, const struct pair_opts *o, uint8_t *sbuf,
    uint8_t *rbuf, struct probe_link *out)
{
	int me = comm_rank(pc), first = me < peer, rc = COLL_OK;
	int nt = o->lat_iters > o->bw_iters ? o->lat_iters : o->bw_iters;
	double *t = xcalloc((size_t)nt + 1, sizeof *t), t0;
	uint64_t ping = 0;

	for (int i = -1; i < o->lat_iters && rc == COLL_OK; i++) {
		t0 = pair_now_us();
		if (first && (rc = coll_send(pc, &ping, 1, DT_UINT64, peer)) == COLL_OK)
			rc = coll_recv(pc, &ping, 1, DT_UINT64, peer);
		else if (!first && (rc = coll_recv(pc, &ping, 1, DT_UINT64, peer)) == COLL_OK)
			rc = coll_send(pc, &ping, 1, DT_UINT64, peer);
		if (i >= 0)
			t[i] = (pair_now_us() - t0) / 2;
	}
	if (rc == COLL_OK)
		out->lat_us = pair_median(t, o->lat_iters);
	for (int i = -1; i < o->bw_iters && rc == COLL_OK; i++) {
		t0 = pair_now_us();
		rc = coll_sendrecv(pc, sbuf, o->bytes, peer, rbuf, o->bytes, peer, DT_UINT8);
		if (i >= 0)
			t[i] = pair_now_us() - t0;
	}
	if (rc == COLL_OK)
		out->bw_gbs = (double)o->bytes / (pair_median(t, o->bw_iters) * 1000.0);
	free(t);
	return rc;
}

int
probe_links(struct comm *c, struct comm *pc, const struct pair_opts *o, struct probe_link *row,
    void (*progress)(void *arg, int round, int rounds), void *arg)
{
	int n = comm_size(c), me = comm_rank(c), m = n + (n & 1), rc = COLL_OK;
	uint8_t *sbuf = xcalloc(o->bytes ? o->bytes : 1, 1), *rbuf = xcalloc(o->bytes ? o->bytes : 1, 1);

	for (int p = 0; p < n; p++)
		row[p] = (struct probe_link){ -1, -1 };
	for (int r = 0; r < m - 1 && rc == COLL_OK; r++) {
		int peer = probe_pair_partner(m, r, me);

		if (progress != NULL)
			progress(arg, r, m - 1);
		if ((rc = coll_barrier(c)) != COLL_OK)
			break;
		if (peer < n)
			rc = pair_measure(pc, peer, o, sbuf, rbuf, &row[peer]);
	}
	if (rc == COLL_OK)
		rc = coll_barrier(c);
	free(sbuf);
	free(rbuf);
	return rc;
}

/*
 * Rank 0 asks each rank in turn for its clock, a few times, and keeps the
 * exchange with the shortest round trip: offset = their clock - the middle of
 * ours (NTP's estimate, off by at most half that round trip).
 */
int
probe_clock_offsets(struct comm *pc, int samples, double *offset_us, double *rtt_us)
{
	int n = comm_size(pc), me = comm_rank(pc), rc = COLL_OK;

	for (int r = 1; r < n && rc == COLL_OK; r++) {
		double best = -1;

		if (me != 0 && me != r)
			continue;
		for (int s = 0; s < samples && rc == COLL_OK; s++) {
			struct timespec ts;
			int64_t theirs = 0, t0, t1;

			if (me == 0) {
				clock_gettime(CLOCK_REALTIME, &ts);
				t0 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
				if ((rc = coll_send(pc, &t0, 1, DT_INT64, r)) == COLL_OK)
					rc = coll_recv(pc, &theirs, 1, DT_INT64, r);
				clock_gettime(CLOCK_REALTIME, &ts);
				t1 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
				if (rc == COLL_OK && (best < 0 || (double)(t1 - t0) / 1000.0 < best)) {
					best = (double)(t1 - t0) / 1000.0;
					offset_us[r] = ((double)theirs - ((double)t0 + (double)t1) / 2) /
					    1000.0;
					rtt_us[r] = best;
				}
			} else if ((rc = coll_recv(pc, &t0, 1, DT_INT64, 0)) == COLL_OK) {
				clock_gettime(CLOCK_REALTIME, &ts);
				theirs = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
				rc = coll_send(pc, &theirs, 1, DT_INT64, 0);
			}
		}
	}
	if (me == 0) {
		offset_us[0] = 0;
		rtt_us[0] = 0;
	}
	return rc;
}
