#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "status.h"

const char *
status_dir(void)
{
	const char *d = getenv("COLL_STATUS_DIR");

	return (d != NULL && *d != '\0') ? d : "/dev/shm";
}

static void
status_write_begin(struct status_page *p)
{
	__atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* now: the wall clock read for the update (one read serves its fields and progress_ns). */
static void
status_write_end_at(struct status_page *p, uint64_t now)
{
	__atomic_store_n(&p->progress_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
}

static void
status_write_end(struct status_page *p)
{
	status_write_end_at(p, clock_wall_ns());
}

/* The ring's slot of op seq, or NULL when a later op has taken it (or none had it yet). */
static struct status_op *
status_slot(struct status_page *p, uint64_t seq)
{
	struct status_op *o = &p->ops[seq % STATUS_RING];

	return o->seq == seq ? o : NULL;
}

/* Op seq takes its slot afresh: whatever op seq - STATUS_RING left there is gone. */
static void
status_slot_start(struct status_page *p, uint64_t seq, uint32_t kind, uint64_t queued_ns,
    uint64_t begin_ns)
{
	p->ops[seq % STATUS_RING] = (struct status_op){ seq, queued_ns, begin_ns, 0 };
	p->op_kind[seq % STATUS_RING] = kind < 256 ? (uint8_t)kind : 0;
}

/* A page file we may use: a plain file (no link, fifo, device) owned by uid. */
static int
status_check(const struct stat *sb, uid_t uid)
{
	if (!S_ISREG(sb->st_mode))
		return COLL_EUNSAFE;
	return sb->st_uid == uid ? COLL_OK : COLL_EOWNER;
}

/*
 * Create the page file. The directory is /dev/shm by default, where anyone
 * may create files: O_EXCL|O_NOFOLLOW never follows a link planted at the
 * name and never opens (or truncates) a file someone else made. A plain file
 * of our own at the name can only be a stale page of an earlier run of this
 * rank (the name holds the job's random 64-bit id), so it is removed and the
 * page created afresh, once; anything else there (another user's file, a
 * link, a fifo) is left alone and refused. Removing is safe in a sticky
 * directory such as /dev/shm: no one else can swap our file after lstat.
 */
static int
status_create(const char *path, int *fdp)
{
	struct stat sb;
	int r;

	for (int tries = 0; tries < 2; tries++) {
		*fdp = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (*fdp >= 0)
			return COLL_OK;
		if (errno != EEXIST)
			return COLL_ESYS;
		if (lstat(path, &sb) == -1)
			continue;	/* gone meanwhile: try again */
		if ((r = status_check(&sb, geteuid())) != COLL_OK)
			return r;
		if (tries == 0 && unlink(path) == -1 && errno != ENOENT)
			return COLL_ESYS;
	}
	errno = EEXIST;
	return COLL_ESYS;
}

int
status_open(struct status *st, uint64_t jobid, uint64_t commid, int rank, int nranks,
    const char *host)
{
	struct status_page *p;
	int fd, r;

	st->page = NULL;
	snprintf(st->path, sizeof st->path, "%s/coll.%016" PRIx64 ".%016" PRIx64 ".%d",
	    status_dir(), jobid, commid, rank);
	if ((r = status_create(st->path, &fd)) != COLL_OK)
		return r;
	if (ftruncate(fd, STATUS_PAGE_SIZE) == -1) {
		close(fd);
		unlink(st->path);
		return COLL_ESYS;
	}
	p = mmap(NULL, STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(st->path);
		return COLL_ESYS;
	}
	status_write_begin(p);
	p->version = STATUS_VERSION;
	p->size = STATUS_PAGE_SIZE;
	p->jobid = jobid;
	p->commid = commid;
	p->rank = rank;
	p->nranks = nranks;
	p->pid = (int32_t)getpid();
	p->state = STATUS_INIT;
	p->wait_peer = -1;
	p->retry_peer = -1;
	snprintf(p->host, sizeof p->host, "%s", host);
	p->magic = STATUS_MAGIC;
	status_write_end(p);
	st->page = p;
	return COLL_OK;
}

void
status_close(struct status *st)
{
	if (st->page == NULL)
		return;
	munmap(st->page, STATUS_PAGE_SIZE);
	unlink(st->path);
	st->page = NULL;
}

void
status_begin(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes)
{
	struct status_page *p = st->page;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->seq_started = seq;
	p->kind_started = kind;
	p->bytes = bytes;
	p->state = STATUS_RUNNING;
	p->wait_peer = -1;
	p->wait_dir = 0;
	p->start_ns = now;
	status_slot_start(p, seq, kind, 0, now);
	status_write_end_at(p, now);
}

void
status_end(struct status *st, uint64_t seq, uint32_t kind)
{
	struct status_page *p = st->page;
	struct status_op *o;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->seq_done = seq;
	p->kind_done = kind;
	p->state = STATUS_IDLE;
	p->wait_peer = -1;
	p->wait_dir = 0;
	if ((o = status_slot(p, seq)) != NULL)
		o->end_ns = now;
	status_write_end_at(p, now);
}

void
status_set_source(struct status *st, uint32_t source)
{
	struct status_page *p = st->page;

	if (p == NULL)
		return;
	status_write_begin(p);
	p->source = source;
	status_write_end(p);
}

void
status_set_gpu(struct status *st, const char *bus)
{
	struct status_page *p = st->page;

	if (p == NULL || bus == NULL)
		return;
	status_write_begin(p);
	snprintf(p->gpu_bus, sizeof p->gpu_bus, "%s", bus);
	status_write_end(p);
}

void
status_queue(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes)
{
	status_queue_op(st, seq, kind, bytes, NULL, NULL, NULL, 0);
}

void
status_queue_op(struct status *st, uint64_t seq, uint32_t kind, uint64_t bytes,
    const char *dtype, const char *algo, const char *proto, uint32_t lib_version)
{
	struct status_page *p = st->page;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->seq_queued = seq;
	p->kind_queued = kind;
	p->bytes = bytes;
	p->state = STATUS_RUNNING;
	snprintf(p->dtype, sizeof p->dtype, "%s", dtype != NULL ? dtype : "");
	snprintf(p->algo, sizeof p->algo, "%s", algo != NULL ? algo : "");
	snprintf(p->proto, sizeof p->proto, "%s", proto != NULL ? proto : "");
	p->lib_version = lib_version;
	status_slot_start(p, seq, kind, now, 0);
	status_write_end_at(p, now);
}

/*
 * A device runs queued ops in order, but its reports of them may come late
 * or out of order (NCCL's proxy thread polls the kernel's counters): the
 * sequence numbers only ever move forward. In the ring an op keeps the first
 * begin reported for it; one queued STATUS_RING or more ops ago has lost its
 * slot to a later op, and its times are not kept.
 */
void
status_kernel_begin(struct status *st, uint64_t seq, uint32_t kind)
{
	struct status_page *p = st->page;
	struct status_op *o;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->flags |= STATUS_F_KERNEL;
	if (seq > p->seq_started) {
		p->seq_started = seq;
		p->kind_started = kind;
		p->start_ns = now;
	}
	if ((o = status_slot(p, seq)) != NULL && o->begin_ns == 0)
		o->begin_ns = now;
	status_write_end_at(p, now);
}

void
status_kernel_end(struct status *st, uint64_t seq, uint32_t kind)
{
	struct status_page *p = st->page;
	struct status_op *o;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->flags |= STATUS_F_KERNEL;
	if (seq > p->seq_done) {
		p->seq_done = seq;
		p->kind_done = kind;
	}
	if (p->seq_done >= p->seq_queued && p->state == STATUS_RUNNING)
		p->state = STATUS_IDLE;
	if ((o = status_slot(p, seq)) != NULL)
		o->end_ns = now;
	status_write_end_at(p, now);
}

void
status_retry(struct status *st, uint64_t retries)
{
	status_retry_peer(st, retries, -1);
}

void
status_retry_peer(struct status *st, uint64_t retries, int peer)
{
	struct status_page *p = st->page;
	uint64_t now;

	if (p == NULL)
		return;
	now = clock_wall_ns();
	status_write_begin(p);
	p->retries = retries;
	p->retry_ns = now;
	p->retry_peer = peer;
	status_write_end_at(p, now);
}

void
status_set_state(struct status *st, int state, const char *error)
{
	struct status_page *p = st->page;

	if (p == NULL)
		return;
	status_write_begin(p);
	p->state = state;
	if (error != NULL)
		snprintf(p->error, sizeof p->error, "%s", error);
	status_write_end(p);
}

void
status_wait(struct status *st, int peer, int dir)
{
	struct status_page *p = st->page;

	if (p == NULL || (p->wait_peer == peer && p->wait_dir == dir))
		return;
	status_write_begin(p);
	p->wait_peer = peer;
	p->wait_dir = dir;
	status_write_end(p);
}

void
status_progress(struct status *st)
{
	if (st->page != NULL)
		__atomic_store_n(&st->page->progress_ns, clock_wall_ns(), __ATOMIC_RELAXED);
}

/*
 * Copy a consistent snapshot by pread(2), never through a mapping: the file
 * may belong to a user who can truncate it at any moment, and a copy from a
 * mapping past the new end kills the reader with SIGBUS. A read past the end
 * is short, and refused. The seqlock's order holds across the calls: gen is
 * read alone first, then the page, then gen again; each read is a system
 * call, a full barrier for the data it copies. An update is a few stores, so
 * a reader that sees gen odd or changed first retries at once, then yields
 * the CPU (the writer may have been preempted mid-update). A writer that died
 * mid-update leaves gen odd for good: after STATUS_READ_RETRY_MS the reader
 * gives up. A page is read whole up to STATUS_PAGE_SIZE: an older, 512-byte
 * page reads short, and *got says how much came (at least STATUS_PAGE_SIZE_V4).
 */
static int
status_gen_read(int fd, uint32_t *gen)
{
	return pread(fd, gen, sizeof *gen, offsetof(struct status_page, gen)) ==
	    (ssize_t)sizeof *gen ? COLL_OK : COLL_EPROTO;
}

static int
status_copy(int fd, struct status_page *out, size_t *got, int patient)
{
	uint64_t give_up = 0;
	uint32_t g1, g2;
	ssize_t n;

	for (unsigned tries = 0;; tries++) {
		if (status_gen_read(fd, &g1) != COLL_OK ||
		    (n = pread(fd, out, sizeof *out, 0)) < STATUS_PAGE_SIZE_V4 ||
		    status_gen_read(fd, &g2) != COLL_OK)
			return COLL_EPROTO;	/* cut short under us: not a page */
		*got = (size_t)n;
		if (g1 == g2 && (g1 & 1) == 0 && out->gen == g1)
			return COLL_OK;
		if (tries < STATUS_READ_SPINS)
			continue;
		if (!patient)
			return COLL_EBUSY;
		if (give_up == 0)
			give_up = clock_now_ms() + STATUS_READ_RETRY_MS;
		else if (clock_now_ms() >= give_up)
			return COLL_EBUSY;
		sched_yield();
	}
}

/* Open a page for reading: no link followed, no fifo blocked on, owner checked. */
static int
status_open_read(const char *path, uid_t owner, int *fdp)
{
	struct stat sb;
	int r;

	*fdp = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (*fdp == -1)
		return errno == ELOOP ? COLL_EUNSAFE : COLL_ESYS;
	r = fstat(*fdp, &sb) == -1 ? COLL_ESYS : status_check(&sb, owner);
	/* A page being created is empty for a moment; none is shorter than version 4's. */
	if (r == COLL_OK && sb.st_size < STATUS_PAGE_SIZE_V4)
		r = COLL_EPROTO;
	if (r != COLL_OK) {
		close(*fdp);
		*fdp = -1;
	}
	return r;
}

/*
 * The size a page of this version has: versions 2 to 4 are 512 bytes, 5 is
 * 1024. A page whose size field says otherwise, or whose file is shorter
 * than its size, is not a page (a reader never takes a ring it did not read).
 */
static int
status_size_check(const struct status_page *p, size_t got)
{
	uint32_t want = p->version < 5 ? STATUS_PAGE_SIZE_V4 : STATUS_PAGE_SIZE;

	return p->size == want && got >= want ? COLL_OK : COLL_EPROTO;
}

/*
 * What an older version kept reserved, or did not have, reads as none. The
 * ring's values are the writer's, as anything in a page: a reader of ops
 * bounds them (a slot's seq need not be its index's, nor its times in order).
 */
static void
status_upgrade(struct status_page *out)
{
	if (out->version < 3) {
		/* What version 2 kept reserved reads as zero: coll's core, nothing queued. */
		out->seq_queued = 0;
		out->kind_queued = 0;
		out->source = STATUS_SRC_CORE;
		out->flags = 0;
	}
	if (out->version < 4) {
		/* What version 3 kept reserved reads as empty: nothing said of the op. */
		memset(out->dtype, 0, offsetof(struct status_page, reserved) -
		    offsetof(struct status_page, dtype));
	}
	if (out->version < 5) {
		/* Past a 512-byte page: not read, or another file's bytes beyond it. */
		memset(out->reserved, 0, sizeof *out - offsetof(struct status_page, reserved));
		out->retry_peer = -1;
		out->pad3 = 0;
	}
}

static int
status_read_how(const char *path, uid_t owner, struct status_page *out, int patient)
{
	size_t got = 0;
	int fd, r;

	if ((r = status_open_read(path, owner, &fd)) != COLL_OK)
		return r;
	r = status_copy(fd, out, &got, patient);
	close(fd);
	/* A short copy leaves the tail unread: never hand back stale bytes. */
	if (got < sizeof *out)
		memset((char *)out + got, 0, sizeof *out - got);
	out->host[sizeof out->host - 1] = '\0';
	out->error[sizeof out->error - 1] = '\0';
	out->dtype[sizeof out->dtype - 1] = '\0';
	out->algo[sizeof out->algo - 1] = '\0';
	out->proto[sizeof out->proto - 1] = '\0';
	if (r != COLL_OK)
		return r;
	if (out->magic != STATUS_MAGIC)
		return COLL_EPROTO;
	if (out->version < STATUS_VERSION_MIN || out->version > STATUS_VERSION)
		return COLL_EVERSION;
	if ((r = status_size_check(out, got)) != COLL_OK)
		return r;
	status_upgrade(out);
	return COLL_OK;
}

int
status_read_owned(const char *path, uid_t owner, struct status_page *out)
{
	return status_read_how(path, owner, out, 1);
}

int
status_read(const char *path, struct status_page *out)
{
	return status_read_owned(path, geteuid(), out);
}

int
status_scan(const char *dir, int (*fn)(const struct status_page *pg, uid_t owner, void *arg),
    void *arg)
{
	return status_scan_of(dir, (uid_t)-1, fn, arg);
}

int
status_scan_of(const char *dir, uid_t only, int (*fn)(const struct status_page *pg,
    uid_t owner, void *arg), void *arg)
{
	uint64_t start = clock_now_ms(), spent = 0;
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (dir == NULL || dir[0] == '\0')
		dir = status_dir();
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat sb;
		struct status_page pg;
		uint64_t t0;
		int rc;

		if (strncmp(de->d_name, "coll.", 5) != 0)
			continue;
		/*
		 * The time limit counts the pages read, not the names passed over:
		 * a stranger's flood of files would otherwise use it up before
		 * the owner's pages came (they are skipped by their owner, a
		 * stat each); only a flood past STATUS_SCAN_HARD_MS ends it.
		 */
		t0 = clock_now_ms();
		if (spent >= STATUS_SCAN_MS || t0 - start >= STATUS_SCAN_HARD_MS)
			break;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
		    (only != (uid_t)-1 && sb.st_uid != only))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		rc = status_read_how(path, sb.st_uid, &pg, 0);
		spent += clock_now_ms() - t0;
		if (rc != COLL_OK)
			continue;
		n++;
		if (fn(&pg, sb.st_uid, arg) != 0)
			break;
	}
	closedir(d);
	return n;
}

int
status_remove_job(uint64_t jobid)
{
	char prefix[64], path[512];
	struct stat sb;
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(prefix, sizeof prefix, "coll.%016" PRIx64 ".", jobid);
	if ((d = opendir(status_dir())) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", status_dir(), de->d_name);
		/* Root may unlink anything in /dev/shm: remove only our own pages. */
		if (lstat(path, &sb) == 0 && status_check(&sb, geteuid()) == COLL_OK &&
		    unlink(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}
