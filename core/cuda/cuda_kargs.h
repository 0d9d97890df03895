/*
 * The one argument of every kernel of coll's CUDA engine, shared by the C
 * host code and the .cu source: plain fixed-size fields, the same layout for
 * both compilers. Pointers are device addresses in the launching process,
 * peers' buffers included (CUDA IPC mappings).
 */
#ifndef COLL_CUDA_KARGS_H
#define COLL_CUDA_KARGS_H

#define CK_MAXR 8		/* ranks of one host that map each other's memory */
#define CK_MAXBLOCKS 128	/* barrier slots: no launch has more blocks */
#define CK_UNROLL 4		/* 16-byte vectors in flight per thread */
#define CK_STEPS 256		/* barrier values per op: op seq x CK_STEPS + 1 ... */
#define CK_MAXPIPE 32		/* a pipelined broadcast's steps, at most */

struct ck_args {
	unsigned long long src[CK_MAXR];	/* reduce: one per rank; copy: one per pair */
	unsigned long long dst[CK_MAXR];	/* reduce: where the result goes; copy: pairs */
	unsigned long long flags[CK_MAXR];	/* each rank's barrier slots */
	unsigned long long abort;		/* host memory: nonzero stops every wait */
	unsigned long long count;		/* reduce: elements; copy: bytes per pair;
						 * broadcast pipeline: bytes */
	unsigned long long slice;		/* broadcast pipeline: bytes of a slice */
	unsigned long long seq;			/* this op's number: its barriers' values */
	int nsrc, ndst;
	int nranks, rank;
	int avg_n;				/* > 0: divide the sum by it */
	int root;				/* broadcast pipeline: its root */
	int vec;				/* every pointer 16-byte aligned */
};

#endif
