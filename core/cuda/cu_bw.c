/*
 * Copy bandwidth inside one host (cu_bw.h). One buffer of o->bytes on each
 * GPU and one pinned host buffer; the measurements run one at a time, as
 * nvbandwidth's do, so that each has its links and copy engines to itself
 * (a copy load that another process runs is what shows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cu_api.h"
#include "cu_bw.h"
#include "err.h"
#include "xmalloc.h"

enum cu_bw_kind { CU_BW_H2D, CU_BW_D2H, CU_BW_P2P };

struct cu_bw_run {
	const struct cu_api *a;
	const struct cu_bw_opts *o;
	struct cu_bw *b;
	void *host;		/* pinned, o->bytes */
	cu_ctx_t ctx[CU_BW_MAX_GPUS];
	cu_ptr_t buf[CU_BW_MAX_GPUS];
	cu_stream_t stream[CU_BW_MAX_GPUS];
	cu_event_t ev[CU_BW_MAX_GPUS][2];
	int held[CU_BW_MAX_GPUS];	/* the primary context was retained */
};

static void
cu_bw_err(const struct cu_api *a, int r, const char *what, char *why, size_t len)
{
	char b[96];

	snprintf(why, len, "%s: %s", what, cu_api_error(a, r, b, sizeof b));
}

/* Set up GPU g; on failure it is BROKEN with why. */
static void
cu_bw_open_gpu(struct cu_bw_run *x, int g)
{
	const struct cu_api *a = x->a;
	struct cu_bw_gpu *G = &x->b->gpu[g];
	int r, dom = 0, bus = 0, dev = 0;

	if (a->device_get_name(G->model, sizeof G->model, g) != CU_OK)
		snprintf(G->model, sizeof G->model, "?");
	G->model[sizeof G->model - 1] = '\0';
	a->device_get_attribute(&dom, CU_ATTR_PCI_DOMAIN, g);
	a->device_get_attribute(&bus, CU_ATTR_PCI_BUS, g);
	a->device_get_attribute(&dev, CU_ATTR_PCI_DEVICE, g);
	snprintf(G->bus, sizeof G->bus, "%04x:%02x:%02x", dom & 0xffff, bus & 0xff, dev & 0xff);
	if ((r = a->primary_ctx_retain(&x->ctx[g], g)) != CU_OK) {
		cu_bw_err(a, r, "cannot open a context", G->why, sizeof G->why);
		G->state = CU_BW_BROKEN;
		return;
	}
	x->held[g] = 1;
	if ((r = a->ctx_set_current(x->ctx[g])) != CU_OK ||
	    (r = a->mem_alloc(&x->buf[g], x->o->bytes)) != CU_OK ||
	    (r = a->stream_create(&x->stream[g], CU_STREAM_NON_BLOCKING)) != CU_OK ||
	    (r = a->event_create(&x->ev[g][0], 0)) != CU_OK ||
	    (r = a->event_create(&x->ev[g][1], 0)) != CU_OK) {
		cu_bw_err(a, r, "cannot allocate a buffer, stream or events", G->why,
		    sizeof G->why);
		G->state = CU_BW_BROKEN;
	}
}

static int
cu_bw_issue(struct cu_bw_run *x, enum cu_bw_kind k, int i, int j)
{
	const struct cu_api *a = x->a;
	size_t n = x->o->bytes;

	if (k == CU_BW_H2D)
		return a->memcpy_htod_async(x->buf[i], x->host, n, x->stream[i]);
	if (k == CU_BW_D2H)
		return a->memcpy_dtoh_async(x->host, x->buf[i], n, x->stream[i]);
	return a->memcpy_peer_async(x->buf[j], x->ctx[j], x->buf[i], x->ctx[i], n, x->stream[i]);
}

/* Wait for event e until the deadline: CU_OK, the driver's error, or CU_NOT_READY (late). */
static int
cu_bw_wait(const struct cu_bw_run *x, cu_event_t e)
{
	uint64_t end = clock_now_ns() + (uint64_t)x->o->timeout_ms * 1000000ull;
	struct timespec nap = { 0, 20000 };
	int q;

	/* The events time the copies: polling gently costs them nothing. */
	while ((q = x->a->event_query(e)) == CU_NOT_READY && clock_now_ns() < end)
		nanosleep(&nap, NULL);
	return q;
}

/*
 * One measurement on GPU i's stream (to j for a pair): a warm-up copy, then
 * iters between two events. GB/s, or -1 with why; a copy that outlives the
 * deadline leaves GPU i HUNG.
 */
static double
cu_bw_time(struct cu_bw_run *x, enum cu_bw_kind k, int i, int j, char *why, size_t len)
{
	const struct cu_api *a = x->a;
	cu_event_t *ev = x->ev[i];
	float ms = 0;
	int r;

	if ((r = a->ctx_set_current(x->ctx[i])) != CU_OK ||
	    (r = cu_bw_issue(x, k, i, j)) != CU_OK || (r = a->event_record(ev[0], x->stream[i])) !=
	    CU_OK) {
		cu_bw_err(a, r, "copy", why, len);
		return -1;
	}
	for (int t = 0; t < x->o->iters; t++)
		if ((r = cu_bw_issue(x, k, i, j)) != CU_OK) {
			cu_bw_err(a, r, "copy", why, len);
			return -1;
		}
	if ((r = a->event_record(ev[1], x->stream[i])) != CU_OK || (r = cu_bw_wait(x, ev[1])) !=
	    CU_OK) {
		if (r == CU_NOT_READY) {
			snprintf(why, len, "copies did not finish in %d ms: the GPU or its link "
			    "is stuck", x->o->timeout_ms);
			/* A pair's copy may still write into j's memory: neither is freed or used. */
			x->b->gpu[i].state = CU_BW_HUNG;
			x->b->gpu[j].state = CU_BW_HUNG;
		} else
			cu_bw_err(a, r, "copy", why, len);
		return -1;
	}
	if ((r = a->event_elapsed_time(&ms, ev[0], ev[1])) != CU_OK || ms <= 0) {
		cu_bw_err(a, r, "timing the copies", why, len);
		return -1;
	}
	return (double)x->o->bytes * x->o->iters / ((double)ms * 1e6);
}

/* Why GPU g cannot be used now ("" when it can). */
static const char *
cu_bw_unusable(const struct cu_bw_run *x, int g)
{
	const struct cu_bw_gpu *G = &x->b->gpu[g];

	return G->state == CU_BW_READY ? "" : G->state == CU_BW_HUNG ? "it hung earlier" : G->why;
}

static void
cu_bw_gpu_copies(struct cu_bw_run *x, int g)
{
	struct cu_bw_gpu *G = &x->b->gpu[g];
	char why[CU_BW_WHY];

	G->h2d = G->d2h = -1;
	if (G->state != CU_BW_READY)
		return;
	if ((G->h2d = cu_bw_time(x, CU_BW_H2D, g, g, why, sizeof why)) < 0 && G->why[0] == '\0')
		snprintf(G->why, sizeof G->why, "host to device: %.140s", why);
	if (G->state == CU_BW_READY &&
	    (G->d2h = cu_bw_time(x, CU_BW_D2H, g, g, why, sizeof why)) < 0 && G->why[0] == '\0')
		snprintf(G->why, sizeof G->why, "device to host: %.140s", why);
}

/* Peer access from i to j where the two can; the copy is staged by the driver otherwise. */
static void
cu_bw_peer(struct cu_bw_run *x, int i, int j)
{
	const struct cu_api *a = x->a;
	int can = 0, r;

	if (a->device_can_access_peer(&can, i, j) != CU_OK || !can ||
	    a->ctx_set_current(x->ctx[i]) != CU_OK)
		return;
	r = a->ctx_enable_peer_access(x->ctx[j], 0);
	x->b->peer[i][j] = r == CU_OK || r == CU_PEER_ACCESS_ALREADY_ENABLED;
}

static void
cu_bw_pair(struct cu_bw_run *x, int i, int j)
{
	struct cu_bw *b = x->b;
	const char *u;

	b->p2p[i][j] = -1;
	if (*(u = cu_bw_unusable(x, i)) != '\0' || *(u = cu_bw_unusable(x, j)) != '\0') {
		snprintf(b->pwhy[i][j], CU_BW_WHY, "GPU %d: %s", *cu_bw_unusable(x, i) != '\0' ?
		    i : j, u);
		return;
	}
	cu_bw_peer(x, i, j);
	b->p2p[i][j] = cu_bw_time(x, CU_BW_P2P, i, j, b->pwhy[i][j], CU_BW_WHY);
}

/* Give back what was taken, except on a hung GPU: freeing there could block for good. */
static void
cu_bw_close(struct cu_bw_run *x)
{
	const struct cu_api *a = x->a;
	int hung = 0;

	for (int g = 0; g < x->b->n; g++) {
		if (x->b->gpu[g].state == CU_BW_HUNG) {
			hung = 1;
			continue;
		}
		if (!x->held[g] || a->ctx_set_current(x->ctx[g]) != CU_OK)
			continue;
		for (int e = 0; e < 2; e++)
			if (x->ev[g][e] != NULL)
				a->event_destroy(x->ev[g][e]);
		if (x->stream[g] != NULL)
			a->stream_destroy(x->stream[g]);
		if (x->buf[g] != 0)
			a->mem_free(x->buf[g]);
	}
	if (x->host != NULL && !hung)
		a->mem_free_host(x->host);
	for (int g = 0; g < x->b->n; g++)
		if (x->held[g] && x->b->gpu[g].state != CU_BW_HUNG)
			a->primary_ctx_release(g);
	a->ctx_set_current(NULL);
}

/* The driver started and the GPUs counted: COLL_OK, or a code with why. */
static int
cu_bw_start(const struct cu_api *a, struct cu_bw *b, char *why, size_t len)
{
	const char *missing = plat_cuda_bw_missing(a);
	int r, n = 0;

	if (missing != NULL) {
		snprintf(why, len, "the CUDA driver has no %s: it is too old for collcheck gpus",
		    missing);
		return COLL_EVERSION;
	}
	/* 100: CUDA_ERROR_NO_DEVICE, what a host without GPUs answers. */
	if ((r = a->init(0)) == 100 || (r == CU_OK && (r = a->device_get_count(&n)) == CU_OK &&
	    n == 0)) {
		snprintf(why, len, "no GPU visible (CUDA_VISIBLE_DEVICES=%.64s)",
		    getenv("CUDA_VISIBLE_DEVICES") != NULL ? getenv("CUDA_VISIBLE_DEVICES") :
		    "unset");
		return COLL_ENOTFOUND;
	}
	if (r != CU_OK) {
		cu_bw_err(a, r, "the CUDA driver does not start", why, len);
		return COLL_ESYS;
	}
	b->n = n > CU_BW_MAX_GPUS ? CU_BW_MAX_GPUS : n;
	b->left_out = n - b->n;
	return COLL_OK;
}

/* The pinned host buffer, on the first GPU that works; NULL with why. */
static void *
cu_bw_pin(struct cu_bw_run *x, char *why, size_t len)
{
	void *p = NULL;
	int r = CU_OK;

	why[0] = '\0';
	for (int g = 0; g < x->b->n; g++) {
		if (x->b->gpu[g].state != CU_BW_READY)
			continue;
		/* Portable: pinned for every GPU's context, not only the one current now. */
		if ((r = x->a->ctx_set_current(x->ctx[g])) == CU_OK &&
		    (r = x->a->mem_host_alloc(&p, x->o->bytes, CU_MEMHOSTALLOC_PORTABLE)) == CU_OK)
			return p;
		break;
	}
	if (r != CU_OK)
		cu_bw_err(x->a, r, "cannot pin host memory", why, len);
	return NULL;
}

int
cu_bw_measure_with(const struct cu_api *a, struct cu_bw *b, const struct cu_bw_opts *o,
    char *why, size_t len)
{
	struct cu_bw_run *x;
	char pin[CU_BW_WHY];
	int rc;

	memset(b, 0, sizeof *b);
	if ((rc = cu_bw_start(a, b, why, len)) != COLL_OK)
		return rc;
	x = xcalloc(1, sizeof *x);
	*x = (struct cu_bw_run){ .a = a, .o = o, .b = b };
	for (int g = 0; g < b->n; g++)
		cu_bw_open_gpu(x, g);
	x->host = cu_bw_pin(x, pin, sizeof pin);
	for (int g = 0; g < b->n; g++) {
		if (x->host != NULL) {
			cu_bw_gpu_copies(x, g);
			continue;
		}
		b->gpu[g].h2d = b->gpu[g].d2h = -1;
		if (b->gpu[g].why[0] == '\0')
			snprintf(b->gpu[g].why, CU_BW_WHY, "%s", pin);
	}
	for (int i = 0; i < b->n; i++)
		for (int j = 0; j < b->n; j++)
			if (i != j)
				cu_bw_pair(x, i, j);
	cu_bw_close(x);
	free(x);
	return COLL_OK;
}

int
cu_bw_measure(struct cu_bw *b, const struct cu_bw_opts *o, char *why, size_t len)
{
	const struct cu_api *a;
	int rc;

	memset(b, 0, sizeof *b);
	if ((rc = plat_cuda_load(&a, why, len)) != COLL_OK)
		return rc;
	return cu_bw_measure_with(a, b, o, why, len);
}
