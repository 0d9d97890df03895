/*
 * collcheck --prometheus FILE: the check's outcome for node_exporter's
 * textfile collector, which reads every *.prom file of one directory at each
 * scrape. So the file is never seen half written: the text goes to a new
 * file beside it (O_EXCL | O_NOFOLLOW: nothing another user put there is
 * followed or truncated), which is then renamed over FILE; a failure removes
 * it. The temporary name does not end in .prom, so the collector skips it,
 * and ends in random hex, so another user cannot take it first.
 *
 * A run that ends with no report (a timeout, every host gone, a bad record)
 * still writes FILE, saying so: the last run's success must not stay.
 *
 * Every series carries mode (all, env, links): the checks may write files of
 * their own into the same directory without one series coming twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "msg.h"
#include "promtext.h"
#include "xmalloc.h"

static const char *const prom_sev[] = { "ok", "info", "warn", "error", "unreachable" };

static const char *
prom_sev_name(int sev)
{
	return sev >= SEV_OK && sev <= SEV_UNREACHABLE ? prom_sev[sev] : "unknown";
}

static const char *
prom_host(const struct check_result *r, int h)
{
	return h >= 0 && h < r->nhosts && r->hosts[h].name != NULL ? r->hosts[h].name : "";
}

/* Findings of the same host, check and severity make one series, their count. */
static void
prom_findings(struct promtext *t, const struct check_result *r, const char *mode)
{
	const char *lab[] = { "mode", mode, "host", NULL, "check", NULL, "severity", NULL, NULL };

	promtext_family(t, "coll_check_finding", "gauge", "Findings of this host, check and "
	    "severity (host \"\": the cluster as a whole)");
	for (int i = 0; i < r->nfind; i++) {
		const struct check_finding *f = &r->find[i];
		int n = 0, seen = 0;

		for (int k = 0; k < r->nfind && !seen; k++) {
			const struct check_finding *g = &r->find[k];
			int same = g->host == f->host && g->sev == f->sev && strcmp(g->key, f->key) == 0;

			seen = same && k < i;
			n += same;
		}
		if (seen)
			continue;
		lab[3] = prom_host(r, f->host);
		lab[5] = f->key;
		lab[7] = prom_sev_name(f->sev);
		promtext_sample(t, "coll_check_finding", lab, n);
	}
}

static void
prom_render(struct promtext *t, const struct check_result *r, const char *mode, int code)
{
	const char *lab[] = { "mode", mode, "severity", NULL, NULL };
	int count[SEV_UNREACHABLE + 1] = { 0 }, gone = 0;

	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].sev >= SEV_OK && r->find[i].sev <= SEV_UNREACHABLE)
			count[r->find[i].sev]++;
	for (int h = 0; h < r->nhosts; h++)
		gone += r->hosts[h].rank < 0;
	promtext_family(t, "coll_check_success", "gauge", "1: the check found nothing of "
	    "severity WARN or worse");
	promtext_sample(t, "coll_check_success", lab, code == EXIT_OK);
	promtext_family(t, "coll_check_completed", "gauge", "1: the check ran to its report");
	promtext_sample(t, "coll_check_completed", lab, 1);
	promtext_family(t, "coll_check_findings", "gauge", "Findings of each severity");
	for (int s = SEV_INFO; s <= SEV_UNREACHABLE; s++) {
		lab[3] = prom_sev[s];
		promtext_sample(t, "coll_check_findings", lab, count[s]);
	}
	lab[2] = NULL;
	promtext_family(t, "coll_check_hosts", "gauge", "Hosts checked");
	promtext_sample(t, "coll_check_hosts", lab, r->nhosts);
	promtext_family(t, "coll_check_hosts_unreachable", "gauge", "Hosts that never answered");
	promtext_sample(t, "coll_check_hosts_unreachable", lab, gone);
	prom_findings(t, r, mode);
	promtext_family(t, "coll_check_last_run_timestamp_seconds", "gauge", "When the check "
	    "ended (Unix time)");
	promtext_sample(t, "coll_check_last_run_timestamp_seconds", lab, (double)time(NULL));
}

int
check_prom_dir(const char *path, char *err, size_t len)
{
	char *copy = xstrdup(path), *dir = dirname(copy);
	struct stat st;
	int r = 0;

	if (path[0] == '\0' || path[strlen(path) - 1] == '/' ||
	    (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		snprintf(err, len, "--prometheus '%s' is a directory: name the file (for "
		    "node_exporter's textfile collector, ending in .prom)", path);
		r = -1;
	} else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
		snprintf(err, len, "--prometheus '%s': cannot write in directory '%s': %s", path, dir,
		    stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) ? "not a directory" :
		    strerror(errno));
		r = -1;
	}
	msg_clean(err);
	free(copy);
	return r;
}

/* All of t into fd; -1 with errno. */
static int
prom_write_all(int fd, const struct promtext *t)
{
	size_t off = 0;
	ssize_t n;

	while (off < t->len) {
		if ((n = write(fd, t->p + off, t->len - off)) < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return fsync(fd);
}

/* A temporary name beside FILE, created here: random, so nobody has it first. */
static int
prom_temp(const char *path, char **tmp)
{
	unsigned long long rnd;
	int fd = -1;

	for (int i = 0; i < 8 && fd < 0; i++) {
		if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			rnd = ((unsigned long long)getpid() << 32) ^ (unsigned long long)clock() ^
			    (unsigned long long)i;	/* no entropy: EEXIST still retries */
		free(*tmp);
		*tmp = xasprintf("%s.%016llx.tmp", path, rnd);
		fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	return fd;
}

/* T into FILE, through a temporary renamed over it. */
static int
prom_put(const struct promtext *t, const char *path, char *err, size_t len)
{
	char *tmp = NULL;
	int fd, rc = -1, e;

	if ((fd = prom_temp(path, &tmp)) < 0) {
		snprintf(err, len, "--prometheus: cannot create '%s': %s", tmp, strerror(errno));
		goto out;
	}
	e = prom_write_all(fd, t) != 0 ? errno : 0;
	if (close(fd) != 0 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) != 0)
		e = errno;
	if (e != 0) {
		snprintf(err, len, "--prometheus: cannot write '%s': %s", path, strerror(e));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	msg_clean(err);
	free(tmp);
	return rc;
}

int
check_prom_write(const struct check_result *r, const struct check_args *a, int code,
    char *err, size_t len)
{
	struct promtext t = { 0 };
	int rc;

	prom_render(&t, r, a->cmd->name != NULL ? a->cmd->name : "all", code);
	rc = prom_put(&t, a->prometheus, err, len);
	promtext_free(&t);
	return rc;
}

int
check_prom_fail(const struct check_args *a, const char *reason, char *err, size_t len)
{
	const char *mode = a->cmd->name != NULL ? a->cmd->name : "all";
	const char *lab[] = { "mode", mode, NULL, NULL, NULL };
	struct promtext t = { 0 };
	int rc;

	promtext_family(&t, "coll_check_success", "gauge", "1: the check found nothing of "
	    "severity WARN or worse");
	promtext_sample(&t, "coll_check_success", lab, 0);
	promtext_family(&t, "coll_check_completed", "gauge", "1: the check ran to its report");
	lab[2] = "reason";
	lab[3] = reason;
	promtext_sample(&t, "coll_check_completed", lab, 0);
	lab[2] = NULL;
	promtext_family(&t, "coll_check_last_run_timestamp_seconds", "gauge", "When the check "
	    "ended (Unix time)");
	promtext_sample(&t, "coll_check_last_run_timestamp_seconds", lab, (double)time(NULL));
	rc = prom_put(&t, a->prometheus, err, len);
	promtext_free(&t);
	return rc;
}
