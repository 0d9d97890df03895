/*
 * The straggler rule, one piece of code for both of colltop's judges: the
 * probe's (model.c: each rank's lateness to the probe) and each job's own
 * (jobstrag.c: each rank's lateness to the job's recent ops). A rank is slow
 * in an interval when it came later than factor x the median of the others'
 * lateness and by at least the floor; it is a straggler once it was slow
 * slow_k intervals in a row, after the warm-up.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"
#include "xmalloc.h"

static int
rule_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
rule_median(double *v, int n)
{
	if (n <= 0)
		return -1;
	qsort(v, (size_t)n, sizeof *v, rule_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The median of v (sorted, n) without one element equal to x: what a rank is
 * held against is the others' lateness, or with two ranks the slow one would
 * always pull the median up to half its own.
 */
double
rule_median_others(const double *v, int n, double x)
{
	int lo = 0, hi = n, m = n - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (m <= 0)
		return 0;
	/* The k-th of the others is v[k] before x's place, v[k + 1] from it on. */
#define OTHER(k) ((k) < lo ? v[(k)] : v[(k) + 1])
	return m % 2 ? OTHER(m / 2) : (OTHER(m / 2 - 1) + OTHER(m / 2)) / 2;
#undef OTHER
}

int
rule_judge(const struct top_args *a, double floor, int judge, const double *late, int n,
    int *slow_run, int *straggler)
{
	double *sorted = xcalloc((size_t)n + 1, sizeof *sorted);
	int worst = -1;

	memcpy(sorted, late, (size_t)n * sizeof *late);
	if (n > 0)
		qsort(sorted, (size_t)n, sizeof *sorted, rule_cmp);
	for (int i = 0; i < n; i++) {
		double thr = fmax(a->factor * rule_median_others(sorted, n, late[i]), floor);

		slow_run[i] = judge && n > 1 && late[i] > thr ? slow_run[i] + 1 : 0;
		straggler[i] = slow_run[i] >= a->slow_k;
		if (straggler[i] && (worst < 0 || late[i] > late[worst]))
			worst = i;
	}
	free(sorted);
	return worst;
}
