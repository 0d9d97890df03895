/*
 * The NCCL profiler plugin, loaded as NCCL loads it (dlopen, then the
 * newest ncclProfiler_vN table it knows, by name) and called as NCCL 2.26 to
 * 2.30 call it: a communicator's init, collective events at enqueue, kernel
 * channel events from another thread, copy-engine collectives (v6), finalize. Each test reads the status
 * page the plugin writes, as collstack does. A real NCCL run is on the GPU
 * machine (tests/gpu/); this is the plugin's own contract.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "kind.h"
#include "ncclprof_abi.h"
#include "status.h"

static void *lib;
static const struct nprof_v6 *v6;
static const struct nprof_v5 *v5;
static const struct nprof_v4 *v4;
static void *fakecuda;
static int (*cuda_run)(int n);
static int (*cuda_pending)(void);
static char logged[1024];
static int logged_level;

static void
capture_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	logged_level = level;
	va_start(ap, fmt);
	vsnprintf(logged, sizeof logged, fmt, ap);
	va_end(ap);
}

static int
setup(void **state)
{
	(void)state;
	lib = dlopen(NCCLPROF_SO, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		print_error("dlopen %s: %s\n", NCCLPROF_SO, dlerror());
		return -1;
	}
	v6 = dlsym(lib, "ncclProfiler_v6");
	v5 = dlsym(lib, "ncclProfiler_v5");
	v4 = dlsym(lib, "ncclProfiler_v4");
	return v6 != NULL && v5 != NULL && v4 != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	if (lib != NULL)
		dlclose(lib);
	if (fakecuda != NULL)
		dlclose(fakecuda);
	return 0;
}

static void
page_path(char *buf, size_t len, uint64_t hash, int rank)
{
	snprintf(buf, len, "%s/coll.%016" PRIx64 ".%016" PRIx64 ".%d", status_dir(), (uint64_t)0,
	    hash, rank);
}

static void
read_page(uint64_t hash, int rank, struct status_page *pg)
{
	char path[512];

	page_path(path, sizeof path, hash, rank);
	assert_int_equal(status_read(path, pg), COLL_OK);
}

static void *
coll_v5(void *ctx, const char *func, size_t count, const char *type, int nch)
{
	struct nprof_descr_v5 d;
	void *h = (void *)0x1;

	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_COLL;
	d.coll.c.func = func;
	d.coll.c.count = count;
	d.coll.c.datatype = type;
	d.coll.c.nchannels = (uint8_t)nch;
	assert_int_equal(v5->start(ctx, &h, &d), NPROF_OK);
	assert_non_null(h);
	assert_int_equal(v5->stop(h), NPROF_OK);	/* enqueued: NCCL stops it at once */
	return h;
}

static void *
kernel_v5(void *ctx, void *coll, int ch)
{
	struct nprof_descr_v5 d;
	void *h = (void *)0x1;

	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_KERNEL_CH;
	d.parent = coll;
	d.kernel_ch.channel = (uint8_t)ch;
	assert_int_equal(v5->start(ctx, &h, &d), NPROF_OK);
	return h;
}

static void
test_ncclprof_v5_ops(void **state)
{
	const uint64_t hash = 0x1c60d1eb1a4d5801ull;
	struct status_page pg;
	void *ctx = NULL, *c, *k0, *k1;
	int mask = -1;

	(void)state;
	unsetenv("COLL_NCCL_KERNEL_EVENTS");
	assert_int_equal(v5->init(&ctx, hash, &mask, "pg0", 1, 2, 1, capture_log), NPROF_OK);
	assert_int_equal(mask, NPROF_EV_COLL | NPROF_EV_KERNEL_CH);
	read_page(hash, 1, &pg);
	assert_int_equal(pg.source, STATUS_SRC_NCCL);
	assert_true(pg.commid == hash);
	assert_int_equal(pg.rank, 1);
	assert_int_equal(pg.nranks, 2);
	assert_int_equal(pg.pid, getpid());
	assert_int_equal(pg.state, STATUS_IDLE);
	assert_non_null(strstr(logged, "status page"));
	/* Five all-reduces run to the end on two channels each. */
	for (int i = 0; i < 5; i++) {
		c = coll_v5(ctx, "AllReduce", 262144, "ncclFloat32", 2);
		k0 = kernel_v5(ctx, c, 0);
		k1 = kernel_v5(ctx, c, 1);
		assert_non_null(k0);
		assert_ptr_not_equal(k0, c);
		v5->record(k0, 22, NULL);
		v5->stop(k0);
		v5->stop(k1);
	}
	read_page(hash, 1, &pg);
	assert_true(pg.seq_queued == 5 && pg.seq_started == 5 && pg.seq_done == 5);
	assert_int_equal(pg.state, STATUS_IDLE);
	assert_true(pg.flags & STATUS_F_KERNEL);
	/* The sixth is enqueued, its kernel begins on one channel and never ends. */
	c = coll_v5(ctx, "AllReduce", 262144, "ncclFloat32", 2);
	read_page(hash, 1, &pg);
	assert_true(pg.seq_queued == 6 && pg.seq_started == 5);
	assert_int_equal(pg.kind_queued, KIND_ALLREDUCE);
	assert_true(pg.bytes == 1048576);
	assert_int_equal(pg.state, STATUS_RUNNING);
	k0 = kernel_v5(ctx, c, 0);
	k1 = kernel_v5(ctx, c, 1);
	v5->stop(k0);
	read_page(hash, 1, &pg);
	assert_true(pg.seq_started == 6 && pg.seq_done == 5);
	assert_int_equal(pg.state, STATUS_RUNNING);
	/* Its last channel ends: done. */
	v5->stop(k1);
	read_page(hash, 1, &pg);
	assert_true(pg.seq_done == 6 && pg.kind_done == KIND_ALLREDUCE);
	assert_int_equal(pg.state, STATUS_IDLE);
	assert_int_equal(v5->finalize(ctx), NPROF_OK);
	{
		char path[512];
		struct stat sb;

		page_path(path, sizeof path, hash, 1);
		assert_int_equal(stat(path, &sb), -1);	/* finalize removes the page */
	}
}

/* v4: one-byte type, the name before the hash in init, no parent group in the descriptor. */
static void
test_ncclprof_v4_ops(void **state)
{
	const uint64_t hash = 0xabcdef0123456789ull;
	struct nprof_descr_v4 d;
	struct status_page pg;
	void *ctx = NULL, *c = NULL, *k = NULL;
	int mask = 0;

	(void)state;
	assert_int_equal(v4->init(&ctx, &mask, "pg1", hash, 1, 4, 3, NULL), NPROF_OK);
	assert_true(mask & NPROF_EV_COLL);
	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_COLL;
	d.coll.func = "ReduceScatter";
	d.coll.count = 1000;
	d.coll.datatype = "ncclBfloat16";
	d.coll.nchannels = 1;
	assert_int_equal(v4->start(ctx, &c, &d), NPROF_OK);
	read_page(hash, 3, &pg);
	assert_true(pg.seq_queued == 1 && pg.bytes == 2000);
	assert_int_equal(pg.kind_queued, KIND_REDUCE_SCATTER);
	assert_int_equal(pg.nranks, 4);
	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_KERNEL_CH;
	d.parent = c;
	assert_int_equal(v4->start(ctx, &k, &d), NPROF_OK);
	v4->stop(k);
	read_page(hash, 3, &pg);
	assert_true(pg.seq_done == 1);
	assert_int_equal(pg.state, STATUS_IDLE);
	v4->finalize(ctx);
}

/* What NCCL might hand over that is not ours, or not known: nothing breaks, nothing is counted. */
static void
test_ncclprof_foreign(void **state)
{
	const uint64_t hash = 0x42ull;
	struct nprof_descr_v5 d;
	struct status_page pg;
	void *ctx = NULL, *h = (void *)0x1, *c;
	int mask = 0, stray;

	(void)state;
	assert_int_equal(v5->init(&ctx, hash, &mask, NULL, 1, 2, 0, NULL), NPROF_OK);
	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_KERNEL_CH;
	d.parent = NULL;		/* a point-to-point op's channel: its parent is not ours */
	v5->start(ctx, &h, &d);
	assert_null(h);
	d.parent = &stray;
	v5->start(ctx, &h, &d);
	assert_null(h);
	d.type = NPROF_EV_GROUP;
	h = (void *)0x1;
	v5->start(ctx, &h, &d);
	assert_null(h);
	assert_int_equal(v5->stop(NULL), NPROF_OK);
	assert_int_equal(v5->start(ctx, &h, NULL), NPROF_OK);
	c = coll_v5(ctx, "Frobnicate", 10, "ncclMystery", 0);
	read_page(hash, 0, &pg);
	assert_true(pg.seq_queued == 1 && pg.seq_started == 0);
	assert_int_equal(pg.kind_queued, KIND_NONE);
	assert_true(pg.bytes == 0);
	/* No channel count: done when all channels that began have ended. */
	h = kernel_v5(ctx, c, 0);
	v5->stop(h);
	read_page(hash, 0, &pg);
	assert_true(pg.seq_done == 1);
	v5->finalize(ctx);
	assert_int_equal(v5->finalize(NULL), NPROF_OK);
}

/*
 * A page that cannot be made leaves that communicator without one, said in
 * NCCL's log; the mask, which NCCL shares between all communicators of the
 * process, is not lowered (another communicator's page would stop).
 */
static void
test_ncclprof_no_page(void **state)
{
	char *old = getenv("COLL_STATUS_DIR") ? strdup(getenv("COLL_STATUS_DIR")) : NULL;
	void *ctx = NULL, *ctx2 = NULL, *c;
	int mask = NPROF_EV_COLL | NPROF_EV_KERNEL_CH;
	struct status_page pg;

	(void)state;
	assert_int_equal(v5->init(&ctx2, 0x79, &mask, "ok", 1, 2, 0, NULL), NPROF_OK);
	setenv("COLL_STATUS_DIR", "/nonexistent/coll-status", 1);
	logged[0] = '\0';
	assert_int_equal(v5->init(&ctx, 0x77, &mask, "x", 1, 2, 0, capture_log), NPROF_OK);
	assert_int_equal(mask, NPROF_EV_COLL | NPROF_EV_KERNEL_CH);
	assert_int_equal(logged_level, NPROF_LOG_WARN);
	assert_non_null(strstr(logged, "/nonexistent/coll-status"));
	assert_non_null(strstr(logged, "COLL_STATUS_DIR"));
	c = coll_v5(ctx, "AllReduce", 8, "ncclFloat32", 1);	/* goes nowhere, breaks nothing */
	v5->stop(kernel_v5(ctx, c, 0));
	v5->finalize(ctx);
	if (old != NULL)
		setenv("COLL_STATUS_DIR", old, 1);
	else
		unsetenv("COLL_STATUS_DIR");
	coll_v5(ctx2, "AllReduce", 8, "ncclFloat32", 1);
	read_page(0x79, 0, &pg);
	assert_true(pg.seq_queued == 1);	/* the other communicator still counts */
	v5->finalize(ctx2);
	free(old);
}

static void
test_ncclprof_enqueue_only(void **state)
{
	void *ctx = NULL;
	int mask = 0;

	(void)state;
	setenv("COLL_NCCL_KERNEL_EVENTS", "0", 1);
	assert_int_equal(v5->init(&ctx, 0x78, &mask, "x", 1, 2, 0, NULL), NPROF_OK);
	unsetenv("COLL_NCCL_KERNEL_EVENTS");
	assert_int_equal(mask, NPROF_EV_COLL);
	v5->finalize(ctx);
}

/* The launching thread enqueues while another (NCCL's proxy) reports kernels, as in a job. */
struct proxy_arg {
	void *ctx;
	void **colls;
	int n;
};

static void *
proxy_thread(void *p)
{
	struct proxy_arg *a = p;

	for (int i = 0; i < a->n; i++) {
		void *c;

		while ((c = __atomic_load_n(&a->colls[i], __ATOMIC_ACQUIRE)) == NULL)
			sched_yield();
		void *k0 = kernel_v5(a->ctx, c, 0), *k1 = kernel_v5(a->ctx, c, 1);

		v5->stop(k1);
		v5->stop(k0);
	}
	return NULL;
}

static void
test_ncclprof_threads(void **state)
{
	const uint64_t hash = 0x99ull;
	enum { N = 5000 };
	static void *colls[N];
	struct proxy_arg a = { NULL, colls, N };
	struct status_page pg;
	pthread_t t;
	int mask = 0;

	(void)state;
	assert_int_equal(v5->init(&a.ctx, hash, &mask, "x", 1, 8, 5, NULL), NPROF_OK);
	assert_int_equal(pthread_create(&t, NULL, proxy_thread, &a), 0);
	for (int i = 0; i < N; i++) {
		/* Stay within the ring, as NCCL's bounded queue of work does. */
		for (pg.seq_done = 0; (uint64_t)i > pg.seq_done + 512; sched_yield())
			read_page(hash, 5, &pg);
		__atomic_store_n(&colls[i], coll_v5(a.ctx, "AllGather", 8, "ncclInt64", 2),
		    __ATOMIC_RELEASE);
	}
	pthread_join(t, NULL);
	read_page(hash, 5, &pg);
	assert_true(pg.seq_queued == N && pg.seq_started == N && pg.seq_done == N);
	assert_int_equal(pg.state, STATUS_IDLE);
	/* The ring holds the last STATUS_RING ops, each queued, begun and ended in order. */
	for (int i = 0; i < STATUS_RING; i++) {
		const struct status_op *o = &pg.ops[(N - i) % STATUS_RING];

		assert_true(o->seq == (uint64_t)(N - i));
		assert_true(o->queued_ns != 0 && o->queued_ns <= o->begin_ns &&
		    o->begin_ns <= o->end_ns);
	}
	v5->finalize(a.ctx);
}

/*
 * The ring of an NCCL op (page version 5): queued at enqueue, several ahead
 * of the kernels; begun when its first channel's kernel begins, ended when
 * its last channel's ends (as the page's seq_done), each in its seq's slot.
 */
static void
test_ncclprof_ring(void **state)
{
	const uint64_t hash = 0x5106ull;
	struct status_page pg;
	void *ctx = NULL, *c[4], *k[4][2];
	int mask = 0;
	uint64_t b1;

	(void)state;
	assert_int_equal(v5->init(&ctx, hash, &mask, "ring", 1, 2, 0, NULL), NPROF_OK);
	for (int i = 1; i <= 3; i++)
		c[i] = coll_v5(ctx, "AllReduce", 1024, "ncclFloat32", 2);
	read_page(hash, 0, &pg);
	for (int i = 1; i <= 3; i++)
		assert_true(pg.ops[i].seq == (uint64_t)i && pg.ops[i].queued_ns != 0 &&
		    pg.ops[i].begin_ns == 0 && pg.ops[i].end_ns == 0);
	k[1][0] = kernel_v5(ctx, c[1], 0);
	read_page(hash, 0, &pg);
	b1 = pg.ops[1].begin_ns;
	assert_true(b1 >= pg.ops[1].queued_ns && b1 >= pg.ops[3].queued_ns);
	k[1][1] = kernel_v5(ctx, c[1], 1);	/* the second channel: the op's begin stays */
	v5->stop(k[1][0]);
	read_page(hash, 0, &pg);
	assert_true(pg.ops[1].begin_ns == b1 && pg.ops[1].end_ns == 0);
	v5->stop(k[1][1]);
	read_page(hash, 0, &pg);
	assert_true(pg.ops[1].end_ns >= b1 && pg.seq_done == 1);
	assert_true(pg.ops[2].begin_ns == 0 && pg.ops[3].begin_ns == 0);
	for (int i = 2; i <= 3; i++) {
		k[i][0] = kernel_v5(ctx, c[i], 0);
		k[i][1] = kernel_v5(ctx, c[i], 1);
		v5->stop(k[i][1]);
		v5->stop(k[i][0]);
	}
	read_page(hash, 0, &pg);
	for (int i = 1; i <= 3; i++)
		assert_true(pg.ops[i].queued_ns <= pg.ops[i].begin_ns &&
		    pg.ops[i].begin_ns <= pg.ops[i].end_ns);
	assert_true(pg.ops[2].begin_ns >= pg.ops[1].end_ns);
	assert_true(pg.ops[0].seq == 0 && pg.ops[4].seq == 0);
	v5->finalize(ctx);
}

/*
 * Which table each NCCL takes: the newest it knows, by name (2.26 knows v4;
 * 2.27 and 2.28 v5; 2.29 and 2.30 v6). Only v6's init asks for copy-engine
 * collectives: an older NCCL has no such events.
 */
static void
test_ncclprof_tables(void **state)
{
	static const struct {
		int nccl, newest;
	} known[] = { { 22600, 4 }, { 22700, 5 }, { 22800, 5 }, { 22900, 6 }, { 23000, 6 } };
	void *ctx = NULL;
	int mask = 0;

	(void)state;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		int got = 0;

		for (int v = known[i].newest; v >= 4 && got == 0; v--) {
			char name[32];

			snprintf(name, sizeof name, "ncclProfiler_v%d", v);
			if (dlsym(lib, name) != NULL)
				got = v;
		}
		assert_int_equal(got, known[i].newest);
	}
	assert_string_equal(v6->name, "coll");
	assert_int_equal(v6->init(&ctx, 0x600, &mask, "t", 1, 2, 0, NULL), NPROF_OK);
	assert_int_equal(mask, NPROF_EV_COLL | NPROF_EV_KERNEL_CH | NPROF_EV_CE_COLL);
	v6->finalize(ctx);
	assert_int_equal(v5->init(&ctx, 0x601, &mask, "t", 1, 2, 0, NULL), NPROF_OK);
	assert_int_equal(mask & (NPROF_EV_CE_COLL | NPROF_EV_CE_SYNC | NPROF_EV_CE_BATCH), 0);
	v5->finalize(ctx);
}

static void *
coll_v6(void *ctx, const char *func, size_t count, int nch)
{
	struct nprof_descr_v6 d;
	void *h = (void *)0x1;

	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_COLL;
	d.coll.c.func = func;
	d.coll.c.count = count;
	d.coll.c.datatype = "ncclFloat32";
	d.coll.c.nchannels = (uint8_t)nch;
	assert_int_equal(v6->start(ctx, &h, &d), NPROF_OK);
	assert_non_null(h);
	v6->stop(h);
	return h;
}

/* A copy-engine collective's start; its handle (NULL: not counted). */
static void *
ce_v6(void *ctx, const char *func, size_t count, void *stream)
{
	struct nprof_descr_v6 d;
	void *h = (void *)0x1;

	memset(&d, 0, sizeof d);
	d.type = NPROF_EV_CE_COLL;
	d.rank = 0;
	d.ce_coll.seq = 7;
	d.ce_coll.func = func;
	d.ce_coll.count = count;
	d.ce_coll.datatype = "ncclBfloat16";
	d.ce_coll.sync = "UC";
	d.ce_coll.stream = stream;
	assert_int_equal(v6->start(ctx, &h, &d), NPROF_OK);
	return h;
}

/* No CUDA driver loaded (NCCL always has one): a copy-engine op is not counted, kernels are. */
static void
test_ncclprof_v6_no_cuda(void **state)
{
	const uint64_t hash = 0x6000ull;
	struct status_page pg;
	void *ctx = NULL, *c;
	int mask = 0;

	(void)state;
	assert_int_equal(v6->init(&ctx, hash, &mask, "t", 1, 2, 0, NULL), NPROF_OK);
	c = coll_v6(ctx, "AllReduce", 256, 1);
	v6->stop(kernel_v5(ctx, c, 0));
	assert_null(ce_v6(ctx, "AllGather", 1024, (void *)0x5));
	read_page(hash, 0, &pg);
	assert_true(pg.seq_queued == 1 && pg.seq_done == 1);
	assert_int_equal(pg.state, STATUS_IDLE);
	v6->finalize(ctx);
}

/* The CUDA stand-in, loaded as NCCL would have loaded CUDA before any communicator. */
static void
load_fakecuda(void)
{
	if (fakecuda != NULL)
		return;
	fakecuda = dlopen(FAKECUDA_SO, RTLD_NOW | RTLD_GLOBAL);
	assert_non_null(fakecuda);
	*(void **)&cuda_run = dlsym(fakecuda, "fakecuda_run");
	*(void **)&cuda_pending = dlsym(fakecuda, "fakecuda_pending");
	assert_true(cuda_run != NULL && cuda_pending != NULL);
}

/* CeSync and CeBatch events (not asked for, but NCCL may send them): no handle, no count. */
static void
ce_children(void *ctx, void *ce)
{
	struct nprof_descr_v6 d;
	void *h = (void *)0x1;

	memset(&d, 0, sizeof d);
	d.parent = ce;
	d.type = NPROF_EV_CE_SYNC;
	assert_int_equal(v6->start(ctx, &h, &d), NPROF_OK);
	assert_null(h);
	d.type = NPROF_EV_CE_BATCH;
	h = (void *)0x1;
	assert_int_equal(v6->start(ctx, &h, &d), NPROF_OK);
	assert_null(h);
	d.type = NPROF_EV_KERNEL_CH;	/* a kernel channel under a copy-engine op: not ours */
	h = (void *)0x1;
	assert_int_equal(v6->start(ctx, &h, &d), NPROF_OK);
	assert_null(h);
}

/*
 * Copy-engine collectives between kernel ones count in the one sequence:
 * queued at start, begun when the stream reaches the op, ended when it is
 * past it, each in its ring slot with its kind, "CE" as its algorithm.
 */
static void
test_ncclprof_v6_ce(void **state)
{
	const uint64_t hash = 0x6001ull;
	struct status_page pg;
	void *ctx = NULL, *c, *ce;
	int mask = 0;

	(void)state;
	load_fakecuda();
	assert_int_equal(v6->init(&ctx, hash, &mask, "t", 1, 2, 1, NULL), NPROF_OK);
	c = coll_v6(ctx, "AllReduce", 256, 1);				/* seq 1 */
	v6->stop(kernel_v5(ctx, c, 0));
	ce = ce_v6(ctx, "AllGather", 1000, (void *)0x5);		/* seq 2 */
	assert_non_null(ce);
	ce_children(ctx, ce);
	read_page(hash, 1, &pg);
	assert_true(pg.seq_queued == 2 && pg.seq_started == 1 && pg.seq_done == 1);
	assert_int_equal(pg.kind_queued, KIND_ALLGATHER);
	assert_true(pg.bytes == 2000);
	assert_string_equal(pg.algo, "CE");
	assert_string_equal(pg.proto, "UC");
	assert_int_equal(pg.state, STATUS_RUNNING);
	assert_int_equal(v6->stop(ce), NPROF_OK);	/* its copies are on the stream */
	assert_int_equal(cuda_pending(), 2);
	assert_int_equal(cuda_run(1), 1);		/* the stream reaches it */
	read_page(hash, 1, &pg);
	assert_true(pg.seq_started == 2 && pg.seq_done == 1);
	assert_true(pg.ops[2].seq == 2 && pg.ops[2].begin_ns >= pg.ops[2].queued_ns &&
	    pg.ops[2].end_ns == 0);
	assert_int_equal(pg.op_kind[2], KIND_ALLGATHER);
	assert_int_equal(cuda_run(-1), 1);		/* and is past it */
	read_page(hash, 1, &pg);
	assert_true(pg.seq_done == 2 && pg.kind_done == KIND_ALLGATHER);
	assert_true(pg.ops[2].end_ns >= pg.ops[2].begin_ns);
	assert_int_equal(pg.state, STATUS_IDLE);
	/* Captured into a CUDA graph: not counted; a kernel op after it is seq 3. */
	assert_null(ce_v6(ctx, "AlltoAll", 8, (void *)0xca));
	c = coll_v6(ctx, "AllReduce", 256, 1);
	v6->stop(kernel_v5(ctx, c, 0));
	read_page(hash, 1, &pg);
	assert_true(pg.seq_queued == 3 && pg.seq_done == 3 && pg.ops[3].seq == 3);
	assert_int_equal(pg.op_kind[3], KIND_ALLREDUCE);
	/* A stream nothing can be placed on: no handle, and the page waits for no end. */
	assert_null(ce_v6(ctx, "Scatter", 8, (void *)0xbad));
	assert_int_equal(cuda_pending(), 0);
	v6->finalize(ctx);
}

/* Host functions still on a stream when NCCL finalizes: they run later, on a closed page. */
static void
test_ncclprof_v6_ce_late(void **state)
{
	const uint64_t hash = 0x6002ull;
	struct status_page pg;
	void *ctx = NULL, *ce[3];
	int mask = 0;
	char path[512];

	(void)state;
	load_fakecuda();
	assert_int_equal(v6->init(&ctx, hash, &mask, "t", 1, 2, 0, NULL), NPROF_OK);
	for (int i = 0; i < 3; i++) {
		ce[i] = ce_v6(ctx, "AlltoAll", 64, (void *)0x5);
		assert_non_null(ce[i]);
		v6->stop(ce[i]);
	}
	assert_int_equal(cuda_run(2), 2);
	read_page(hash, 0, &pg);
	assert_true(pg.seq_queued == 3 && pg.seq_started == 1 && pg.seq_done == 1);
	assert_int_equal(pg.kind_done, KIND_ALLTOALL);
	assert_int_equal(v6->finalize(ctx), NPROF_OK);
	page_path(path, sizeof path, hash, 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(cuda_run(-1), 4);		/* the last frees the context (ASan) */
}

/*
 * NCCL dlcloses its plugin at the last finalize, while CUDA may still hold
 * host functions of a copy-engine op: the plugin stays mapped (-z nodelete).
 * Last: it closes the handle the others used.
 */
static void
test_ncclprof_stays_mapped(void **state)
{
	(void)state;
	dlclose(lib);
	lib = dlopen(NCCLPROF_SO, RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(lib);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ncclprof_v5_ops),
		cmocka_unit_test(test_ncclprof_v4_ops),
		cmocka_unit_test(test_ncclprof_foreign),
		cmocka_unit_test(test_ncclprof_no_page),
		cmocka_unit_test(test_ncclprof_enqueue_only),
		cmocka_unit_test(test_ncclprof_threads),
		cmocka_unit_test(test_ncclprof_ring),
		cmocka_unit_test(test_ncclprof_tables),
		cmocka_unit_test(test_ncclprof_v6_no_cuda),	/* before the CUDA stand-in loads */
		cmocka_unit_test(test_ncclprof_v6_ce),
		cmocka_unit_test(test_ncclprof_v6_ce_late),
		cmocka_unit_test(test_ncclprof_stays_mapped),	/* last */
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
