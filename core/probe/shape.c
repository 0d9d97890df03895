/*
 * The collectives' shapes and bandwidth factors, as nccl-tests defines them,
 * so that a row of collcheck reads like the same row of *_perf: the size is
 * the larger buffer, gathers and scatters round each rank's part down to 16
 * bytes, and busbw is the rate each link must carry for the op's algorithm
 * (all-reduce 2(n-1)/n, gathers, scatters and all-to-all (n-1)/n, broadcast
 * and reduce 1).
 */
#include <string.h>

#include "probe.h"

static const char *const coll_names[PROBE_NCOLL] = {
	[PROBE_ALLREDUCE] = "allreduce", [PROBE_ALLGATHER] = "allgather",
	[PROBE_REDUCE_SCATTER] = "reducescatter", [PROBE_BROADCAST] = "broadcast",
	[PROBE_REDUCE] = "reduce", [PROBE_ALLTOALL] = "alltoall",
};

static const char *const coll_alt[PROBE_NCOLL] = {
	[PROBE_ALLREDUCE] = "all_reduce", [PROBE_ALLGATHER] = "all_gather",
	[PROBE_REDUCE_SCATTER] = "reduce_scatter", [PROBE_BROADCAST] = "bcast",
	[PROBE_REDUCE] = "reduce", [PROBE_ALLTOALL] = "all_to_all",
};

const char *
probe_coll_name(enum probe_coll k)
{
	return (unsigned)k < PROBE_NCOLL ? coll_names[k] : "unknown";
}

int
probe_coll_parse(const char *s)
{
	for (int k = 0; k < PROBE_NCOLL; k++)
		if (strcmp(s, coll_names[k]) == 0 || strcmp(s, coll_alt[k]) == 0)
			return k;
	return -1;
}

int
probe_coll_reduces(enum probe_coll k)
{
	return k == PROBE_ALLREDUCE || k == PROBE_REDUCE_SCATTER || k == PROBE_REDUCE;
}

int
probe_coll_rooted(enum probe_coll k)
{
	return k == PROBE_BROADCAST || k == PROBE_REDUCE;
}

void
probe_shape(enum probe_coll k, size_t bytes, size_t esz, int n, struct probe_shape *s)
{
	size_t count = bytes / esz, part;

	/* Each rank's part a multiple of 16 bytes, as nccl-tests rounds it. */
	part = (count / (size_t)n) & ~(16 / esz - 1);
	memset(s, 0, sizeof *s);
	switch (k) {
	case PROBE_ALLGATHER:
		*s = (struct probe_shape){ part, part, part * (size_t)n, part, 0 };
		break;
	case PROBE_REDUCE_SCATTER:
		*s = (struct probe_shape){ part, part * (size_t)n, part, 0, part };
		break;
	case PROBE_ALLTOALL:
		*s = (struct probe_shape){ part, part * (size_t)n, part * (size_t)n, 0, 0 };
		break;
	default:
		*s = (struct probe_shape){ count, count, count, 0, 0 };
		break;
	}
}

double
probe_bw_factor(enum probe_coll k, int n)
{
	if (n <= 1)
		return k == PROBE_BROADCAST || k == PROBE_REDUCE ? 1.0 : 0.0;
	switch (k) {
	case PROBE_ALLREDUCE: return 2.0 * (n - 1) / n;
	case PROBE_BROADCAST:
	case PROBE_REDUCE: return 1.0;
	default: return (double)(n - 1) / n;
	}
}

double
probe_algbw(enum probe_coll k, size_t param, size_t esz, int n, double us)
{
	double bytes = (double)param * (double)esz;

	/* Gathers, scatters and all-to-all count the whole of the larger buffer. */
	if (k == PROBE_ALLGATHER || k == PROBE_REDUCE_SCATTER || k == PROBE_ALLTOALL)
		bytes *= n;
	return us > 0 ? bytes / (us * 1e3) : 0;
}
