/*
 * Status pages, in a private directory (COLL_STATUS_DIR set to a mkdtemp dir):
 * what the writer stores is what a reader gets back, files that are not pages
 * are refused, and the pages are removed by status_close and status_remove_job.
 * The seqlock never hands out a torn copy, and a page left mid-update (gen
 * odd, as a writer that died there leaves it) makes the reader give up with
 * COLL_EBUSY after the retry limit instead of hanging or trusting it. The
 * file rules: links and other users' files at a page's name are neither
 * followed nor touched, readers refuse pages of another owner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "kind.h"
#include "status.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static char dir[64];

static int
group_setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/coll-test-status.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	return setenv("COLL_STATUS_DIR", dir, 1);
}

/* Count the files in the directory, removing them when asked. */
static int
dir_files(int remove)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (remove) {
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
	}
	closedir(d);
	return n;
}

static int
group_teardown(void **state)
{
	dir_files(1);
	return rmdir(dir);
}

static int
exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static void
write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void
test_status_dir(void **state)
{
	assert_string_equal(status_dir(), dir);
}

/* A fresh page holds the identity it was opened with, in state INIT. */
static void
test_status_open_fields(void **state)
{
	static const char long_host[] =
	    "a-very-long-host-name-that-does-not-fit-in-the-sixty-four-bytes-of-the-page";
	static const struct {
		uint64_t jobid, commid;
		int rank, nranks;
		const char *host;
		const char *want_host;
		const char *name;	/* file name in the directory */
	} rows[] = {
		{ 0x0123456789abcdefull, 1, 0, 1, "node-0", "node-0",
		  "coll.0123456789abcdef.0000000000000001.0" },
		{ 0xffffffffffffffffull, 0xfedcba9876543210ull, 7, 8, "n7", "n7",
		  "coll.ffffffffffffffff.fedcba9876543210.7" },
		{ 42, 0, 1023, 1024, "", "", "coll.000000000000002a.0000000000000000.1023" },
		{ 1, 2, 3, 4, long_host,
		  "a-very-long-host-name-that-does-not-fit-in-the-sixty-four-bytes",
		  "coll.0000000000000001.0000000000000002.3" },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct status st;
		struct status_page pg;
		char path[512];
		uint64_t before = clock_wall_ns();

		assert_int_equal(status_open(&st, rows[i].jobid, rows[i].commid, rows[i].rank,
		    rows[i].nranks, rows[i].host), COLL_OK);
		snprintf(path, sizeof path, "%s/%s", dir, rows[i].name);
		assert_string_equal(st.path, path);
		assert_true(exists(path));
		assert_int_equal(status_read(path, &pg), COLL_OK);
		assert_int_equal(pg.magic, STATUS_MAGIC);
		assert_int_equal(pg.version, STATUS_VERSION);
		assert_int_equal(pg.size, STATUS_PAGE_SIZE);
		assert_int_equal(pg.gen % 2, 0);
		assert_true(pg.jobid == rows[i].jobid);
		assert_true(pg.commid == rows[i].commid);
		assert_int_equal(pg.rank, rows[i].rank);
		assert_int_equal(pg.nranks, rows[i].nranks);
		assert_int_equal(pg.pid, getpid());
		assert_int_equal(pg.state, STATUS_INIT);
		assert_true(pg.seq_started == 0 && pg.seq_done == 0);
		assert_int_equal(pg.wait_peer, -1);
		assert_int_equal(pg.wait_dir, 0);
		assert_int_equal(pg.retry_peer, -1);
		assert_true(pg.ops[0].seq == 0 && pg.ops[STATUS_RING - 1].seq == 0);
		assert_true(pg.progress_ns >= before);
		assert_string_equal(pg.host, rows[i].want_host);
		assert_string_equal(pg.error, "");
		status_close(&st);
	}
	assert_int_equal(dir_files(0), 0);
}

enum action { BEGIN, END, WAIT, SET_STATE, PROGRESS };

/* A sequence of updates, and the fields a reader sees after each. */
static const struct {
	enum action act;
	uint64_t seq;		/* BEGIN, END */
	uint32_t kind;		/* BEGIN, END */
	uint64_t bytes;		/* BEGIN */
	int peer, dir;		/* WAIT */
	int state;		/* SET_STATE */
	const char *error;	/* SET_STATE */
	struct {
		int state;
		uint64_t seq_started, seq_done;
		uint32_t kind_started, kind_done;
		uint64_t bytes;
		int wait_peer, wait_dir;
		const char *error;
	} want;
} update_rows[] = {
	{ BEGIN, 1, 2, 4096, 0, 0, 0, NULL, { STATUS_RUNNING, 1, 0, 2, 0, 4096, -1, 0, "" } },
	{ WAIT, 0, 0, 0, 5, 1, 0, NULL, { STATUS_RUNNING, 1, 0, 2, 0, 4096, 5, 1, "" } },
	{ WAIT, 0, 0, 0, 5, 2, 0, NULL, { STATUS_RUNNING, 1, 0, 2, 0, 4096, 5, 2, "" } },
	{ PROGRESS, 0, 0, 0, 0, 0, 0, NULL, { STATUS_RUNNING, 1, 0, 2, 0, 4096, 5, 2, "" } },
	{ END, 1, 2, 0, 0, 0, 0, NULL, { STATUS_IDLE, 1, 1, 2, 2, 4096, -1, 0, "" } },
	{ BEGIN, 2, 7, 1ull << 40, 0, 0, 0, NULL,
	  { STATUS_RUNNING, 2, 1, 7, 2, 1ull << 40, -1, 0, "" } },
	{ WAIT, 0, 0, 0, 0, 2, 0, NULL, { STATUS_RUNNING, 2, 1, 7, 2, 1ull << 40, 0, 2, "" } },
	{ SET_STATE, 0, 0, 0, 0, 0, STATUS_FAILED, "rank 0 closed the connection",
	  { STATUS_FAILED, 2, 1, 7, 2, 1ull << 40, 0, 2, "rank 0 closed the connection" } },
	{ SET_STATE, 0, 0, 0, 0, 0, STATUS_ABORTED, NULL,
	  { STATUS_ABORTED, 2, 1, 7, 2, 1ull << 40, 0, 2, "rank 0 closed the connection" } },
	{ END, 0xffffffffffffffffull, 0xffffffffu, 0, 0, 0, 0, NULL,
	  { STATUS_IDLE, 2, 0xffffffffffffffffull, 7, 0xffffffffu, 1ull << 40, -1, 0,
	    "rank 0 closed the connection" } },
};

static void
apply_update(struct status *st, size_t i)
{
	switch (update_rows[i].act) {
	case BEGIN:
		status_begin(st, update_rows[i].seq, update_rows[i].kind, update_rows[i].bytes);
		break;
	case END:
		status_end(st, update_rows[i].seq, update_rows[i].kind);
		break;
	case WAIT:
		status_wait(st, update_rows[i].peer, update_rows[i].dir);
		break;
	case SET_STATE:
		status_set_state(st, update_rows[i].state, update_rows[i].error);
		break;
	case PROGRESS:
		status_progress(st);
		break;
	}
}

static void
test_status_updates(void **state)
{
	struct status st;
	struct status_page pg;
	uint32_t gen;

	assert_int_equal(status_open(&st, 0xabcull, 0xdefull, 2, 4, "host"), COLL_OK);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	gen = pg.gen;
	for (size_t i = 0; i < ARRAY_LEN(update_rows); i++) {
		uint64_t before = clock_wall_ns(), start_ns = pg.start_ns;

		apply_update(&st, i);
		assert_int_equal(status_read(st.path, &pg), COLL_OK);
		assert_int_equal(pg.state, update_rows[i].want.state);
		assert_true(pg.seq_started == update_rows[i].want.seq_started);
		assert_true(pg.seq_done == update_rows[i].want.seq_done);
		assert_int_equal(pg.kind_started, update_rows[i].want.kind_started);
		assert_int_equal(pg.kind_done, update_rows[i].want.kind_done);
		assert_true(pg.bytes == update_rows[i].want.bytes);
		assert_int_equal(pg.wait_peer, update_rows[i].want.wait_peer);
		assert_int_equal(pg.wait_dir, update_rows[i].want.wait_dir);
		assert_string_equal(pg.error, update_rows[i].want.error);
		/* The identity is never disturbed. */
		assert_true(pg.jobid == 0xabcull && pg.commid == 0xdefull);
		assert_int_equal(pg.rank, 2);
		assert_int_equal(pg.nranks, 4);
		assert_string_equal(pg.host, "host");
		/* Every update moves progress_ns; a seqlocked one leaves gen even and higher. */
		assert_true(pg.progress_ns >= before);
		assert_int_equal(pg.gen % 2, 0);
		if (update_rows[i].act == PROGRESS)
			assert_int_equal(pg.gen, gen);
		else
			assert_true(pg.gen > gen);
		gen = pg.gen;
		if (update_rows[i].act == BEGIN)
			assert_true(pg.start_ns >= before);
		else
			assert_true(pg.start_ns == start_ns);
	}
	status_close(&st);
}

/* Waiting again on the same peer in the same direction writes nothing. */
static void
test_status_wait_same(void **state)
{
	struct status st;
	struct status_page pg;
	uint32_t gen;

	assert_int_equal(status_open(&st, 5, 5, 0, 2, "h"), COLL_OK);
	status_wait(&st, 1, 1);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	gen = pg.gen;
	status_wait(&st, 1, 1);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_int_equal(pg.gen, gen);
	status_close(&st);
}

/* After status_close (page NULL) every update is a no-op and writes no file. */
static void
test_status_closed_noop(void **state)
{
	struct status st;

	assert_int_equal(status_open(&st, 6, 6, 0, 1, "h"), COLL_OK);
	status_close(&st);
	assert_null(st.page);
	status_begin(&st, 1, 1, 1);
	status_wait(&st, 0, 1);
	status_progress(&st);
	status_end(&st, 1, 1);
	status_set_state(&st, STATUS_FAILED, "x");
	status_close(&st);
	assert_false(exists(st.path));
}

/*
 * A device's ops (NCCL's, through the profiler plugin): queued, then begun
 * and ended as its kernel reports, late or out of order; the numbers only
 * move forward and the page is idle once nothing queued is left.
 */
static void
test_status_device_ops(void **state)
{
	struct status st;
	struct status_page pg;

	assert_int_equal(status_open(&st, 0, 0x5eedull, 1, 2, "host"), COLL_OK);
	status_set_source(&st, STATUS_SRC_NCCL);
	status_queue(&st, 1, KIND_ALLREDUCE, 4096);
	status_queue(&st, 2, KIND_ALLGATHER, 8192);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_int_equal(pg.version, STATUS_VERSION);
	assert_int_equal(pg.source, STATUS_SRC_NCCL);
	assert_true(pg.seq_queued == 2 && pg.kind_queued == KIND_ALLGATHER && pg.bytes == 8192);
	assert_int_equal(pg.state, STATUS_RUNNING);
	assert_true(pg.seq_started == 0 && pg.flags == 0);
	status_kernel_begin(&st, 1, KIND_ALLREDUCE);
	status_kernel_begin(&st, 2, KIND_ALLGATHER);
	status_kernel_begin(&st, 1, KIND_ALLREDUCE);	/* a late report: no step back */
	status_kernel_end(&st, 1, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.flags & STATUS_F_KERNEL);
	assert_true(pg.seq_started == 2 && pg.kind_started == KIND_ALLGATHER);
	assert_true(pg.seq_done == 1 && pg.kind_done == KIND_ALLREDUCE);
	assert_int_equal(pg.state, STATUS_RUNNING);	/* op 2 still runs */
	status_kernel_end(&st, 2, KIND_ALLGATHER);
	status_kernel_end(&st, 1, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.seq_done == 2 && pg.kind_done == KIND_ALLGATHER);
	assert_int_equal(pg.state, STATUS_IDLE);
	status_close(&st);
}

static void
test_status_close_removes(void **state)
{
	struct status st;
	char path[sizeof st.path];

	assert_int_equal(status_open(&st, 0x77, 0x88, 3, 4, "h"), COLL_OK);
	snprintf(path, sizeof path, "%s", st.path);
	assert_true(exists(path));
	status_close(&st);
	assert_false(exists(path));
	assert_int_equal(status_read(path, &(struct status_page){ 0 }), COLL_ESYS);
	assert_int_equal(dir_files(0), 0);
}

/*
 * Run status_read in a child, so that a crash (SIGBUS on a short mapping) is a
 * failure of this row and not the end of the test program.
 */
static int
read_in_child(const char *path, char *how, size_t len)
{
	struct status_page pg;
	int wst;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka catches these to fail a test; here they must end the child. */
		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		_exit(-status_read(path, &pg));
	}
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	if (WIFSIGNALED(wst)) {
		snprintf(how, len, "killed by signal %d (%s)", WTERMSIG(wst),
		    strsignal(WTERMSIG(wst)));
		return 1;
	}
	snprintf(how, len, "returned %d", -WEXITSTATUS(wst));
	return -WEXITSTATUS(wst);
}

static void
test_status_read_not_a_page(void **state)
{
	static uint8_t zeros[STATUS_PAGE_SIZE], big[3 * STATUS_PAGE_SIZE];
	struct status_page good, vnext, v1, v2, v4, v4big, v5small, badsize;
	int bad = 0;
	static const char text[] = "this is not a status page\n";
	const struct {
		const char *name;
		const void *p;
		size_t n;
		int want;
	} rows[] = {
		{ "empty", "", 0, COLL_EPROTO },
		{ "one byte", "C", 1, COLL_EPROTO },
		{ "text", text, sizeof text - 1, COLL_EPROTO },
		{ "zeros", zeros, sizeof zeros, COLL_EPROTO },
		{ "magic only", &good, 4, COLL_EPROTO },
		{ "wrong size field", &badsize, sizeof badsize, COLL_EPROTO },
		{ "big junk", big, sizeof big, COLL_EPROTO },
		{ "a later version", &vnext, sizeof vnext, COLL_EVERSION },
		{ "version 1", &v1, sizeof v1, COLL_EVERSION },
		{ "version 2 (still read)", &v2, STATUS_PAGE_SIZE_V4, COLL_OK },
		{ "version 2 cut short", &v2, STATUS_PAGE_SIZE_V4 - 8, COLL_EPROTO },
		{ "version 4 in a longer file", &v4, sizeof v4, COLL_OK },
		{ "version 4 of version 5's size", &v4big, sizeof v4big, COLL_EPROTO },
		{ "version 5 of version 4's size", &v5small, STATUS_PAGE_SIZE_V4, COLL_EPROTO },
		{ "version 5 of version 4's size, long file", &v5small, sizeof v5small,
		  COLL_EPROTO },
		{ "version 5 cut to 512 bytes", &good, STATUS_PAGE_SIZE_V4, COLL_EPROTO },
		{ "version 5 cut short by one", &good, sizeof good - 1, COLL_EPROTO },
		{ "good", &good, sizeof good, COLL_OK },
	};

	memset(&good, 0, sizeof good);
	good.magic = STATUS_MAGIC;
	good.version = STATUS_VERSION;
	good.size = STATUS_PAGE_SIZE;
	good.state = STATUS_IDLE;
	vnext = good;
	vnext.version = STATUS_VERSION + 1;
	v1 = good;
	v1.version = 1;
	v2 = good;
	v2.version = 2;
	v2.size = STATUS_PAGE_SIZE_V4;
	memset(&v2.seq_queued, 0xa5, 24);	/* what version 2 left reserved: junk, not read */
	v4 = v2;
	v4.version = 4;
	memset(v4.ops, 0xa5, sizeof v4.ops);	/* past its 512 bytes: not the page's */
	v4big = v4;
	v4big.size = STATUS_PAGE_SIZE;
	v5small = good;
	v5small.size = STATUS_PAGE_SIZE_V4;
	badsize = good;
	badsize.size = 256;
	memset(big, 'j', sizeof big);
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char path[512], how[128];
		int r;

		snprintf(path, sizeof path, "%s/coll.%016x.%016x.%zu", dir, 0xbad, 0, i);
		write_file(path, rows[i].p, rows[i].n);
		r = read_in_child(path, how, sizeof how);
		unlink(path);
		if (r != rows[i].want) {
			print_error("status_read of %s file (%zu bytes): %s, want %d\n",
			    rows[i].name, rows[i].n, how, rows[i].want);
			bad++;
		}
	}
	if (bad)
		fail_msg("%d of %zu files misread", bad, ARRAY_LEN(rows));
}

/* A version 2 page reads as coll's core, nothing queued, whatever its reserved bytes hold. */
static void
test_status_read_v2(void **state)
{
	struct status_page v2, pg;
	char path[512];

	memset(&v2, 0, sizeof v2);
	v2.magic = STATUS_MAGIC;
	v2.version = 2;
	v2.size = STATUS_PAGE_SIZE_V4;
	v2.state = STATUS_IDLE;
	v2.seq_started = 7;
	memset(&v2.seq_queued, 0xa5, 24);
	snprintf(path, sizeof path, "%s/coll.%016x.%016x.0", dir, 0x2, 0x2);
	write_file(path, &v2, STATUS_PAGE_SIZE_V4);
	assert_int_equal(status_read(path, &pg), COLL_OK);
	unlink(path);
	assert_true(pg.seq_started == 7 && pg.seq_queued == 0 && pg.kind_queued == 0);
	assert_int_equal(pg.source, STATUS_SRC_CORE);
	assert_int_equal(pg.flags, 0);
	assert_int_equal(pg.retry_peer, -1);
	assert_string_equal(pg.gpu_bus, "");
}

/*
 * Version 4: what NCCL says of the op queued (datatype, algorithm, protocol,
 * its version), each string cut to its field; queueing without them clears them.
 */
static void
test_status_op_fields(void **state)
{
	struct status st;
	struct status_page pg;

	assert_int_equal(status_open(&st, 0, 0x4f4eull, 0, 4, "host"), COLL_OK);
	status_queue_op(&st, 9, KIND_ALLREDUCE, 4096, "ncclFloat32", "Ring", "LL128", 22803);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_int_equal(pg.version, STATUS_VERSION);
	assert_true(pg.seq_queued == 9 && pg.kind_queued == KIND_ALLREDUCE && pg.bytes == 4096);
	assert_string_equal(pg.dtype, "ncclFloat32");
	assert_string_equal(pg.algo, "Ring");
	assert_string_equal(pg.proto, "LL128");
	assert_int_equal(pg.lib_version, 22803);
	status_queue_op(&st, 10, KIND_ALLREDUCE, 8, NULL, "an algorithm far too long", NULL, 0);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_string_equal(pg.algo, "an algorithm fa");
	assert_true(pg.dtype[0] == '\0' && pg.proto[0] == '\0' && pg.lib_version == 0);
	status_queue(&st, 11, KIND_ALLGATHER, 16);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.seq_queued == 11 && pg.algo[0] == '\0');
	status_close(&st);
}

/* A version 3 page reads with the op's fields empty, whatever its reserved bytes hold. */
static void
test_status_read_v3(void **state)
{
	struct status_page v3, pg;
	char path[512];

	memset(&v3, 0, sizeof v3);
	v3.magic = STATUS_MAGIC;
	v3.version = 3;
	v3.size = STATUS_PAGE_SIZE_V4;
	v3.state = STATUS_RUNNING;
	v3.seq_queued = 5;
	v3.source = STATUS_SRC_NCCL;
	v3.flags = STATUS_F_KERNEL;
	memset(v3.dtype, 0xa5, STATUS_PAGE_SIZE_V4 - offsetof(struct status_page, dtype));
	snprintf(path, sizeof path, "%s/coll.%016x.%016x.0", dir, 0x3, 0x3);
	write_file(path, &v3, STATUS_PAGE_SIZE_V4);
	assert_int_equal(status_read(path, &pg), COLL_OK);
	unlink(path);
	assert_true(pg.seq_queued == 5 && pg.source == STATUS_SRC_NCCL && pg.flags == STATUS_F_KERNEL);
	assert_true(pg.dtype[0] == '\0' && pg.algo[0] == '\0' && pg.proto[0] == '\0');
	assert_int_equal(pg.lib_version, 0);
	assert_int_equal(pg.retry_peer, -1);
}

/* A version 4 page's strings with no end (a writer's junk) come back cut to their field. */
static void
test_status_read_v4_unterminated(void **state)
{
	struct status_page v4, pg;
	char path[512];

	memset(&v4, 0, sizeof v4);
	v4.magic = STATUS_MAGIC;
	v4.version = 4;
	v4.size = STATUS_PAGE_SIZE_V4;
	v4.state = STATUS_IDLE;
	memset(v4.dtype, 'x', sizeof v4.dtype + sizeof v4.algo + sizeof v4.proto);
	snprintf(path, sizeof path, "%s/coll.%016x.%016x.0", dir, 0x4, 0x4);
	write_file(path, &v4, STATUS_PAGE_SIZE_V4);
	assert_int_equal(status_read(path, &pg), COLL_OK);
	unlink(path);
	assert_int_equal(strlen(pg.dtype), sizeof pg.dtype - 1);
	assert_int_equal(strlen(pg.algo), sizeof pg.algo - 1);
	assert_int_equal(strlen(pg.proto), sizeof pg.proto - 1);
}

static void
test_status_read_missing(void **state)
{
	struct status_page pg;
	char path[512];

	snprintf(path, sizeof path, "%s/coll.nonexistent", dir);
	assert_int_equal(status_read(path, &pg), COLL_ESYS);
}

/* status_remove_job removes every page of that job (all comms) and nothing else. */
static void
test_status_remove_job(void **state)
{
	static const struct {
		uint64_t jobid, commid;
		int rank;
	} pages[] = {
		{ 0x1234, 1, 0 }, { 0x1234, 1, 1 }, { 0x1234, 1, 2 }, { 0x1234, 2, 0 },
		{ 0x5678, 1, 0 }, { 0x5678, 1, 1 },
		{ 0x12340000, 1, 0 },		/* same hex digits, another job */
		{ 0x123, 1, 0 },
	};
	static const struct {
		uint64_t jobid;
		int removed;
		int left;	/* files left in the directory */
	} steps[] = {
		{ 0x1234, 4, 5 }, { 0x1234, 0, 5 }, { 0x9999, 0, 5 }, { 0x5678, 2, 3 },
		{ 0x12340000, 1, 2 }, { 0x123, 1, 1 },
	};
	struct status st[ARRAY_LEN(pages)];
	char other[512];

	snprintf(other, sizeof other, "%s/coll.0000000000001234", dir);	/* not a page name */
	write_file(other, "x", 1);
	for (size_t i = 0; i < ARRAY_LEN(pages); i++)
		assert_int_equal(status_open(&st[i], pages[i].jobid, pages[i].commid,
		    pages[i].rank, 2, "h"), COLL_OK);
	assert_int_equal(dir_files(0), ARRAY_LEN(pages) + 1);
	for (size_t s = 0; s < ARRAY_LEN(steps); s++) {
		assert_int_equal(status_remove_job(steps[s].jobid), steps[s].removed);
		assert_int_equal(dir_files(0), steps[s].left);
		for (size_t i = 0; i < ARRAY_LEN(pages); i++) {
			int gone = 0;

			for (size_t k = 0; k <= s; k++)
				gone |= pages[i].jobid == steps[k].jobid;
			assert_int_equal(exists(st[i].path), !gone);
		}
	}
	assert_true(exists(other));
	unlink(other);
	for (size_t i = 0; i < ARRAY_LEN(pages); i++)
		status_close(&st[i]);
	assert_int_equal(dir_files(0), 0);
}

struct scan_seen {
	int n, stop_at;
	uint64_t sum;	/* of jobid x rank, to see each page came whole */
};

static int
scan_count(const struct status_page *pg, uid_t owner, void *arg)
{
	struct scan_seen *s = arg;

	assert_int_equal(owner, geteuid());
	s->sum += pg->jobid * (uint64_t)(pg->rank + 1);
	return ++s->n == s->stop_at;
}

/* status_scan gives every page whole, passes over what is not one, and stops when asked. */
static void
test_status_scan(void **state)
{
	struct status st[3];
	struct scan_seen all = { 0, 0, 0 }, two = { 0, 2, 0 };
	char other[512], junk[512];

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(status_open(&st[i], 0x40 + (uint64_t)i, 1, i, 3, "h"), COLL_OK);
	snprintf(other, sizeof other, "%s/other", dir);		/* not named as a page */
	write_file(other, "x", 1);
	snprintf(junk, sizeof junk, "%s/coll.0000000000000001.0000000000000001.0", dir);
	write_file(junk, "not a page", 10);			/* named as one, is not */
	assert_int_equal(status_scan(NULL, scan_count, &all), 3);
	assert_int_equal(all.n, 3);
	assert_int_equal(all.sum, 0x40 * 1 + 0x41 * 2 + 0x42 * 3);
	assert_int_equal(status_scan(dir, scan_count, &two), 2);
	assert_int_equal(two.n, 2);
	assert_int_equal(status_scan("/nonexistent-coll-dir", scan_count, &all), 0);
	unlink(other);
	unlink(junk);
	for (int i = 0; i < 3; i++)
		status_close(&st[i]);
}

/*
 * Anyone may write pages into a shared directory: 300 whose gen was left odd
 * (a writer stopped mid-update, or a stranger's forgery) must not hold a scan
 * up. Each cost STATUS_READ_RETRY_MS before (30 s in all, which blinded
 * root's collstack and froze colltop); a scan now passes over them after the
 * immediate spins and still finds the whole page among them. The bound is
 * ten times what a loaded machine needs and a third of the old cost.
 */
static void
test_status_scan_stuck(void **state)
{
	struct status st, stuck;
	struct scan_seen all = { 0, 0, 0 };
	char name[600];
	uint64_t t0, ms;

	(void)state;
	assert_int_equal(status_open(&stuck, 0x57c, 1, 0, 1, "h"), COLL_OK);
	__atomic_fetch_add(&stuck.page->gen, 1, __ATOMIC_RELEASE);
	for (int i = 1; i <= 300; i++) {
		snprintf(name, sizeof name, "%s.%d", stuck.path, i);
		assert_int_equal(link(stuck.path, name), 0);
	}
	assert_int_equal(status_open(&st, 0x57d, 1, 0, 1, "h"), COLL_OK);
	t0 = clock_now_ms();
	assert_int_equal(status_scan(NULL, scan_count, &all), 1);
	ms = clock_now_ms() - t0;
	assert_int_equal(all.sum, 0x57d);
	if (ms >= 10000)
		fail_msg("a scan of 300 stuck pages took %" PRIu64 " ms", ms);
	for (int i = 1; i <= 300; i++) {
		snprintf(name, sizeof name, "%s.%d", stuck.path, i);
		unlink(name);
	}
	status_close(&st);
	status_close(&stuck);
}

/*
 * Another user's files cannot use up a scan of one owner's pages: 10,000
 * stuck pages of uid 65534 (some seconds of spins, past the scan's 1 s) are
 * passed over by owner before any is opened, and the page of ours is found
 * wherever the directory lists it. Needs root (to give files away).
 */
static void
test_status_scan_of_owner(void **state)
{
	struct status st, stuck;
	struct scan_seen mine = { 0, 0, 0 };
	char name[600];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(status_open(&stuck, 0x57e, 1, 0, 1, "h"), COLL_OK);
	__atomic_fetch_add(&stuck.page->gen, 1, __ATOMIC_RELEASE);
	assert_int_equal(chown(stuck.path, 65534, 65534), 0);
	for (int i = 1; i <= 10000; i++) {
		snprintf(name, sizeof name, "%s.%d", stuck.path, i);
		assert_int_equal(link(stuck.path, name), 0);
	}
	assert_int_equal(status_open(&st, 0x57f, 1, 0, 1, "h"), COLL_OK);
	assert_int_equal(status_scan_of(NULL, geteuid(), scan_count, &mine), 1);
	assert_int_equal(mine.sum, 0x57f);
	for (int i = 1; i <= 10000; i++) {
		snprintf(name, sizeof name, "%s.%d", stuck.path, i);
		unlink(name);
	}
	unlink(stuck.path);
	status_close(&st);
	munmap(stuck.page, STATUS_PAGE_SIZE);
}

/* A status directory that does not exist: status_open fails cleanly. */
static void
test_status_open_no_dir(void **state)
{
	struct status st;
	char missing[128];

	snprintf(missing, sizeof missing, "%s/missing", dir);
	assert_int_equal(setenv("COLL_STATUS_DIR", missing, 1), 0);
	assert_int_equal(status_open(&st, 1, 1, 0, 1, "h"), COLL_ESYS);
	assert_null(st.page);
	assert_int_equal(setenv("COLL_STATUS_DIR", dir, 1), 0);
	assert_int_equal(dir_files(0), 0);
}

/* The writer of the seqlock test: every field a function of one counter. */
struct hammer {
	struct status st;
	int stop;
	uint64_t n;
};

static void *
hammer_main(void *arg)
{
	struct hammer *h = arg;
	volatile unsigned idle;
	uint64_t n;

	for (n = 1; !__atomic_load_n(&h->stop, __ATOMIC_RELAXED); n++) {
		status_begin(&h->st, n, (uint32_t)(n % 1000), 3 * n);
		status_wait(&h->st, (int)(n % 64), 1 + (int)(n % 2));
		status_end(&h->st, n, (uint32_t)(n % 1000));
		/*
		 * A moment with gen even, as between real ops: without it the page
		 * is mid-update nearly always and readers mostly give up. A reader
		 * copies by three system calls (pread: a page's owner may truncate
		 * it), about 2 us: the moment is of that order, still far shorter
		 * than the shortest real collective.
		 */
		for (idle = 0; idle < 4000; idle++)
			;
	}
	h->n = n;
	return NULL;
}

/* A copy is whole when every field agrees with the counter it was written from. */
static int
page_whole(const struct status_page *pg)
{
	uint64_t s = pg->seq_started;

	if (pg->state == STATUS_INIT)
		return s == 0 && pg->seq_done == 0 && pg->bytes == 0;
	if (pg->bytes != 3 * s || pg->kind_started != s % 1000 ||
	    pg->kind_done != pg->seq_done % 1000)
		return 0;
	/* The ring moves with the rest: op s's slot is s's, begun at start_ns, ended once idle. */
	if (pg->ops[s % STATUS_RING].seq != s || pg->ops[s % STATUS_RING].begin_ns != pg->start_ns ||
	    (pg->ops[s % STATUS_RING].end_ns != 0) != (pg->state == STATUS_IDLE))
		return 0;
	if (pg->state == STATUS_IDLE)
		return pg->seq_done == s && pg->wait_peer == -1 && pg->wait_dir == 0;
	if (pg->state != STATUS_RUNNING || pg->seq_done + 1 != s)
		return 0;
	return (pg->wait_peer == -1 && pg->wait_dir == 0) ||
	    (pg->wait_peer == (int)(s % 64) && pg->wait_dir == 1 + (int)(s % 2));
}

/*
 * A writer thread updates the page without pause while this thread reads it
 * many thousands of times: no torn copy is ever returned as valid. A read may
 * give up (COLL_EBUSY) while the writer never stops, but most must succeed.
 */
static void
test_status_seqlock_torn(void **state)
{
	struct hammer h = { .stop = 0 };
	struct status_page pg;
	pthread_t t;
	int ok = 0, busy = 0, torn = 0, reads = 20000;

	assert_int_equal(status_open(&h.st, 0x5e9, 1, 0, 1, "h"), COLL_OK);
	assert_int_equal(pthread_create(&t, NULL, hammer_main, &h), 0);
	for (int i = 0; i < reads; i++) {
		int r = status_read(h.st.path, &pg);

		if (r == COLL_EBUSY) {
			busy++;
			continue;
		}
		assert_int_equal(r, COLL_OK);
		ok++;
		if (!page_whole(&pg) && torn++ == 0)
			print_error("torn copy: state %d seq %" PRIu64 "/%" PRIu64 " bytes %" PRIu64
			    " kinds %u/%u wait %d/%d\n", pg.state, pg.seq_started, pg.seq_done,
			    pg.bytes, pg.kind_started, pg.kind_done, pg.wait_peer, pg.wait_dir);
	}
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("%d reads: %d whole, %d busy, %d torn; %" PRIu64 " updates\n", reads, ok,
	    busy, torn, h.n);
	assert_int_equal(torn, 0);
	assert_true(ok >= reads / 2);
	status_close(&h.st);
}

/*
 * A page whose gen stays odd (its writer died mid-update): the reader gives
 * up with COLL_EBUSY after the retry limit, neither hanging nor trusting it;
 * once gen is even again it reads the page.
 */
static void
test_status_seqlock_odd(void **state)
{
	struct status st;
	struct status_page pg;
	uint64_t t0, ms;

	assert_int_equal(status_open(&st, 0x0dd, 1, 0, 1, "h"), COLL_OK);
	__atomic_fetch_add(&st.page->gen, 1, __ATOMIC_RELEASE);
	t0 = clock_now_ms();
	assert_int_equal(status_read(st.path, &pg), COLL_EBUSY);
	ms = clock_now_ms() - t0;
	assert_true(ms + 1 >= STATUS_READ_RETRY_MS);
	assert_true(ms < 10 * STATUS_READ_RETRY_MS + 5000);
	__atomic_fetch_add(&st.page->gen, 1, __ATOMIC_RELEASE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.jobid == 0x0dd);
	status_close(&st);
}

static void
read_all(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

/*
 * A link planted at a page's name (to a file of ours, or dangling): the
 * writer refuses it with COLL_EUNSAFE, the target is neither truncated nor
 * created, the link stays; a reader does not follow it either. A fifo there
 * is refused the same way, without blocking the reader.
 */
static void
test_status_open_link(void **state)
{
	static const char *const targets[] = { "victim", "absent" };
	char page[512], target[512], buf[64];
	struct status st;
	struct status_page pg;
	struct stat sb;

	snprintf(page, sizeof page, "%s/coll.%016x.%016x.0", dir, 0x11c, 1);
	for (size_t i = 0; i < ARRAY_LEN(targets); i++) {
		snprintf(target, sizeof target, "%s/%s", dir, targets[i]);
		if (i == 0)
			write_file(target, "keep me", 7);
		assert_int_equal(symlink(target, page), 0);
		assert_int_equal(status_open(&st, 0x11c, 1, 0, 1, "h"), COLL_EUNSAFE);
		assert_null(st.page);
		assert_int_equal(lstat(page, &sb), 0);
		assert_true(S_ISLNK(sb.st_mode));
		assert_int_equal(status_read(page, &pg), COLL_EUNSAFE);
		if (i == 0) {
			read_all(target, buf, sizeof buf);
			assert_string_equal(buf, "keep me");
		} else {
			assert_false(exists(target));
		}
		unlink(page);
		unlink(target);
	}
	assert_int_equal(mkfifo(page, 0600), 0);
	assert_int_equal(status_open(&st, 0x11c, 1, 0, 1, "h"), COLL_EUNSAFE);
	assert_int_equal(status_read(page, &pg), COLL_EUNSAFE);
	unlink(page);
	assert_int_equal(dir_files(0), 0);
}

/* A stale page of our own at the name (an earlier run of this rank) is replaced. */
static void
test_status_open_stale(void **state)
{
	struct status st;
	struct status_page pg;
	char page[512];

	snprintf(page, sizeof page, "%s/coll.%016x.%016x.3", dir, 0x57a, 2);
	write_file(page, "stale junk", 10);
	assert_int_equal(status_open(&st, 0x57a, 2, 3, 4, "h"), COLL_OK);
	assert_string_equal(st.path, page);
	assert_int_equal(status_read(page, &pg), COLL_OK);
	assert_int_equal(pg.pid, getpid());
	assert_int_equal(pg.rank, 3);
	status_close(&st);
	assert_int_equal(dir_files(0), 0);
}

/*
 * Another user's file at a page's name (root here: chown to nobody): readers
 * refuse it with COLL_EOWNER unless they name that owner, the writer neither
 * truncates nor removes it, and status_remove_job leaves it.
 */
static void
test_status_other_owner(void **state)
{
	const uid_t nobody = 65534;
	struct status st, mine;
	struct status_page pg;
	struct stat sb;

	if (geteuid() != 0) {
		print_message("not root: cannot make a file of another user\n");
		skip();
	}
	assert_int_equal(status_open(&st, 0x07e, 1, 0, 1, "h"), COLL_OK);
	assert_int_equal(chown(st.path, nobody, nobody), 0);
	assert_int_equal(status_read(st.path, &pg), COLL_EOWNER);
	assert_int_equal(status_read_owned(st.path, nobody, &pg), COLL_OK);
	assert_true(pg.jobid == 0x07e);
	assert_int_equal(status_open(&mine, 0x07e, 1, 0, 1, "h"), COLL_EOWNER);
	assert_null(mine.page);
	assert_int_equal(stat(st.path, &sb), 0);
	assert_int_equal(sb.st_uid, nobody);
	assert_int_equal(sb.st_size, STATUS_PAGE_SIZE);
	assert_int_equal(status_read_owned(st.path, nobody, &pg), COLL_OK);
	assert_int_equal(status_remove_job(0x07e), 0);
	assert_true(exists(st.path));
	status_close(&st);
	assert_int_equal(dir_files(0), 0);
}

/*
 * The owner of a page truncates it while another user reads it (issue 34:
 * root's colltop and collstack read every user's pages). A reader that
 * mapped the file died of SIGBUS when the truncation fell between its size
 * check and its copy; it must only ever refuse the page. A child truncates
 * and restores the page as fast as it can while a second child reads it
 * 20,000 times; the reader must end by itself with no signal, and must have
 * both read the page and refused it cut short.
 */
static void
test_status_read_truncated(void **state)
{
	struct status st;
	struct status_page pg;
	pid_t cutter, reader;
	int wst;

	(void)state;
	assert_int_equal(status_open(&st, 0x77, 0x1, 0, 1, "h"), COLL_OK);
	memcpy(&pg, st.page, sizeof pg);
	if ((cutter = fork()) == 0) {
		int fd = open(st.path, O_RDWR);

		for (;;) {
			if (ftruncate(fd, 0) != 0 || pwrite(fd, &pg, sizeof pg, 0) != sizeof pg)
				_exit(1);
		}
	}
	assert_true(cutter > 0);
	if ((reader = fork()) == 0) {
		struct status_page out;
		int ok = 0, cut = 0;

		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		for (int i = 0; i < 20000 || ok == 0 || cut == 0; i++) {
			int r = status_read(st.path, &out);

			ok += r == COLL_OK;
			cut += r == COLL_EPROTO;
			if (r != COLL_OK && r != COLL_EPROTO)
				_exit(2);
			if (i > 2000000)
				_exit(3);	/* never both: the cutter is not running */
		}
		_exit(0);
	}
	assert_true(reader > 0);
	assert_int_equal(waitpid(reader, &wst, 0), reader);
	kill(cutter, SIGKILL);
	waitpid(cutter, NULL, 0);
	if (WIFSIGNALED(wst))
		fail_msg("the reader was killed by signal %d (%s)", WTERMSIG(wst),
		    strsignal(WTERMSIG(wst)));
	assert_int_equal(WEXITSTATUS(wst), 0);
	status_close(&st);
}

/* Every slot of the ring is empty (what a page of an older version reads as). */
static int
ring_empty(const struct status_page *pg)
{
	static const struct status_op none;

	for (int i = 0; i < STATUS_RING; i++)
		if (memcmp(&pg->ops[i], &none, sizeof none) != 0)
			return 0;
	return 1;
}

/*
 * A version 4 page (512 bytes) reads with no ring and no retried link,
 * whatever its reserved bytes hold and whatever follows it in a longer file.
 */
static void
test_status_read_v4_ring(void **state)
{
	struct status_page v4, pg;
	char path[512];

	memset(&v4, 0xa5, sizeof v4);
	v4.magic = STATUS_MAGIC;
	v4.version = 4;
	v4.size = STATUS_PAGE_SIZE_V4;
	v4.gen = 2;
	v4.retries = 3;
	snprintf(path, sizeof path, "%s/coll.%016x.%016x.0", dir, 0x44, 0x44);
	for (size_t n = STATUS_PAGE_SIZE_V4; n <= sizeof v4; n += sizeof v4 - STATUS_PAGE_SIZE_V4) {
		write_file(path, &v4, n);
		assert_int_equal(status_read(path, &pg), COLL_OK);
		assert_int_equal(pg.version, 4);
		assert_true(pg.retries == 3);
		assert_int_equal(pg.retry_peer, -1);
		assert_true(ring_empty(&pg));
	}
	unlink(path);
}

/*
 * coll's core: each op takes its slot, seq % STATUS_RING, at status_begin
 * (begin_ns = start_ns, nothing queued) and ends there at status_end; past
 * STATUS_RING ops the oldest slots are taken again, and an end for an op
 * whose slot a later op took (or whose seq never began) writes nothing.
 */
static void
test_status_ring_core(void **state)
{
	struct status st;
	struct status_page pg;
	uint64_t before = clock_wall_ns();

	assert_int_equal(status_open(&st, 0, 0x41, 0, 2, "h"), COLL_OK);
	status_begin(&st, 1, KIND_ALLREDUCE, 8);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.ops[1].seq == 1 && pg.ops[1].queued_ns == 0 && pg.ops[1].end_ns == 0);
	assert_true(pg.ops[1].begin_ns == pg.start_ns && pg.start_ns >= before);
	assert_int_equal(pg.op_kind[1], KIND_ALLREDUCE);
	status_begin(&st, 1 + STATUS_RING, KIND_BROADCAST, 8);	/* the slot's kind is its op's */
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_int_equal(pg.op_kind[1], KIND_BROADCAST);
	status_begin(&st, 1, KIND_ALLREDUCE, 8);
	status_end(&st, 1, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.ops[1].end_ns >= pg.ops[1].begin_ns && pg.ops[1].end_ns == pg.progress_ns);
	for (uint64_t seq = 2; seq <= 2 * STATUS_RING + 3; seq++) {
		status_begin(&st, seq, KIND_ALLREDUCE, 8);
		status_end(&st, seq, KIND_ALLREDUCE);
	}
	status_begin(&st, 2 * STATUS_RING + 4, KIND_ALLREDUCE, 8);
	status_end(&st, STATUS_RING + 4, KIND_ALLREDUCE);	/* its slot is op 2R+4's */
	status_end(&st, 99, KIND_ALLREDUCE);		/* never began: slot 3 is op 2R+3's */
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	for (int i = 0; i < STATUS_RING; i++) {
		/* The slot holds the latest op of its index: seqs R+5 .. 2R+4. */
		uint64_t want = (uint64_t)(i < 5 ? 2 * STATUS_RING + i : STATUS_RING + i);

		assert_true(pg.ops[i].seq == want);
		assert_true(pg.ops[i].seq % STATUS_RING == (uint64_t)i);
		assert_true(pg.ops[i].begin_ns >= before);
		if (want == 2 * STATUS_RING + 4)
			assert_true(pg.ops[i].end_ns == 0);	/* still under way */
		else
			assert_true(pg.ops[i].end_ns >= pg.ops[i].begin_ns);
	}
	status_close(&st);
}

/*
 * A device's ops (NCCL): queued several ahead ({seq, queued, 0, 0}), then the
 * kernel's begin and end fill the slot of that seq. A second begin (an op
 * run again) keeps the first; an op queued STATUS_RING or more before the
 * one it reports on has lost its slot, and its times go nowhere.
 */
static void
test_status_ring_device(void **state)
{
	struct status st;
	struct status_page pg;
	uint64_t q1, b1;

	assert_int_equal(status_open(&st, 0, 0x42, 1, 2, "h"), COLL_OK);
	status_set_source(&st, STATUS_SRC_NCCL);
	for (uint64_t seq = 1; seq <= 3; seq++)
		status_queue_op(&st, seq, seq == 2 ? KIND_REDUCE : KIND_ALLREDUCE, 64, "ncclFloat32",
		    "Ring", "LL", 22803);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.op_kind[1] == KIND_ALLREDUCE && pg.op_kind[2] == KIND_REDUCE &&
	    pg.op_kind[3] == KIND_ALLREDUCE);
	for (int i = 1; i <= 3; i++)
		assert_true(pg.ops[i].seq == (uint64_t)i && pg.ops[i].queued_ns > 0 &&
		    pg.ops[i].begin_ns == 0 && pg.ops[i].end_ns == 0);
	assert_true(pg.ops[1].queued_ns <= pg.ops[2].queued_ns);
	q1 = pg.ops[1].queued_ns;
	status_kernel_begin(&st, 1, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	b1 = pg.ops[1].begin_ns;
	assert_true(b1 >= q1 && b1 == pg.start_ns && pg.ops[2].begin_ns == 0);
	status_kernel_begin(&st, 1, KIND_ALLREDUCE);	/* again: the first begin stays */
	status_kernel_end(&st, 1, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.ops[1].queued_ns == q1 && pg.ops[1].begin_ns == b1);
	assert_true(pg.ops[1].end_ns >= b1 && pg.ops[2].end_ns == 0);
	/* Queued far ahead: op 2's slot goes to op 2 + R before op 2's kernel reports. */
	for (uint64_t seq = 4; seq <= STATUS_RING + 2; seq++)
		status_queue(&st, seq, KIND_ALLREDUCE, 64);
	status_kernel_begin(&st, 2, KIND_ALLREDUCE);
	status_kernel_end(&st, 2, KIND_ALLREDUCE);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.seq_done == 2 && pg.seq_started == 2);
	assert_true(pg.ops[2].seq == STATUS_RING + 2 && pg.ops[2].begin_ns == 0 &&
	    pg.ops[2].end_ns == 0);
	assert_true(pg.ops[3].seq == 3 && pg.ops[3].begin_ns == 0);
	status_close(&st);
}

/* A retry names the other rank of the link that broke; status_retry names none. */
static void
test_status_retry_peer(void **state)
{
	struct status st;
	struct status_page pg;
	uint64_t before = clock_wall_ns();

	assert_int_equal(status_open(&st, 0, 0x43, 0, 4, "h"), COLL_OK);
	status_retry_peer(&st, 1, 3);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.retries == 1 && pg.retry_ns >= before);
	assert_int_equal(pg.retry_peer, 3);
	status_retry(&st, 2);
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_true(pg.retries == 2);
	assert_int_equal(pg.retry_peer, -1);
	/* The GPU's PCI address: none until set, bounded to its field, NUL-terminated. */
	assert_string_equal(pg.gpu_bus, "");
	status_set_gpu(&st, "0000:3b:00.0");
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_string_equal(pg.gpu_bus, "0000:3b:00.0");
	status_set_gpu(&st, "0000:3b:00.0-and-much-more");
	assert_int_equal(status_read(st.path, &pg), COLL_OK);
	assert_string_equal(pg.gpu_bus, "0000:3b:00.0-an");
	status_close(&st);
	status_retry_peer(&st, 3, 1);	/* closed: nothing */
	status_set_gpu(&st, "x");
}

/*
 * The ring is the writer's, as the rest of the page: a slot whose seq is not
 * its index's, times out of order or of any value, come back as they are
 * (a reader of ops bounds them); they make no page unreadable.
 */
static void
test_status_read_v5_junk_ring(void **state)
{
	struct status_page v5, pg;
	char path[512];

	memset(&v5, 0, sizeof v5);
	v5.magic = STATUS_MAGIC;
	v5.version = STATUS_VERSION;
	v5.size = STATUS_PAGE_SIZE;
	v5.retry_peer = 1 << 30;
	memset(v5.ops, 0xff, sizeof v5.ops);
	v5.ops[0] = (struct status_op){ 5, 9, 3, 1 };
	snprintf(path, sizeof path, "%s/coll.%016x.%016x.0", dir, 0x55, 0x55);
	write_file(path, &v5, sizeof v5);
	assert_int_equal(status_read(path, &pg), COLL_OK);
	unlink(path);
	assert_int_equal(pg.retry_peer, 1 << 30);
	assert_true(pg.ops[0].seq == 5 && pg.ops[0].end_ns == 1);
	assert_true(pg.ops[1].seq == UINT64_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_dir),
		cmocka_unit_test(test_status_open_fields),
		cmocka_unit_test(test_status_updates),
		cmocka_unit_test(test_status_wait_same),
		cmocka_unit_test(test_status_closed_noop),
		cmocka_unit_test(test_status_device_ops),
		cmocka_unit_test(test_status_close_removes),
		cmocka_unit_test(test_status_read_not_a_page),
		cmocka_unit_test(test_status_read_v2),
		cmocka_unit_test(test_status_op_fields),
		cmocka_unit_test(test_status_read_v3),
		cmocka_unit_test(test_status_read_v4_unterminated),
		cmocka_unit_test(test_status_read_v4_ring),
		cmocka_unit_test(test_status_read_v5_junk_ring),
		cmocka_unit_test(test_status_ring_core),
		cmocka_unit_test(test_status_ring_device),
		cmocka_unit_test(test_status_retry_peer),
		cmocka_unit_test(test_status_read_missing),
		cmocka_unit_test(test_status_remove_job),
		cmocka_unit_test(test_status_scan),
		cmocka_unit_test(test_status_scan_stuck),
		cmocka_unit_test(test_status_scan_of_owner),
		cmocka_unit_test(test_status_open_no_dir),
		cmocka_unit_test(test_status_seqlock_torn),
		cmocka_unit_test(test_status_seqlock_odd),
		cmocka_unit_test(test_status_open_link),
		cmocka_unit_test(test_status_open_stale),
		cmocka_unit_test(test_status_other_owner),
		cmocka_unit_test(test_status_read_truncated),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
