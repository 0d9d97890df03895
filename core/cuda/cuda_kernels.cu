/*
 * The kernels of coll's CUDA engine: compiled by nvcc into a fatbin that is
 * embedded in libcoll and loaded with the driver API, so no CUDA runtime is
 * linked. Two kernel shapes do every collective on one host:
 *
 *   reduce: dst[*][i] = src[0][i] op src[1][i] op ... (in rank order, each
 *           step rounded to the type, as the host's reduce_apply does, so the
 *           result is the probe's expected one bit for bit), avg divides last;
 *   copy:   dst[p][i] = src[p][i] for each pair p.
 *
 * Sources and destinations may be peers' memory (CUDA IPC over NVLink).
 * Every kernel starts and ends with a barrier among the ranks, per block:
 * block b of each rank stores a value made from the op's number (seq x
 * CK_STEPS + step, so values only grow, whatever the kernel) into block b's
 * slot of every peer and waits for theirs. The first says every peer's input is ready
 * (their earlier ops are done: one stream each); the second that no peer
 * touches this rank's memory any more once this rank's kernel is done. The
 * waits give up when the host sets the abort word (its deadline passed).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "cuda_kargs.h"

enum { K_SUM, K_PROD, K_MIN, K_MAX };

static __device__ __forceinline__ void
ck_store_release(unsigned long long *p, unsigned long long v)
{
	asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ unsigned long long
ck_load_acquire(const unsigned long long *p)
{
	unsigned long long v;

	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

/* 0: every rank's block reached value v; 1: the host aborted the wait. */
static __device__ int
ck_barrier(const ck_args &a, unsigned long long v)
{
	__shared__ int stop;
	int t = threadIdx.x;

	if (a.nranks <= 1)
		return 0;
	if (t == 0)
		stop = 0;
	__syncthreads();
	if (t < a.nranks) {
		unsigned long long *mine = (unsigned long long *)a.flags[a.rank];
		unsigned long long *theirs = (unsigned long long *)a.flags[t];
		unsigned spins = 0;

		__threadfence_system();
		ck_store_release(theirs + blockIdx.x * CK_MAXR + a.rank, v);
		while (ck_load_acquire(mine + blockIdx.x * CK_MAXR + t) < v) {
			if ((++spins & 1023) == 0 && *(volatile int *)a.abort != 0) {
				stop = 1;
				break;
			}
		}
		__threadfence_system();
	}
	__syncthreads();
	return stop;
}

/* One element of each type, combined as dtype/reduce.c does on the host. */
template <typename T, int OP> struct ck_op {
	static __device__ __forceinline__ T apply(T p, T q)
	{
		typedef typename std::make_unsigned<T>::type U;

		switch (OP) {
		case K_SUM: return (T)((U)p + (U)q);
		case K_PROD: return (T)((U)p * (U)q);
		case K_MIN: return p < q ? p : q;
		default: return p > q ? p : q;
		}
	}
	static __device__ __forceinline__ T avg(T p, int n) { return (T)(p / n); }
};

template <typename F, int OP> static __device__ __forceinline__ F
ck_fop(F p, F q)
{
	if (p != p || q != q)
		return (F)NAN;
	switch (OP) {
	case K_SUM: return p + q;
	case K_PROD: return p * q;
	case K_MIN: return p < q ? p : q < p ? q : (signbit(p) ? p : q);
	default: return p > q ? p : q > p ? q : (signbit(p) ? q : p);
	}
}

template <int OP> struct ck_op<float, OP> {
	static __device__ __forceinline__ float apply(float p, float q)
	{
		return ck_fop<float, OP>(p, q);
	}
	static __device__ __forceinline__ float avg(float p, int n) { return p / n; }
};

template <int OP> struct ck_op<double, OP> {
	static __device__ __forceinline__ double apply(double p, double q)
	{
		return ck_fop<double, OP>(p, q);
	}
	static __device__ __forceinline__ double avg(double p, int n) { return p / n; }
};

/* The 16-bit floats travel as their bits; widened to float, combined, rounded back. */
struct ck_half { uint16_t b; };
struct ck_bf16 { uint16_t b; };

static __device__ __forceinline__ float
ck_tof(ck_half h)
{
	return __half2float(__ushort_as_half(h.b));
}

static __device__ __forceinline__ float
ck_tof(ck_bf16 h)
{
	return __bfloat162float(__ushort_as_bfloat16(h.b));
}

/*
 * A NaN keeps its sign and top payload bits, quieted, as dtype_float_to_half
 * and dtype_float_to_bf16 do on the host: CUDA's conversions give one
 * canonical NaN, and the engines must agree bit for bit.
 */
static __device__ __forceinline__ void
ck_fromf(float f, ck_half *h)
{
	unsigned u = __float_as_uint(f), abs = u & 0x7fffffffu;

	if (abs > 0x7f800000u)
		h->b = (unsigned short)(((u >> 16) & 0x8000u) | 0x7e00u | ((abs >> 13) & 0x3ffu));
	else
		h->b = __half_as_ushort(__float2half_rn(f));
}

static __device__ __forceinline__ void
ck_fromf(float f, ck_bf16 *h)
{
	unsigned u = __float_as_uint(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		h->b = (unsigned short)((u >> 16) | 0x40u);
	else
		h->b = __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

template <typename H, int OP> struct ck_op16 {
	static __device__ __forceinline__ H apply(H p, H q)
	{
		H r;

		ck_fromf(ck_fop<float, OP>(ck_tof(p), ck_tof(q)), &r);
		return r;
	}
	static __device__ __forceinline__ H avg(H p, int n)
	{
		H r;

		ck_fromf(ck_tof(p) / (float)n, &r);
		return r;
	}
};

template <int OP> struct ck_op<ck_half, OP> : ck_op16<ck_half, OP> {};
template <int OP> struct ck_op<ck_bf16, OP> : ck_op16<ck_bf16, OP> {};

/* Sixteen bytes of elements, combined lane by lane. */
template <typename T, int OP> static __device__ __forceinline__ uint4
ck_vop(uint4 a, uint4 b)
{
	union { uint4 v; T e[16 / sizeof(T)]; } x, y;

	x.v = a;
	y.v = b;
#pragma unroll
	for (int k = 0; k < (int)(16 / sizeof(T)); k++)
		x.e[k] = ck_op<T, OP>::apply(x.e[k], y.e[k]);
	return x.v;
}

template <typename T, int OP> static __device__ __forceinline__ uint4
ck_vavg(uint4 a, int n)
{
	union { uint4 v; T e[16 / sizeof(T)]; } x;

	x.v = a;
#pragma unroll
	for (int k = 0; k < (int)(16 / sizeof(T)); k++)
		x.e[k] = ck_op<T, OP>::avg(x.e[k], n);
	return x.v;
}

/* Vectors first .. end - 1 of every source, CK_UNROLL at a time per thread. */
template <typename T, int OP> static __device__ void
ck_reduce_vec(const ck_args &a, size_t end)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < end;
	    i += stride * CK_UNROLL) {
		uint4 acc[CK_UNROLL], x[CK_UNROLL];

#pragma unroll
		for (int u = 0; u < CK_UNROLL; u++)
			if (i + u * stride < end)
				acc[u] = ((const uint4 *)a.src[0])[i + u * stride];
		for (int j = 1; j < a.nsrc; j++) {
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (i + u * stride < end)
					x[u] = ((const uint4 *)a.src[j])[i + u * stride];
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				acc[u] = ck_vop<T, OP>(acc[u], x[u]);
		}
		if (a.avg_n > 0) {
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				acc[u] = ck_vavg<T, OP>(acc[u], a.avg_n);
		}
		for (int d = 0; d < a.ndst; d++) {
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (i + u * stride < end)
					((uint4 *)a.dst[d])[i + u * stride] = acc[u];
		}
	}
}

/* Elements first .. count - 1, one at a time: the tail, or unaligned buffers. */
template <typename T, int OP> static __device__ void
ck_reduce_elems(const ck_args &a, size_t first)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = first + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.count;
	    i += stride) {
		T acc = ((const T *)a.src[0])[i];

		for (int j = 1; j < a.nsrc; j++)
			acc = ck_op<T, OP>::apply(acc, ((const T *)a.src[j])[i]);
		if (a.avg_n > 0)
			acc = ck_op<T, OP>::avg(acc, a.avg_n);
		for (int d = 0; d < a.ndst; d++)
			((T *)a.dst[d])[i] = acc;
	}
}

template <typename T, int OP> static __device__ void
ck_reduce(const ck_args &a)
{
	size_t nvec = a.vec ? a.count * sizeof(T) / 16 : 0;

	if (ck_barrier(a, a.seq * CK_STEPS + 1))
		return;
	ck_reduce_vec<T, OP>(a, nvec);
	ck_reduce_elems<T, OP>(a, nvec * 16 / sizeof(T));
	ck_barrier(a, a.seq * CK_STEPS + 2);
}

/*
 * Every pair's bytes, sixteen at a time where every pointer allows, then the
 * rest. Each thread copies the same vectors of every pair in turn, so that
 * a local copy (fast, HBM) goes on beside the peers' (NVLink) instead of
 * before them, leaving the links idle meanwhile.
 */
static __device__ void
ck_copy_pairs(const ck_args &a)
{
	size_t stride = (size_t)gridDim.x * blockDim.x, tid = (size_t)blockIdx.x * blockDim.x +
	    threadIdx.x, nvec = a.vec ? a.count / 16 : 0;

	for (size_t i = tid; i < nvec; i += stride * CK_UNROLL) {
		for (int p = 0; p < a.nsrc; p++) {
			const uint4 *s = (const uint4 *)a.src[p];
			uint4 *d = (uint4 *)a.dst[p], x[CK_UNROLL];

			if (a.src[p] == a.dst[p])
				continue;
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (i + u * stride < nvec)
					x[u] = s[i + u * stride];
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (i + u * stride < nvec)
					d[i + u * stride] = x[u];
		}
	}
	for (int p = 0; p < a.nsrc; p++)
		for (size_t i = nvec * 16 + tid; i < a.count && a.src[p] != a.dst[p]; i += stride)
			((unsigned char *)a.dst[p])[i] = ((const unsigned char *)a.src[p])[i];
}

extern "C" __global__ void __launch_bounds__(1024)
coll_copy(const ck_args a)
{
	if (ck_barrier(a, a.seq * CK_STEPS + 1))
		return;
	ck_copy_pairs(a);
	ck_barrier(a, a.seq * CK_STEPS + 2);
}

/* Bytes [0, n) of a copy from s to d. */
struct ck_pair {
	unsigned long long s, d;
	size_t n;
};

/* Bytes off .. off + len - 1 of a buffer of n, cut at its end. */
static __device__ ck_pair
ck_span(unsigned long long s, unsigned long long d, size_t off, size_t len, size_t n)
{
	ck_pair p = { s + off, d + off, 0 };

	if (off < n)
		p.n = n - off < len ? n - off : len;
	return p;
}

/*
 * Every pair's bytes, block b copying the b-th share of each (16-byte
 * aligned), so that block b of every rank copies the same bytes of a pair
 * whatever its pointers' alignment: a barrier of block b then orders exactly
 * what block b of a peer wrote. The pairs are interleaved, as in
 * ck_copy_pairs, so that every link is busy at once.
 */
static __device__ void
ck_copy_shares(const ck_pair *p, int np, int vec)
{
	size_t lo[CK_MAXR], hi[CK_MAXR], span = 0, step = (size_t)blockDim.x * 16;

	for (int k = 0; k < np; k++) {
		size_t share = ((p[k].n + gridDim.x - 1) / gridDim.x + 15) & ~(size_t)15;

		lo[k] = share * blockIdx.x < p[k].n ? share * blockIdx.x : p[k].n;
		hi[k] = p[k].n - lo[k] < share ? p[k].n : lo[k] + share;
		if (p[k].s == p[k].d)
			hi[k] = lo[k];
		span = hi[k] - lo[k] > span ? hi[k] - lo[k] : span;
	}
	for (size_t j = (size_t)threadIdx.x * 16; vec && j < span; j += step * CK_UNROLL) {
		for (int k = 0; k < np; k++) {
			uint4 x[CK_UNROLL];

#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (lo[k] + j + u * step + 16 <= hi[k])
					x[u] = *(const uint4 *)(p[k].s + lo[k] + j + u * step);
#pragma unroll
			for (int u = 0; u < CK_UNROLL; u++)
				if (lo[k] + j + u * step + 16 <= hi[k])
					*(uint4 *)(p[k].d + lo[k] + j + u * step) = x[u];
		}
	}
	for (int k = 0; k < np; k++) {
		size_t from = vec ? lo[k] + ((hi[k] - lo[k]) & ~(size_t)15) : lo[k];

		for (size_t i = from + threadIdx.x; i < hi[k]; i += blockDim.x)
			((unsigned char *)p[k].d)[i] = ((const unsigned char *)p[k].s)[i];
	}
}

/*
 * Broadcast among three or more ranks, pipelined: the bytes are cut into
 * steps of m slices (m: the ranks but the root), slice q of every step
 * belonging to the q-th of them. In step k each of them reads its slice of
 * step k from the root's input and the others' slices of step k - 1 from
 * their outputs, then the ranks meet. The root's memory is read once, not
 * once per rank (reading it m times held a broadcast to 3 peers to a third
 * of the link), and each rank's link carries about the bytes once each way;
 * the root copies its own input to its output alongside.
 */
extern "C" __global__ void __launch_bounds__(1024)
coll_bcast(const ck_args a)
{
	unsigned long long base = a.seq * CK_STEPS, own = a.dst[a.rank];
	size_t n = a.count, sl = a.slice, m = (size_t)a.nranks - 1;
	size_t steps = (n + m * sl - 1) / (m * sl);
	int q = a.rank == a.root ? -1 : a.rank < a.root ? a.rank : a.rank - 1;

	if (ck_barrier(a, base + 1))
		return;
	for (size_t k = 0; k <= steps; k++) {
		ck_pair p[CK_MAXR];
		int np = 0;

		if (k < steps)
			p[np++] = q < 0 ? ck_span(a.src[0], own, k * m * sl, m * sl, n) :
			    ck_span(a.src[0], own, (k * m + (size_t)q) * sl, sl, n);
		for (int j = 0; k > 0 && q >= 0 && j < a.nranks; j++) {
			size_t qj = (size_t)(j < a.root ? j : j - 1);

			if (j != a.root && j != a.rank)
				p[np++] = ck_span(a.dst[j], own, ((k - 1) * m + qj) * sl, sl, n);
		}
		ck_copy_shares(p, np, a.vec);
		if (ck_barrier(a, base + 2 + k))
			return;
	}
}

#define CK_KERNEL(name, T, OP) \
	extern "C" __global__ void __launch_bounds__(1024) \
	coll_reduce_##name(const ck_args a) { ck_reduce<T, OP>(a); }
#define CK_KERNELS(tn, T) \
	CK_KERNEL(tn##_sum, T, K_SUM) CK_KERNEL(tn##_prod, T, K_PROD) \
	CK_KERNEL(tn##_min, T, K_MIN) CK_KERNEL(tn##_max, T, K_MAX)

CK_KERNELS(i8, int8_t)
CK_KERNELS(u8, uint8_t)
CK_KERNELS(i32, int32_t)
CK_KERNELS(u32, uint32_t)
CK_KERNELS(i64, int64_t)
CK_KERNELS(u64, uint64_t)
CK_KERNELS(f16, ck_half)
CK_KERNELS(bf16, ck_bf16)
CK_KERNELS(f32, float)
CK_KERNELS(f64, double)
