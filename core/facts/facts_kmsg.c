/*
 * The kernel log as facts: the Xid, SXid, AER and NIC events since boot (or
 * since roots->since), counted per device and kind, each with its last line,
 * so that collcheck turns them into findings (cmd/collcheck/health.c).
 *
 * The log is /dev/kmsg, read without blocking record by record until EAGAIN;
 * reading it needs root or CAP_SYSLOG where kernel.dmesg_restrict is set, and
 * "kmsg" then says so as its skip. Tests give a file instead: COLL_KMSG_FILE,
 * or ROOT/dev/kmsg under a fixture root (never the host's log then), in
 * /dev/kmsg's record format or as dmesg lines. Kernel times count from boot;
 * the boot's wall time is /proc/stat's btime (under the root, so fixtures
 * set it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "facts.h"
#include "facts_kmsg.h"
#include "plat_file.h"
#include "xmalloc.h"

#define KMSG_KEYS 256			/* distinct events kept; the rest only counted */
#define KMSG_RECORDS (1 << 20)		/* records read at most: a flooding log ends too */
#define KMSG_FILE_MAX (256u << 20)	/* bytes of a test's file read at most */
#define KMSG_LAST_MAX 300		/* the last line's bytes a fact keeps */

struct kmsg_ent {
	char key[FACTS_KEY_MAX];
	long count;
	char last[KMSG_LAST_MAX];
};

struct kmsg_acc {
	double cut_usec;	/* records before this are left out; <0: none */
	long records, events, dropped;
	long untimed;		/* left out under --since: lines with no time to cut by */
	int n;
	struct kmsg_ent e[KMSG_KEYS];
};

static const char *const facts_kmsg_prefix[] = { "", "xid", "sxid", "aer", "nic" };

static void
facts_kmsg_add(struct kmsg_acc *acc, const char *line, size_t len)
{
	struct kmsg_rec r;
	struct kmsg_event ev;
	char key[FACTS_KEY_MAX];
	int i;

	if (facts_kmsg_parse(line, len, &r) != 0)
		return;
	if (acc->cut_usec >= 0 && r.usec >= 0 && (double)r.usec < acc->cut_usec)
		return;
	/* dmesg -T's or journalctl's lines: of any age, and old Xids are errors: left out. */
	if (acc->cut_usec >= 0 && r.usec < 0) {
		acc->untimed++;
		return;
	}
	acc->records++;
	if (facts_kmsg_classify(r.text, &ev) == KMSG_NONE)
		return;
	acc->events++;
	snprintf(key, sizeof key, "kmsg.%s.%s.%s", facts_kmsg_prefix[ev.kind], ev.dev, ev.what);
	for (i = 0; i < acc->n && strcmp(acc->e[i].key, key) != 0; i++)
		;
	if (i == acc->n) {
		if (acc->n == KMSG_KEYS) {
			acc->dropped++;
			return;
		}
		snprintf(acc->e[acc->n++].key, FACTS_KEY_MAX, "%s", key);
	}
	acc->e[i].count++;
	snprintf(acc->e[i].last, sizeof acc->e[i].last, "%.*s", KMSG_LAST_MAX - 1, r.text);
}

/* /dev/kmsg: one record per read; EPIPE says records were overwritten while we read. */
static int
facts_kmsg_dev(struct kmsg_acc *acc, int fd)
{
	char buf[8192];

	for (long k = 0; k < KMSG_RECORDS; k++) {
		ssize_t n = read(fd, buf, sizeof buf);

		if (n > 0)
			facts_kmsg_add(acc, buf, (size_t)n);
		else if (n < 0 && (errno == EPIPE || errno == EINTR || errno == EINVAL))
			continue;
		else
			return n < 0 && errno != EAGAIN ? -1 : 0;
	}
	return 0;
}

/* A file of lines; a line past the buffer is cut (its rest skipped). */
static int
facts_kmsg_file(struct kmsg_acc *acc, int fd)
{
	char buf[65536];
	size_t have = 0, total = 0;
	int skip = 0;
	ssize_t n;

	while (total < KMSG_FILE_MAX && (n = read(fd, buf + have, sizeof buf - have)) > 0) {
		size_t len = have + (size_t)n, off = 0;
		char *nl;

		total += (size_t)n;
		while ((nl = memchr(buf + off, '\n', len - off)) != NULL) {
			if (!skip)
				facts_kmsg_add(acc, buf + off, (size_t)(nl - buf - off));
			skip = 0;
			off = (size_t)(nl - buf) + 1;
		}
		have = len - off;
		memmove(buf, buf + off, have);
		if (have == sizeof buf) {
			if (!skip)
				facts_kmsg_add(acc, buf, have);
			skip = 1;
			have = 0;
		}
	}
	if (have > 0 && !skip)
		facts_kmsg_add(acc, buf, have);
	return n < 0 ? -1 : 0;
}

/* The boot's wall time: btime of /proc/stat, else the clocks' difference. */
static double
facts_kmsg_boot(const char *root)
{
	char buf[8192], *p;
	struct timespec rt, mono;

	if (plat_file_read(root, "/proc/stat", buf, sizeof buf) > 0 &&
	    (p = strstr(buf, "\nbtime ")) != NULL)
		return strtod(p + 7, NULL);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &mono);
	return (double)(rt.tv_sec - mono.tv_sec) + (rt.tv_nsec - mono.tv_nsec) / 1e9;
}

static void
facts_kmsg_put(struct facts *f, const struct kmsg_acc *acc, const char *src, double since)
{
	char when[64] = "boot";

	if (since > 0) {
		time_t t = (time_t)since;
		struct tm tm;

		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
	}
	facts_add(f, "kmsg", "%ld records of %s since %s, %ld events%s%s", acc->records, src, when,
	    acc->events, acc->dropped ? " (some devices not itemized)" : "",
	    acc->untimed ? " (lines with no time left out: give --since a log with times)" : "");
	for (int i = 0; i < acc->n; i++)
		facts_add(f, acc->e[i].key, "%ld: %s", acc->e[i].count, acc->e[i].last);
}

void
facts_read_kmsg(struct facts *f, const struct facts_roots *r)
{
	const char *file = getenv("COLL_KMSG_FILE");
	char path[4096];
	struct kmsg_acc *acc;
	struct stat st;
	int fd, dev, rc, e;

	if (file != NULL && file[0] != '\0')
		snprintf(path, sizeof path, "%s", file);
	else if (plat_file_path(r->root, "/dev/kmsg", path, sizeof path) != 0) {
		facts_skip(f, "kmsg", "fixture root too long");
		return;
	}
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		e = errno;
		if (e == ENOENT && r->root != NULL && (file == NULL || file[0] == '\0'))
			facts_skip(f, "kmsg", "no dev/kmsg in the fixture tree");
		else if ((e == EPERM || e == EACCES) && strcmp(path, "/dev/kmsg") == 0)
			facts_skip(f, "kmsg", "needs root or CAP_SYSLOG (%s: %s)", path, strerror(e));
		else
			facts_skip(f, "kmsg", "cannot open %s: %s", path, strerror(e));
		return;
	}
	dev = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
	if (!dev && !(fstat(fd, &st) == 0 && S_ISREG(st.st_mode))) {
		facts_skip(f, "kmsg", "%s is neither the kernel log nor a file", path);
		close(fd);
		return;
	}
	acc = xcalloc(1, sizeof *acc);
	acc->cut_usec = r->since > 0 ? (r->since - facts_kmsg_boot(r->root)) * 1e6 : -1;
	rc = dev ? facts_kmsg_dev(acc, fd) : facts_kmsg_file(acc, fd);
	e = errno;
	close(fd);
	if (rc != 0 && (e == EPERM || e == EACCES) && acc->records == 0)
		facts_skip(f, "kmsg", "needs root or CAP_SYSLOG (%s: %s)", path, strerror(e));
	else if (rc != 0 && acc->records == 0)
		facts_skip(f, "kmsg", "cannot read %s: %s", path, strerror(e));
	else
		facts_kmsg_put(f, acc, dev ? "the kernel log" : path, r->since);
	free(acc);
}
