/*
 * Copy bandwidth inside one host, GPU by GPU, for collcheck gpus: each GPU's
 * host-to-device and device-to-host copies from pinned memory, and a copy
 * from every GPU to every other (its copy engine, over NVLink or PCIe, direct
 * where peer access is possible, else staged by the driver), as nvbandwidth's
 * memcpy tests measure them. Each is timed with CUDA events over iters copies
 * after one warm-up, and bounded by a deadline: a GPU that does not finish is
 * a failure with a reason, never a hang, and is not used again.
 */
#ifndef COLL_CU_BW_H
#define COLL_CU_BW_H

#include <stddef.h>

#include "plat_cuda.h"

#define CU_BW_MAX_GPUS 32	/* GPUs of one host measured; more are left out (said) */
#define CU_BW_WHY 160

struct cu_bw_opts {
	size_t bytes;		/* per copy */
	int iters;		/* timed copies after the warm-up */
	int timeout_ms;		/* for each measurement's copies */
};

struct cu_bw_gpu {
	char model[96];		/* cuDeviceGetName */
	char bus[16];		/* "0000:3b:00" */
	double h2d, d2h;	/* GB/s (1e9 bytes); < 0: failed, why says why */
	char why[CU_BW_WHY];	/* the first failure on this GPU, or "" */
	int state;		/* CU_BW_READY, CU_BW_BROKEN (could not be set up), CU_BW_HUNG */
};

enum { CU_BW_READY, CU_BW_BROKEN, CU_BW_HUNG };

struct cu_bw {
	int n, left_out;	/* GPUs measured; GPUs past CU_BW_MAX_GPUS */
	struct cu_bw_gpu gpu[CU_BW_MAX_GPUS];
	/* [from][to]: GB/s (< 0 failed, see pwhy; the diagonal 0) and whether the copy was direct. */
	double p2p[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS];
	unsigned char peer[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS];
	char pwhy[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS][CU_BW_WHY];
};

/*
 * Measure every GPU the process sees (CUDA's numbering: CUDA_VISIBLE_DEVICES
 * and CUDA_DEVICE_ORDER apply) into b. COLL_OK when the GPUs were reached
 * (each measurement's own failure is in b); COLL_ENOTFOUND when there is no
 * driver or no GPU, COLL_EVERSION when the driver lacks a function,
 * COLL_ESYS when the driver does not start; why says which.
 */
int cu_bw_measure(struct cu_bw *b, const struct cu_bw_opts *o, char *why, size_t len);
/* The same through a given driver table (tests give a fake one). */
int cu_bw_measure_with(const struct cu_api *a, struct cu_bw *b, const struct cu_bw_opts *o,
    char *why, size_t len);

#endif
