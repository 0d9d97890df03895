/*
 * The NCCL profiler plugin's own cost per collective, on the CPU: one
 * collective event (start at enqueue, stop) and a kernel event per channel
 * (start, stop from the same thread here; NCCL's proxy thread in a job), as
 * NCCL 2.28 calls them, N times; the time per collective, beside the same
 * loop calling a plugin that does nothing (the floor of an indirect call).
 *   bench_ncclprof_calls PLUGIN.so [CHANNELS] [N]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclprof_abi.h"

static int null_start(void *c, void **h, struct nprof_descr_v5 *d) { (void)c; *h = d; return 0; }
static int null_stop(void *h) { (void)h; return 0; }

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
run(int (*start)(void *, void **, struct nprof_descr_v5 *), int (*stop)(void *), void *ctx,
    int nch, long n)
{
	struct nprof_descr_v5 coll, kern;
	void *hc, *hk[64];
	double t0 = now_s();

	memset(&coll, 0, sizeof coll);
	coll.type = NPROF_EV_COLL;
	coll.coll.c.func = "AllReduce";
	coll.coll.c.count = 1 << 18;
	coll.coll.c.datatype = "ncclFloat32";
	coll.coll.c.nchannels = (uint8_t)nch;
	memset(&kern, 0, sizeof kern);
	kern.type = NPROF_EV_KERNEL_CH;
	for (long i = 0; i < n; i++) {
		start(ctx, &hc, &coll);
		stop(hc);
		kern.parent = hc;
		for (int c = 0; c < nch; c++)
			start(ctx, &hk[c], &kern);
		for (int c = 0; c < nch; c++)
			stop(hk[c]);
	}
	return (now_s() - t0) / (double)n * 1e9;
}

int
main(int argc, char **argv)
{
	int nch = argc > 2 ? atoi(argv[2]) : 24, mask = 0;
	long n = argc > 3 ? atol(argv[3]) : 1000000;
	void *lib, *ctx = NULL;
	const struct nprof_v5 *p;
	double ns, floor;

	if (argc < 2 || nch < 1 || nch > 64 || n < 1) {
		fprintf(stderr, "usage: bench_ncclprof_calls PLUGIN.so [CHANNELS 1-64] [N]\n");
		return 2;
	}
	if ((lib = dlopen(argv[1], RTLD_NOW)) == NULL ||
	    (p = dlsym(lib, "ncclProfiler_v5")) == NULL) {
		fprintf(stderr, "bench_ncclprof_calls: %s: %s\n", argv[1], dlerror());
		return 1;
	}
	if (p->init(&ctx, 0xbe4c4ull, &mask, "bench", 1, 2, 0, NULL) != 0 || mask == 0) {
		fprintf(stderr, "bench_ncclprof_calls: the plugin made no status page (COLL_STATUS_DIR?)\n");
		return 1;
	}
	run(p->start, p->stop, ctx, nch, n / 10);	/* warm */
	ns = run(p->start, p->stop, ctx, nch, n);
	floor = run(null_start, null_stop, NULL, nch, n);
	printf("%-34s %12s %12s\n", "per collective, CPU", "plugin", "empty calls");
	printf("%-34s %9.0f ns %9.0f ns\n", "1 collective + kernel events", ns, floor);
	printf("channels per collective: %d, collectives: %ld\n", nch, n);
	p->finalize(ctx);
	return 0;
}
