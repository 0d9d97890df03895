/*
 * The status page: one fixed-layout, versioned record per rank of a
 * communicator, in shared memory, so that collstack and colltop can read what
 * every rank is doing while the job is hung, at no cost to the job.
 *
 * File:   $COLL_STATUS_DIR (default /dev/shm) / coll.<jobid %016x>.<commid %016x>.<rank>
 * Layout: struct status_page below, 1024 bytes (512 up to version 4),
 *         little-endian (x86-64, aarch64).
 *
 * Writing never takes a lock. A page has one writer at a time (a writer
 * with several threads, as the NCCL plugin has, orders them itself). The record is guarded by a generation counter
 * (a seqlock): the writer makes gen odd, stores the fields, makes gen even
 * with release ordering. A reader copies the page and retries while gen is
 * odd or changed: STATUS_READ_SPINS times at once, then yielding the CPU,
 * until STATUS_READ_RETRY_MS have passed. Then it gives up with COLL_EBUSY
 * (a writer that died mid-update leaves gen odd for good): a torn copy is
 * never returned as valid. progress_ns is updated alone, outside the
 * seqlock, on every byte of progress (a single aligned 64-bit store).
 *
 * Files: the directory is shared (/dev/shm is world-writable and sticky), so
 * a page is created with O_EXCL|O_NOFOLLOW, mode 0600: a link or another
 * user's file at the name is never followed, truncated or removed
 * (COLL_EUNSAFE, COLL_EOWNER); a plain file of our own there is a stale page
 * of an earlier run of the same rank, and is replaced. A reader trusts only
 * plain files owned by the user it expects: its own effective uid for
 * status_read, a named one for status_read_owned (root looking at a user's
 * job names that user: being root is no reason to trust anyone's page).
 *
 * Version 1 fields:
 *   magic        "CSTP" (0x50545343)
 *   version      STATUS_VERSION
 *   size         sizeof(struct status_page)
 *   gen          seqlock generation
 *   jobid,commid the job and communicator
 *   rank,nranks  this rank and the communicator size
 *   pid          process id of the rank
 *   state        enum status_state
 *   seq_started  sequence number of the last op started (0: none yet)
 *   seq_done     sequence number of the last op completed
 *   kind_started enum coll_kind of the last op started
 *   kind_done    enum coll_kind of the last op completed
 *   bytes        byte count of the last op started
 *   wait_peer    rank this rank is blocked on, -1 if none
 *   wait_dir     1: waiting to receive from wait_peer, 2: to send to it
 *   start_ns     wall time the last op started (ns since the epoch)
 *   progress_ns  wall time of the last byte moved or op boundary
 *   host         host name, NUL-terminated
 *   error        the last error, NUL-terminated (state FAILED)
 *
 * Version 2 adds, in what was reserved:
 *   retries      ops run again after a broken link (operator retry), since init
 *   retry_ns     wall time of the last retry
 *
 * Version 3 adds, for a page written by something other than coll's core
 * (readers take versions 2 and 3; a version 2 page reads as source 0):
 *   seq_queued   sequence number of the last op handed to the device but
 *                perhaps not begun (NCCL enqueues; coll's core never does: 0)
 *   kind_queued  its enum coll_kind
 *   source       STATUS_SRC_CORE (coll's core) or STATUS_SRC_NCCL (NCCL's
 *                profiler plugin, libnccl-profiler-coll.so: seq_started and
 *                seq_done are then the ops whose GPU kernel began and ended)
 *   flags        STATUS_F_KERNEL: the device reported a kernel at least once,
 *                so seq_started and seq_done are known, not merely zero
 *
 * Version 4 adds, for the op last queued, as NCCL's collective event names it
 * (readers take versions 2 to 4; what version 3 kept reserved reads as empty):
 *   dtype        its datatype ("ncclFloat32"), NUL-terminated
 *   algo         the algorithm NCCL chose for it ("Ring", "Tree", "NVLS"), or
 *                "CE" for a collective NCCL ran on the copy engines (NCCL
 *                2.29 on, profiler ABI v6): such an op is counted, queued,
 *                begun and ended as the kernel ones are, in the same seq
 *   proto        its protocol ("LL", "LL128", "Simple"); for "CE", how its
 *                ranks sync ("MC" NVLink multicast, "UC" unicast)
 *   lib_version  the collective library's version code (NCCL's 22803 for
 *                2.28.3); 0 unknown
 * The strings are whatever the page's writer put there: a reader bounds them
 * and makes them printable before they reach a terminal.
 *
 * Version 5 grows the page to 1024 bytes (readers take 512-byte pages of
 * versions 2 to 4, whose new fields read as none) and adds:
 *   retry_peer   the other rank of the link whose break led to the last
 *                retry, -1 unknown
 *   gpu_bus      the PCI address of the GPU the rank drives
 *                ("0000:3b:00.0", as CUDA names it), NUL-terminated; ""
 *                unknown. NCCL's plugin sets it: a tool on the host maps it
 *                to the GPU's index as NVML counts them (CUDA's order may
 *                differ, and CUDA_VISIBLE_DEVICES renumbers)
 *   op_kind      each ring slot's op, as enum coll_kind (0 unknown): the
 *                waits of a rooted op (broadcast, reduce, gather, scatter)
 *                differ by design, so a tool compares only the others
 *   ops          the last STATUS_RING ops, each at ops[seq % STATUS_RING]:
 *                its seq (0: the slot is unused), and the wall times (ns
 *                since the epoch, 0 not yet) it was queued (NCCL: enqueued;
 *                coll's core: 0), began (coll's core: status_begin; NCCL:
 *                its kernel began) and ended. A tool that samples now and
 *                then sees when each rank came to each recent op, so it can
 *                name the rank that holds a job up without being in the job:
 *                end - begin on one rank is how long it waited for the
 *                others, a difference of one clock with itself, so hosts'
 *                clocks need not agree.
 * A reader returns the ring as the page holds it: a slot whose seq is not
 * its index's, times out of order or far off, are the writer's to make, and
 * every user of ops checks them (slot seq % STATUS_RING == index, begin <=
 * end, a plausible span) before it compares ranks by them.
 */
#ifndef COLL_STATUS_H
#define COLL_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STATUS_MAGIC 0x50545343u
#define STATUS_VERSION 5
#define STATUS_VERSION_MIN 2	/* the oldest a reader takes */
#define STATUS_PAGE_SIZE 1024
#define STATUS_PAGE_SIZE_V4 512	/* versions 2 to 4 */
#define STATUS_RING 16		/* ops kept in a page */
#define STATUS_READ_SPINS 100		/* immediate retries of a reader */
#define STATUS_READ_RETRY_MS 100	/* then yielding retries, for this long */
#define STATUS_SCAN_MS 1000		/* reading a directory's pages, at most */
#define STATUS_SCAN_HARD_MS 10000	/* a scan, however many names it passes over */

enum status_source {
	STATUS_SRC_CORE = 0,	/* coll's own communicator */
	STATUS_SRC_NCCL = 1,	/* an NCCL communicator, through the profiler plugin */
};

#define STATUS_F_KERNEL 0x1u

enum status_state {
	STATUS_INIT = 1,	/* joining the communicator */
	STATUS_IDLE = 2,	/* between ops */
	STATUS_RUNNING = 3,	/* inside op seq_started */
	STATUS_FAILED = 4,	/* an op or init failed, see error */
	STATUS_ABORTED = 5,	/* comm_abort was called */
};

struct status_page {
	uint32_t magic;
	uint32_t version;
	uint32_t size;
	uint32_t gen;
	uint64_t jobid;
	uint64_t commid;
	int32_t rank;
	int32_t nranks;
	int32_t pid;
	int32_t state;
	uint64_t seq_started;
	uint64_t seq_done;
	uint32_t kind_started;
	uint32_t kind_done;
	uint64_t bytes;
	int32_t wait_peer;
	int32_t wait_dir;
	uint64_t start_ns;
	uint64_t progress_ns;
	char host[64];
	char error[192];
	uint64_t retries;
	uint64_t retry_ns;
	uint64_t seq_queued;
	uint32_t kind_queued;
	uint32_t source;
	uint32_t flags;
	uint32_t pad;
	char dtype[16];
	char algo[16];
	char proto[16];
	uint32_t lib_version;
	uint32_t pad2;
	/* version 5 */
	int32_t retry_peer;
	uint32_t pad3;
	char gpu_bus[16];
	uint8_t op_kind[STATUS_RING];
	uint8_t reserved[16];
	struct status_op {
		uint64_t seq, queued_ns, begin_ns, end_ns;
	} ops[STATUS_RING];
};

_Static_assert(sizeof(struct status_page) == STATUS_PAGE_SIZE, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, seq_started) == 48, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, host) == 104, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, retries) == 360, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, seq_queued) == 376, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, dtype) == 400, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, retry_peer) == 456, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, gpu_bus) == 464, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, op_kind) == 480, "status page layout is fixed");
_Static_assert(offsetof(struct status_page, ops) == STATUS_PAGE_SIZE_V4, "status page layout is fixed");

struct status {
	struct status_page *page;
	char path[256];
};

/* Directory of the pages: $COLL_STATUS_DIR or /dev/shm. */
const char *status_dir(void);
/* Create this rank's page; COLL_EUNSAFE or COLL_EOWNER if the name is taken (see above). */
int status_open(struct status *st, uint64_t jobid, uint64_t commid, int rank, int nranks,
    const char *host);
/* Unmap and remove the page. */
void status_close(struct status *st);
/* Seqlock-guarded updates. */
void status_begin(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes);
void status_end(struct status *st, uint64_t seq, uint32_t kind);
void status_set_state(struct status *st, int state, const char *error);
/* The PCI address of the rank's GPU (gpu_bus above); set once, after status_open. */
void status_set_gpu(struct status *st, const char *bus);
/* Who writes the page (enum status_source); set once, after status_open. */
void status_set_source(struct status *st, uint32_t source);
/* An op handed to the device: queued, not yet begun (state RUNNING until it ends). */
void status_queue(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes);
/*
 * The same, with what the library says of the op: its datatype, algorithm
 * and protocol (NULL: unknown), and the library's version code.
 */
void status_queue_op(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes,
    const char *dtype, const char *algo, const char *proto, uint32_t lib_version);
/* The device began op seq (its kernel runs): seq_started, start_ns, STATUS_F_KERNEL. */
void status_kernel_begin(struct status *st, uint64_t seq, uint32_t kind);
/* The device finished op seq: seq_done; IDLE when nothing queued is left. */
void status_kernel_end(struct status *st, uint64_t seq, uint32_t kind);
/* The op under way was run again: retries is the count since init. */
void status_retry(struct status *st, uint64_t retries);
/* The same, naming the other rank of the link that broke (-1 unknown). */
void status_retry_peer(struct status *st, uint64_t retries, int peer);
/* Lock-free single-field updates on the hot path. */
void status_wait(struct status *st, int peer, int dir);
void status_progress(struct status *st);
/*
 * Read a consistent copy of a page file of this user: COLL_EPROTO if it is not
 * a status page, COLL_EOWNER if another user owns it, COLL_EUNSAFE if it is a
 * link or not a plain file, COLL_EBUSY if it stayed mid-update past the retry
 * limit (*out then holds the last, possibly torn, copy: do not trust it).
 */
int status_read(const char *path, struct status_page *out);
/* The same for a page that must be owned by uid owner. */
int status_read_owned(const char *path, uid_t owner, struct status_page *out);
/*
 * Every page in dir (NULL or "": status_dir()), each read as its owner's
 * (status_read_owned, so a reader running as root sees every user's): fn is
 * called on each that reads whole, and stops the scan by returning nonzero.
 * The count of pages given to fn. Anyone may write pages into a shared
 * directory, so one scan is bounded: a page found mid-update is retried
 * STATUS_READ_SPINS times at once and then passed over (a page whose gen a
 * stranger left odd would otherwise cost STATUS_READ_RETRY_MS each), and the
 * scan ends once reading pages has taken STATUS_SCAN_MS, or after
 * STATUS_SCAN_HARD_MS in all, whatever is left.
 */
int status_scan(const char *dir, int (*fn)(const struct status_page *pg, uid_t owner,
    void *arg), void *arg);
/*
 * The same for the pages of one owner only: other users' files are passed
 * over by their owner before any is opened, so however many a stranger
 * leaves in a shared directory they cannot use up the scan's time.
 */
int status_scan_of(const char *dir, uid_t only, int (*fn)(const struct status_page *pg,
    uid_t owner, void *arg), void *arg);
/* Remove every page of a job that is ours (a launcher cleaning up after killed ranks); the count. */
int status_remove_job(uint64_t jobid);

#endif
