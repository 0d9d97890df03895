/*
 * One rank's GPU, as every GPU engine takes it: the driver loaded, the
 * device of this rank's index on its host (as torchrun's LOCAL_RANK), its
 * primary context current and a non-blocking stream for the ops.
 */
#ifndef COLL_CU_DEV_H
#define COLL_CU_DEV_H

#include <stddef.h>

#include "comm.h"
#include "cu_api.h"

struct cu_dev {
	struct cu_api api;
	cu_ctx_t ctx;
	cu_stream_t stream;
	int dev;
	int ctx_held;
};

/*
 * Load the driver and take device (-1: COLL_LOCAL_RANK, else this rank's
 * index among its host's ranks, modulo the GPUs). COLL_OK, or a COLL_* code
 * with why in err; for_what names the engine in the message.
 */
int cu_dev_open(struct cu_dev *d, struct comm *c, int device, const char *for_what, char *err,
    size_t len);
void cu_dev_close(struct cu_dev *d);
/* "device 0 [0000:19:00] NVIDIA H200", for an engine's where. */
void cu_dev_where(const struct cu_dev *d, char *buf, size_t len);
/* COLL_OK for CU_OK, else COLL_ESYS with "what on GPU n: reason" in err. */
int cu_dev_check(const struct cu_dev *d, int r, const char *what, char *err, size_t len);
/*
 * Copy host memory to the GPU and wait until it landed: from pageable memory
 * the copy returns once the bytes are staged, and an ops' stream does not
 * wait for the default one. COLL_OK, or COLL_ESYS with why in err.
 */
int cu_dev_put(const struct cu_dev *d, cu_ptr_t dst, const void *src, size_t len, char *err,
    size_t errlen);
/* Copy from the GPU (after the ops' stream was waited for). */
int cu_dev_get(const struct cu_dev *d, void *dst, cu_ptr_t src, size_t len, char *err,
    size_t errlen);
/*
 * Every rank of c calls it: COLL_OK when ok is set on every rank, else an
 * error naming the ranks (and hosts) where stage failed.
 */
int cu_dev_agree(struct comm *c, int ok, const char *stage, char *err, size_t len);

#endif
