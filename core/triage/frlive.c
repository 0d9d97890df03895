/*
 * The flight recorder of a live PyTorch job. A rank whose environment sets
 * TORCH_FR_DEBUG_INFO_PIPE_FILE=STEM (or the older
 * TORCH_NCCL_DEBUG_INFO_PIPE_FILE; core/stack/proc.c reads the newer name
 * first, as PyTorch does) made a named pipe STEM<rank>.pipe; anything
 * written to it makes PyTorch dump its flight recorder, a pickle or JSON,
 * to TORCH_FR_DUMP_TEMP_FILE<rank> (TORCH_NCCL_DEBUG_INFO_TEMP_FILE, by
 * default /tmp/nccl_trace_rank_<rank>), and the job goes on. Each worker asks the
 * ranks on its host, waits for the files to be rewritten, and sends their
 * newest entries on; rank 0 matches them across ranks as --fr does
 * (fr_match.c).
 *
 * Paths are the rank's own: resolved inside /proc/PID/root (/proc/PID/cwd
 * for a relative one) with openat2's RESOLVE_IN_ROOT, so a rank in a
 * container is asked in its own filesystem and no link in it leads out.
 * The pipe must be a FIFO and the dump a plain file, both owned by the
 * rank's user (in a shared /tmp another user's file is not its dump): what
 * is not is said as ignored, with its owner, and never read or written; a
 * pipe nobody reads is said and left alone. Both are opened O_NONBLOCK and
 * O_NOFOLLOW and judged by fstat of what was opened. A dump overwrites the
 * one an earlier request or a timeout left at the same name, as PyTorch's
 * own request would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fr.h"
#include "frlive.h"
#include "user.h"
#include "xmalloc.h"

#define FRLIVE_KEEP 256			/* newest entries of each dump sent on */
#define FRLIVE_FILE_MAX (256u << 20)
#define FRLIVE_DEFAULT "/tmp/nccl_trace_rank_"
#define FRLIVE_POLL_MS 100

struct frlive_req {
	const struct stack_pinfo *pi;
	int64_t before, last;		/* mtime before asking; at the previous look */
	off_t size;
	int done;
};

/* openat2(2)'s, declared here: older C libraries have no wrapper or header. */
struct frlive_open_how {
	uint64_t flags, mode, resolve;
};
#define FRLIVE_RESOLVE_NO_MAGICLINKS 0x02
#define FRLIVE_RESOLVE_IN_ROOT 0x10
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Open the rank's stem<rank><suffix> in its own filesystem; -1 with errno. */
static int
frlive_open(const struct stack_pinfo *pi, const char *stem, const char *suffix, int flags)
{
	char dir[64], rel[600];
	struct frlive_open_how how = { (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC), 0,
		FRLIVE_RESOLVE_IN_ROOT | FRLIVE_RESOLVE_NO_MAGICLINKS };
	int dfd, fd, e;

	snprintf(dir, sizeof dir, "/proc/%d/%s", (int)pi->pid, stem[0] == '/' ? "root" : "cwd");
	snprintf(rel, sizeof rel, "%s%d%s", stem + strspn(stem, "/"), pi->rank, suffix);
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)	/* a kernel before 5.6 */
		fd = openat(dfd, rel, flags | O_NOFOLLOW | O_CLOEXEC);
	e = errno;
	close(dfd);
	errno = e;
	return fd;
}

/* A file of the rank's, of this type (S_IFREG, S_IFIFO), owned by its user: fstat'ed into sb. */
static int
frlive_owned(int fd, const struct stack_pinfo *pi, mode_t type, struct stat *sb)
{
	memset(sb, 0, sizeof *sb);
	return fstat(fd, sb) == 0 && (sb->st_mode & S_IFMT) == type && sb->st_uid == pi->uid;
}

/* Why what sb describes is not the rank's own file of this type: "ignored: ...". */
static void
frlive_foreign(const struct stack_pinfo *pi, const struct stat *sb, mode_t type,
    const char *what, char *why, size_t len)
{
	char owner[72], rank[72];

	user_name(sb->st_uid, owner, sizeof owner);
	user_name(pi->uid, rank, sizeof rank);
	if ((sb->st_mode & S_IFMT) != type)
		snprintf(why, len, "ignored: %s is not a %s (owned by user %s): left alone", what,
		    type == S_IFIFO ? "named pipe" : "regular file", owner);
	else
		snprintf(why, len, "ignored: %s is owned by user %s, not by the rank's user %s: "
		    "left alone", what, owner, rank);
}

/*
 * The dump's mtime (ns) and size; -1 if it is not there, -2 (why said) if
 * something that is not the rank's own file is at its name.
 */
static int64_t
frlive_mtime(const struct stack_pinfo *pi, off_t *size, char *why, size_t len)
{
	const char *dump = pi->fr_file[0] ? pi->fr_file : FRLIVE_DEFAULT;
	struct stat sb;
	int fd = frlive_open(pi, dump, "", O_PATH), ok;
	char what[300];

	if (fd < 0)
		return -1;
	ok = frlive_owned(fd, pi, S_IFREG, &sb);
	close(fd);
	if (!ok) {
		snprintf(what, sizeof what, "its dump %.256s%d", dump, pi->rank);
		frlive_foreign(pi, &sb, S_IFREG, what, why, len);
		return -2;
	}
	*size = sb.st_size;
	return (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

static void
frlive_skip(json_t *blob, const struct stack_pinfo *pi, const char *why)
{
	json_t *a = json_object_get(blob, "fr_skipped");

	if (a == NULL) {
		a = json_array();
		json_object_set_new(blob, "fr_skipped", a);
	}
	json_array_append_new(a, json_sprintf("rank %d (pid %d): %s", pi->rank, (int)pi->pid,
	    why));
}

/* Write to the rank's pipe: 0, or -1 with why. */
static int
frlive_ask(const struct stack_pinfo *pi, char *why, size_t len)
{
	char self[64];
	struct stat sb;
	int pfd, fd;

	/* Looked at first, opened for writing only once it is the rank's own FIFO. */
	if ((pfd = frlive_open(pi, pi->fr_pipe, ".pipe", O_PATH)) < 0) {
		snprintf(why, len, "its dump pipe %.256s%d.pipe %s", pi->fr_pipe, pi->rank,
		    errno == ENOENT ? "does not exist (made when the process group is created)" :
		    strerror(errno));
		return -1;
	}
	if (!frlive_owned(pfd, pi, S_IFIFO, &sb)) {
		char what[300];

		snprintf(what, sizeof what, "its dump pipe %.256s%d.pipe", pi->fr_pipe, pi->rank);
		frlive_foreign(pi, &sb, S_IFIFO, what, why, len);
		close(pfd);
		return -1;
	}
	snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
	fd = open(self, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	close(pfd);
	if (fd < 0) {
		snprintf(why, len, "its dump pipe %.256s%d.pipe %s", pi->fr_pipe, pi->rank,
		    errno == ENXIO ? "has no reader (PyTorch's monitor thread is not running)" :
		    strerror(errno));
		return -1;
	}
	if (write(fd, "1\n", 2) != 2) {
		snprintf(why, len, "its dump pipe %.256s%d.pipe: %s", pi->fr_pipe, pi->rank,
		    strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The dump, its newest entries kept; NULL with why. */
static json_t *
frlive_read(const struct frlive_req *q, char *why, size_t len)
{
	const char *dump = q->pi->fr_file[0] ? q->pi->fr_file : FRLIVE_DEFAULT;
	json_t *root, *kept;
	char perr[256];
	struct stat sb;
	uint8_t *buf;
	int fd;
	size_t got;
	FILE *f;

	fd = frlive_open(q->pi, dump, "", O_RDONLY | O_NONBLOCK);
	if (fd >= 0 && !frlive_owned(fd, q->pi, S_IFREG, &sb)) {
		char what[300];

		snprintf(what, sizeof what, "its dump %.256s%d", dump, q->pi->rank);
		frlive_foreign(q->pi, &sb, S_IFREG, what, why, len);
		close(fd);
		return NULL;
	}
	if (fd < 0 || (f = fdopen(fd, "rb")) == NULL) {
		snprintf(why, len, "its dump %.256s%d: %s", dump, q->pi->rank, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if ((uint64_t)sb.st_size > FRLIVE_FILE_MAX) {
		snprintf(why, len, "its dump is %lld bytes, more than %u MiB", (long long)sb.st_size,
		    FRLIVE_FILE_MAX >> 20);
		fclose(f);
		return NULL;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	got = fread(buf, 1, (size_t)sb.st_size, f);
	fclose(f);
	root = fr_parse(buf, got, perr, sizeof perr);
	free(buf);
	if (root == NULL) {
		snprintf(why, len, "its dump %.200s%d is not a flight recorder dump: %.200s", dump,
		    q->pi->rank, perr);
		return NULL;
	}
	kept = fr_trim(root, FRLIVE_KEEP);
	json_decref(root);
	return kept;
}

/*
 * One look at a requested dump: 1 once it is done with (taken into out, or
 * why not into blob). A dump is taken once its file has been rewritten and
 * holds still for one look.
 */
static int
frlive_look(struct frlive_req *q, json_t *blob, json_t *out)
{
	off_t size = 0;
	int64_t m;
	json_t *d;
	char why[512];

	m = frlive_mtime(q->pi, &size, why, sizeof why);
	if (m == -2) {
		q->done = 1;
		frlive_skip(blob, q->pi, why);
		return 1;
	}
	if (m < 0 || m == q->before || size == 0 || m != q->last || size != q->size) {
		q->last = m;
		q->size = size;
		return 0;
	}
	q->done = 1;
	if ((d = frlive_read(q, why, sizeof why)) == NULL)
		frlive_skip(blob, q->pi, why);
	else
		json_array_append_new(out, json_pack("{s:i, s:i, s:o}", "rank", q->pi->rank,
		    "pid", (int)q->pi->pid, "dump", d));
	return 1;
}

void
frlive_fetch(const struct stack_pinfo *pis, int npi, double budget_s, json_t *blob)
{
	struct frlive_req *q = xcalloc((size_t)npi + 1, sizeof *q);
	uint64_t deadline;
	int n = 0, pending;
	char why[512];
	json_t *out = json_array();

	for (int i = 0; i < npi; i++) {
		const struct stack_pinfo *pi = &pis[i];
		off_t size;

		if (pi->fr_pipe[0] == '\0' || pi->rank < 0 || pi->state == 0 || pi->state == 'Z')
			continue;
		/*
		 * Unset is asked: PyTorch 2.11 records with neither variable set
		 * (an older one that does not dumps nothing, and is waited for).
		 */
		if (pi->fr_buffer == 0) {
			frlive_skip(blob, pi, "its flight recorder is off (TORCH_FR_BUFFER_SIZE or "
			    "TORCH_NCCL_TRACE_BUFFER_SIZE is 0)");
			continue;
		}
		q[n].pi = pi;
		q[n].last = -1;
		/* Another's file at the dump's name: the rank cannot write there, and it is not asked. */
		if ((q[n].before = frlive_mtime(pi, &size, why, sizeof why)) == -2 ||
		    frlive_ask(pi, why, sizeof why) != 0) {
			frlive_skip(blob, pi, why);
			continue;
		}
		n++;
	}
	deadline = clock_now_ms() + (uint64_t)(budget_s * 1000);
	for (pending = n; pending > 0 && clock_now_ms() < deadline;) {
		struct timespec ts = { 0, FRLIVE_POLL_MS * 1000000L };

		nanosleep(&ts, NULL);
		for (int i = 0; i < n; i++)
			if (!q[i].done && frlive_look(&q[i], blob, out))
				pending--;
	}
	for (int i = 0; i < n; i++)
		if (!q[i].done) {
			snprintf(why, sizeof why, "asked for a dump; none was written to %s%d within "
			    "%.1f s", q[i].pi->fr_file[0] ? q[i].pi->fr_file : FRLIVE_DEFAULT,
			    q[i].pi->rank, budget_s);
			frlive_skip(blob, q[i].pi, why);
		}
	if (json_array_size(out) > 0)
		json_object_set_new(blob, "fr", out);
	else
		json_decref(out);
	free(q);
}

