/*
 * Node facts: what a host is (kernel, CPUs, memory, limits), what it runs
 * (NVIDIA driver, CUDA, NCCL), what it has (GPUs through NVML, RDMA ports
 * through libibverbs and sysfs, network interfaces, PCIe links and ACS) and
 * how it is set up (NCCL_*, CUDA_*, ... variables, nccl.conf), as flat
 * "key = value" pairs, so that hosts are compared key by key.
 *
 * Keys are dotted paths ("limits.memlock", "rdma.mlx5_0.1.state"). A fact
 * that cannot be read says so in its value ("skipped: no NVML (...)"), never
 * a made-up value. Optional libraries (NVML, CUDA, NCCL, libibverbs) are
 * loaded with dlopen, so nothing here needs them to build or run.
 *
 * The readers take their files under a configurable root (COLL_FS_ROOT: a
 * directory standing for "/", plat_file.h), so tests drive them with fixture
 * trees.
 */
#ifndef COLL_FACTS_H
#define COLL_FACTS_H

#include <stddef.h>

#define FACTS_KEY_MAX 128
#define FACTS_VAL_MAX 1024
#define FACTS_MAX 8192		/* facts one host may send (facts_unpack's bound) */
#define FACTS_SKIP "skipped: "

struct fact {
	char *key;
	char *val;
};

struct facts {
	int n, cap;
	struct fact *v;
};

/* Where the readers look; NULL members take their defaults (/, $HOME, /dev/shm). */
struct facts_roots {
	const char *root;	/* stands for "/": /sys, /proc and /etc are read under it */
	const char *home;	/* for ~/.nccl.conf */
	const char *shm;	/* /dev/shm */
	double since;		/* the kernel log from this wall time (epoch s) on; 0: since boot */
};

void facts_init(struct facts *f);
void facts_free(struct facts *f);
/* Add (or replace) key; control characters in the value become '?'. */
void facts_add(struct facts *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 if facts_add would keep s as it is (no controls, valid UTF-8). */
int facts_is_clean(const char *s);
/* Add key without looking for it first: for a caller that knows it is new. */
void facts_append(struct facts *f, const char *key, const char *val);
/* key = "skipped: <why>". */
void facts_skip(struct facts *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *facts_get(const struct facts *f, const char *key);
int facts_is_skipped(const char *val);
/* Sort by key (for output and comparison). */
void facts_sort(struct facts *f);

/* "key\tvalue\n" lines; the receiving side checks every length. */
char *facts_pack(const struct facts *f, size_t *len);
/* COLL_OK or COLL_EPROTO (malformed, too long, too many); f keeps what parsed. */
int facts_unpack(struct facts *f, const char *buf, size_t len);

/* Roots from COLL_FS_ROOT, HOME, COLL_SHM_DIR. */
void facts_roots_env(struct facts_roots *r);
/* Every reader below, in order. */
void facts_collect(struct facts *f, const struct facts_roots *r, char *const *envp);

/* The readers, one per source. */
void facts_read_host(struct facts *f, const struct facts_roots *r);
void facts_read_limits(struct facts *f, const struct facts_roots *r);
void facts_read_env(struct facts *f, const struct facts_roots *r, char *const *envp);
void facts_read_pci(struct facts *f, const struct facts_roots *r);
void facts_read_net(struct facts *f, const struct facts_roots *r);
void facts_read_rdma(struct facts *f, const struct facts_roots *r);
void facts_read_gpu(struct facts *f, const struct facts_roots *r);
/* The kernel log's Xid, SXid, AER and NIC events (facts_kmsg.c): "kmsg.*". */
void facts_read_kmsg(struct facts *f, const struct facts_roots *r);
/* AER, RDMA port and RoCE congestion counters, GID tables (facts_counters.c): "ctr.*". */
void facts_read_counters(struct facts *f, const struct facts_roots *r);

#endif
