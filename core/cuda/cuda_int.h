/* The CUDA engine's own state, shared by its files: engine, ipc path, staged path. */
#ifndef COLL_CUDA_INT_H
#define COLL_CUDA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "cu_dev.h"
#include "cuda_kargs.h"
#include "probe.h"

enum cuda_path { CUDA_PATH_IPC, CUDA_PATH_STAGED };

/* An allocation of the engine's; mapped: every rank's copy is addressable here. */
struct cuda_buf {
	cu_ptr_t base;
	size_t size;
	int mapped;
	cu_ptr_t peer[CK_MAXR];		/* peer[rank]: that rank's copy, peer[me] = base */
	struct cuda_buf *next;
};

struct cuda_eng {
	struct cu_dev d;
	struct comm *c;
	int rank, nranks;
	enum cuda_path path;
	int timeout_ms;
	int dead;		/* timed out or failed: every later call fails at once */
	int queued;		/* ops started since the last wait */
	struct cuda_buf *bufs;	/* newest first */
	/* ipc */
	cu_module_t mod;
	cu_function_t fn_copy, fn_bcast, fn_reduce[10][4];
	int threads, max_blocks;
	int host_sync;		/* COLL_CUDA_SYNC=comm: barriers through the communicator */
	enum { CUDA_COPY_AUTO, CUDA_COPY_PUSH, CUDA_COPY_PULL } copy;	/* COLL_CUDA_COPY */
	enum { CUDA_ROOTED_AUTO, CUDA_ROOTED_SPREAD, CUDA_ROOTED_DIRECT } rooted;
				/* COLL_CUDA_ROOTED: broadcast and reduce, 3+ ranks */
	uint64_t seq;		/* ops launched: their barriers' values */
	cu_ptr_t flags;		/* this rank's barrier slots */
	cu_ptr_t peer_flags[CK_MAXR];
	volatile int *abort_host;	/* pinned, mapped: set when a wait gives up */
	cu_ptr_t abort_dev;
	/* staged */
	size_t slot;		/* bytes of each pinned slot */
	void *hin[2], *hout[2];
	cu_stream_t h2d;
	cu_event_t ev_in[2], ev_out[2], ev_h2d;
	char err[256];
};

/* The embedded fatbin, or NULL without kernels (cuda_fatbin.c). */
const void *cuda__fatbin(size_t *len);

/* Poll a stream or event (query) until ready, within the deadline. */
int cuda__sync(struct cuda_eng *g, int (*query)(void *), void *what, const char *doing);
/* Fail: the reason into g->err, a COLL_* code back. */
int cuda__fail(struct cuda_eng *g, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cuda__cu(struct cuda_eng *g, int r, const char *what);
/* The engine's buffer holding p, or NULL. */
struct cuda_buf *cuda__buf(struct cuda_eng *g, cu_ptr_t p);

/* cuda_ipc.c: load the kernels and map every rank's barrier slots; ops; teardown. */
/* COLL_CUDA_COPY and COLL_CUDA_ROOTED into g; COLL_EINVAL naming a value it does not know. */
int cuda_ipc_choices(struct cuda_eng *g);
int cuda_ipc_open(struct cuda_eng *g);
int cuda_ipc_start(struct cuda_eng *g, enum probe_coll k, cu_ptr_t s, cu_ptr_t r,
    size_t count, enum dtype dt, enum redop op, int root);
void cuda_ipc_unmap(struct cuda_eng *g, struct cuda_buf *b);
void cuda_ipc_close(struct cuda_eng *g);

/* cuda_staged.c: pinned slots, a second stream; ops through coll over TCP; teardown. */
int cuda_staged_open(struct cuda_eng *g);
int cuda_staged_start(struct cuda_eng *g, enum probe_coll k, cu_ptr_t s, cu_ptr_t r,
    size_t count, enum dtype dt, enum redop op, int root);
int cuda_staged_wait(struct cuda_eng *g);
void cuda_staged_close(struct cuda_eng *g);

#endif
