/*
 * The flight recorder of a live PyTorch job. A rank whose environment sets
 * TORCH_NCCL_DEBUG_INFO_PIPE_FILE=STEM made a named pipe STEM<rank>.pipe;
 * anything written to it makes PyTorch dump its flight recorder to
 * TORCH_FR_DUMP_TEMP_FILE<rank> (TORCH_NCCL_DEBUG_INFO_TEMP_FILE, by default
 * /tmp/nccl_trace_rank_<rank>), and the job goes on. Each worker asks the
 * ranks on its host, waits for the files to be rewritten, and sends their
 * newest entries on; rank 0 matches them across ranks as --fr does
 * (fr.c).
 *
 * Paths are the rank's own: taken through /proc/PID/root (and /proc/PID/cwd
 * for a relative one), so a rank in a container is asked in its own
 * filesystem. The pipe must be a FIFO with a reader; a file at the name, or
 * a pipe nobody reads, is said and left alone. A dump overwrites the one an
 * earlier request or a timeout left at the same name, as PyTorch's own
 * request would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collstack.h"
#include "fr.h"
#include "pickle.h"
#include "xmalloc.h"

#define STK_FR_KEEP 256			/* newest entries of each dump sent on */
#define STK_FR_FILE_MAX (256u << 20)
#define STK_FR_DEFAULT "/tmp/nccl_trace_rank_"
#define STK_FR_POLL_MS 100

struct stk_frreq {
	const struct stack_pinfo *pi;
	char dump[600];
	int64_t before, last;		/* mtime before asking; at the previous look */
	off_t size;
	int done;
};

static void
stk_fr_path(char *out, size_t len, pid_t pid, const char *stem, int rank, const char *suffix)
{
	snprintf(out, len, "/proc/%d/%s%s%d%s", (int)pid, stem[0] == '/' ? "root" : "cwd/", stem,
	    rank, suffix);
}

static int64_t
stk_fr_mtime(const char *path, off_t *size)
{
	struct stat sb;

	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return -1;
	*size = sb.st_size;
	return (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

static void
stk_fr_skip(json_t *blob, const struct stack_pinfo *pi, const char *why)
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
stk_fr_ask(const struct stack_pinfo *pi, char *why, size_t len)
{
	char path[600];
	struct stat sb;
	int fd;

	stk_fr_path(path, sizeof path, pi->pid, pi->fr_pipe, pi->rank, ".pipe");
	fd = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "its dump pipe %s%d.pipe %s", pi->fr_pipe, pi->rank,
		    errno == ENXIO ? "has no reader (PyTorch's monitor thread is not running)" :
		    errno == ENOENT ? "does not exist (made when the process group is created)" :
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) != 0 || !S_ISFIFO(sb.st_mode)) {
		snprintf(why, len, "%s%d.pipe is not a named pipe: left alone", pi->fr_pipe,
		    pi->rank);
		close(fd);
		return -1;
	}
	if (write(fd, "1\n", 2) != 2) {
		snprintf(why, len, "its dump pipe %s%d.pipe: %s", pi->fr_pipe, pi->rank,
		    strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The dump, its newest entries kept; NULL with why. */
static json_t *
stk_fr_read(const struct stk_frreq *q, char *why, size_t len)
{
	json_t *root, *kept;
	char perr[256];
	uint8_t *buf;
	size_t got;
	FILE *f;

	if ((uint64_t)q->size > STK_FR_FILE_MAX) {
		snprintf(why, len, "its dump is %lld bytes, more than %u MiB", (long long)q->size,
		    STK_FR_FILE_MAX >> 20);
		return NULL;
	}
	if ((f = fopen(q->dump, "rb")) == NULL) {
		snprintf(why, len, "its dump: %s", strerror(errno));
		return NULL;
	}
	buf = xmalloc((size_t)q->size + 1);
	got = fread(buf, 1, (size_t)q->size, f);
	fclose(f);
	root = pickle_read(buf, got, perr, sizeof perr);
	free(buf);
	if (root == NULL || !json_is_object(root) ||
	    !json_is_array(json_object_get(root, "entries"))) {
		snprintf(why, len, "its dump %.200s is not a flight recorder dump%s%.200s", q->pi->fr_file,
		    root == NULL ? ": " : "", root == NULL ? perr : "");
		json_decref(root);
		return NULL;
	}
	kept = fr_trim(root, STK_FR_KEEP);
	json_decref(root);
	return kept;
}

void
stk_fr_here(const struct stk_local *loc, double budget_s, json_t *blob)
{
	struct stk_frreq *q = xcalloc((size_t)loc->n + 1, sizeof *q);
	uint64_t deadline;
	int n = 0, pending;
	char why[512];
	json_t *out = json_array();

	for (int i = 0; i < loc->n; i++) {
		const struct stack_pinfo *pi = &loc->pi[i];
		off_t size;

		if (pi->fr_pipe[0] == '\0' || pi->rank < 0 || pi->state == 0 || pi->state == 'Z')
			continue;
		if (pi->fr_buffer <= 0) {
			stk_fr_skip(blob, pi, "its flight recorder is off (TORCH_FR_BUFFER_SIZE unset "
			    "or 0)");
			continue;
		}
		q[n].pi = pi;
		stk_fr_path(q[n].dump, sizeof q[n].dump, pi->pid,
		    pi->fr_file[0] ? pi->fr_file : STK_FR_DEFAULT, pi->rank, "");
		q[n].before = stk_fr_mtime(q[n].dump, &size);
		q[n].last = -1;
		if (stk_fr_ask(pi, why, sizeof why) != 0) {
			stk_fr_skip(blob, pi, why);
			continue;
		}
		n++;
	}
	/* A dump is taken once its file has been rewritten and holds still for one look. */
	deadline = clock_now_ms() + (uint64_t)(budget_s * 1000);
	for (pending = n; pending > 0 && clock_now_ms() < deadline;) {
		struct timespec ts = { 0, STK_FR_POLL_MS * 1000000L };

		nanosleep(&ts, NULL);
		for (int i = 0; i < n; i++) {
			off_t size = 0;
			int64_t m;
			json_t *d;

			if (q[i].done)
				continue;
			m = stk_fr_mtime(q[i].dump, &size);
			if (m < 0 || m == q[i].before || size == 0 || m != q[i].last ||
			    size != q[i].size) {
				q[i].last = m;
				q[i].size = size;
				continue;
			}
			q[i].done = 1;
			pending--;
			if ((d = stk_fr_read(&q[i], why, sizeof why)) == NULL) {
				stk_fr_skip(blob, q[i].pi, why);
				continue;
			}
			json_array_append_new(out, json_pack("{s:i, s:i, s:o}", "rank", q[i].pi->rank,
			    "pid", (int)q[i].pi->pid, "dump", d));
		}
	}
	for (int i = 0; i < n; i++)
		if (!q[i].done) {
			snprintf(why, sizeof why, "asked for a dump; none was written to %s%d within "
			    "%.1f s", q[i].pi->fr_file[0] ? q[i].pi->fr_file : STK_FR_DEFAULT,
			    q[i].pi->rank, budget_s);
			stk_fr_skip(blob, q[i].pi, why);
		}
	if (json_array_size(out) > 0)
		json_object_set_new(blob, "fr", out);
	else
		json_decref(out);
	free(q);
}

void
stk_fr_gather(struct fr_set *s, json_t *o, char **note)
{
	const char *host = json_string_value(json_object_get(o, "host"));
	json_t *x;
	size_t i;
	char err[512], label[300];

	json_array_foreach(json_object_get(o, "fr"), i, x) {
		json_int_t rank = json_integer_value(json_object_get(x, "rank"));

		snprintf(label, sizeof label, "%s rank %lld", host ? host : "?", (long long)rank);
		if (!json_is_integer(json_object_get(x, "rank")) || rank < 0 ||
		    rank >= STACK_RANK_MAX ||
		    fr_add_root(s, (int)rank, label, json_object_get(x, "dump"), err, sizeof err) != 0)
			continue;
	}
	json_array_foreach(json_object_get(o, "fr_skipped"), i, x) {
		char *old = *note;

		if (!json_is_string(x))
			continue;
		*note = old ? xasprintf("%s; %s: %s", old, host ? host : "?", json_string_value(x)) :
		    xasprintf("%s: %s", host ? host : "?", json_string_value(x));
		free(old);
	}
}

void
stk_fr_judge(struct stk_result *r, const struct fr_set *s)
{
	struct fr_report rep;

	if (s->n == 0)
		return;
	fr_analyze(s, &rep);
	r->fr_lines = json_incref(rep.lines);
	r->fr_findings = json_incref(rep.findings);
	fr_report_free(&rep);
}
