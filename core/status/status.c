#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
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

static void
status_write_end(struct status_page *p)
{
	__atomic_store_n(&p->progress_ns, clock_wall_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
}

int
status_open(struct status *st, uint64_t jobid, uint64_t commid, int rank, int nranks,
    const char *host)
{
	struct status_page *p;
	int fd;

	st->page = NULL;
	snprintf(st->path, sizeof st->path, "%s/coll.%016" PRIx64 ".%016" PRIx64 ".%d",
	    status_dir(), jobid, commid, rank);
	fd = open(st->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		return COLL_ESYS;
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

	if (p == NULL)
		return;
	status_write_begin(p);
	p->seq_started = seq;
	p->kind_started = kind;
	p->bytes = bytes;
	p->state = STATUS_RUNNING;
	p->wait_peer = -1;
	p->wait_dir = 0;
	p->start_ns = clock_wall_ns();
	status_write_end(p);
}

void
status_end(struct status *st, uint64_t seq, uint32_t kind)
{
	struct status_page *p = st->page;

	if (p == NULL)
		return;
	status_write_begin(p);
	p->seq_done = seq;
	p->kind_done = kind;
	p->state = STATUS_IDLE;
	p->wait_peer = -1;
	p->wait_dir = 0;
	status_write_end(p);
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

int
status_read(const char *path, struct status_page *out)
{
	struct status_page *p;
	struct stat sb;
	uint32_t g1, g2;
	int fd, tries;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return COLL_ESYS;
	/* A page being created is empty for a moment: mapping it would SIGBUS. */
	if (fstat(fd, &sb) == -1 || sb.st_size < STATUS_PAGE_SIZE) {
		close(fd);
		return COLL_EPROTO;
	}
	p = mmap(NULL, STATUS_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return COLL_ESYS;
	/* A writer that died mid-update leaves gen odd: take the last copy after a while. */
	for (tries = 0; tries < 1000; tries++) {
		g1 = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
		memcpy(out, p, sizeof *out);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		g2 = __atomic_load_n(&p->gen, __ATOMIC_RELAXED);
		if (g1 == g2 && (g1 & 1) == 0)
			break;
	}
	munmap(p, STATUS_PAGE_SIZE);
	out->host[sizeof out->host - 1] = '\0';
	out->error[sizeof out->error - 1] = '\0';
	if (out->magic != STATUS_MAGIC || out->size != STATUS_PAGE_SIZE)
		return COLL_EPROTO;
	return out->version == STATUS_VERSION ? COLL_OK : COLL_EVERSION;
}

int
status_remove_job(uint64_t jobid)
{
	char prefix[64], path[512];
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
		if (unlink(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}
