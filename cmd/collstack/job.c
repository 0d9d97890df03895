/*
 * Which job: collrun leaves a record per running job in the job directory
 * (core/launch/jobrec.c); collstack with no selection takes this user's
 * newest, --job ID the one named (a prefix of its id will do, when only one
 * job has it). The record says the job id its ranks carry in COLL_JOBID, the
 * launcher, and the hosts the workers must go to.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collstack.h"
#include "err.h"
#include "jobrec.h"
#include "msg.h"
#include "regfile.h"
#include "status.h"
#include "xmalloc.h"

/* The distinct hosts of the record's ranks, comma-joined; NULL when all are local. */
static char *
stk_job_hosts(json_t *rec, const char *launcher)
{
	json_t *ranks = json_object_get(rec, "ranks"), *r;
	size_t i, len = 1;
	char *out;

	if (strcmp(launcher, "ssh") != 0 || !json_is_array(ranks))
		return NULL;
	json_array_foreach(ranks, i, r)
		if (json_is_string(json_object_get(r, "host")))
			len += strlen(json_string_value(json_object_get(r, "host"))) + 1;
	out = xcalloc(len, 1);
	json_array_foreach(ranks, i, r) {
		const char *h = json_string_value(json_object_get(r, "host"));
		size_t hl = h ? strlen(h) : 0;
		const char *p = out;
		int seen = 0;

		while (h && !seen && (p = strstr(p, h)) != NULL) {
			seen = (p == out || p[-1] == ',') && (p[hl] == ',' || p[hl] == '\0');
			p += hl;
		}
		if (h == NULL || seen || hl == 0 || strchr(h, ',') != NULL)
			continue;
		if (out[0] != '\0')
			strcat(out, ",");
		strcat(out, h);
	}
	return out;
}

#define STK_JOB_MAX (16u << 20)	/* a record of 10^5 ranks is a few MB */

/*
 * A record, read as a file its owner may have swapped (root reads another
 * user's with --user): no link followed, no FIFO blocked on, bounded.
 */
static json_t *
stk_job_read(const char *dir, const char *name)
{
	char path[8192], *buf = NULL;
	struct stat sb;
	json_t *rec = NULL;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (regfile_open(path, O_NOFOLLOW, &fd, &sb) != COLL_OK)
		return NULL;
	if (sb.st_size >= 0 && (size_t)sb.st_size <= STK_JOB_MAX) {
		buf = xmalloc((size_t)sb.st_size + 1);
		n = pread(fd, buf, (size_t)sb.st_size, 0);
	}
	close(fd);
	if (n >= 0)
		rec = json_loadb(buf, (size_t)n, 0, NULL);
	free(buf);
	return rec;
}

static json_t *
stk_job_load(const char *dir, const char *name, char *err, size_t len)
{
	char q[MSG_QUOTE_LEN(200)];
	json_t *rec = stk_job_read(dir, name);
	const char *id = json_string_value(json_object_get(rec, "jobid"));

	if (id == NULL || strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16 ||
	    !json_is_string(json_object_get(rec, "launcher"))) {
		snprintf(err, len, "job record %s/%s is malformed: remove it", dir,
		    msg_quote(q, name, strlen(name), 200));
		json_decref(rec);
		return NULL;
	}
	return rec;
}

/* A collrun killed but not yet reaped (its parent a script that does not wait) is gone too. */
static int
stk_job_pid_runs(pid_t pid)
{
	char st;

	if (kill(pid, 0) != 0 && errno != EPERM)
		return 0;
	st = stack_state(pid, NULL);
	return st != 0 && st != 'Z' && st != 'X';
}

/*
 * A path for a message, and whether a shell may be given it: as it is when it
 * holds nothing a shell or terminal would take for more; else quoted for the
 * eye only (*plain = 0): the record and its status directory are another
 * user's words, and a command built of them must not be offered to paste.
 */
static const char *
stk_job_path(char *buf, size_t len, const char *path, int *plain)
{
	if (strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-:@,") ==
	    strlen(path) && path[0] != '-' && len >= strlen(path) + 1) {
		snprintf(buf, len, "%s", path);
		return buf;
	}
	*plain = 0;
	return len >= MSG_QUOTE_LEN(200) ? msg_quote(buf, path, strlen(path), 200) : "?";
}

/*
 * The owner's status pages of job id in dir (their names begin coll.ID.);
 * *foreign is set when a file of anyone else's matches too (a glob would
 * remove it).
 */
static int
stk_job_pages_left(const char *dir, const char *id, uid_t owner, int *foreign)
{
	char prefix[40], path[8192];
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int n = 0;

	*foreign = 0;
	snprintf(prefix, sizeof prefix, "coll.%s.", id);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == owner)
			n++;
		else
			*foreign = 1;
	}
	closedir(d);
	return n;
}

/* The owner's processes here that carry COLL_JOBID id (a job whose collrun was killed), pids into buf. */
static int
stk_job_procs_left(const char *id, uid_t owner, char *buf, size_t len)
{
	struct stk_proctab t;
	char err[256];
	size_t at = 0;
	int n = 0;

	buf[0] = '\0';
	if (stk_proctab_read(&t, owner, err, sizeof err) < 0)
		return 0;
	for (int i = 0; i < t.n; i++) {
		const struct stack_pinfo *pi = &t.pi[i];

		if (strcmp(pi->jobid, id) != 0 || pi->uid != owner || pi->pid == getpid() ||
		    pi->state == 'Z' || pi->state == 0)
			continue;
		if (at + 16 < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%d", n ? "," : "", (int)pi->pid);
		n++;
	}
	free(t.pi);
	return n;
}

/*
 * What a record whose collrun is gone leaves: its processes still running
 * here (read them by pid), or its record and status pages (the files to
 * remove: no command of coll's removes them, and another user's are not
 * ours to name). One sentence into err.
 */
static void
stk_job_leftover(const char *dir, const char *name, uid_t owner, char *err, size_t len)
{
	char rpath[8192], sdir[4096], q1[MSG_QUOTE_LEN(200)], q2[MSG_QUOTE_LEN(200)], pids[256];
	json_t *rec = stk_job_read(dir, name);
	const char *id = json_string_value(json_object_get(rec, "jobid"));
	const char *sd = json_string_value(json_object_get(rec, "status_dir"));
	json_int_t lp = json_integer_value(json_object_get(rec, "launcher_pid"));
	int np, nproc, n, plain = 1, foreign;

	snprintf(rpath, sizeof rpath, "%s/%s", dir, name);
	if (id == NULL || strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
		snprintf(err, len, "job record %s is malformed: remove it",
		    stk_job_path(q1, sizeof q1, rpath, &plain));
		json_decref(rec);
		return;
	}
	snprintf(sdir, sizeof sdir, "%s", sd != NULL && sd[0] == '/' ? sd : status_dir());
	if ((nproc = stk_job_procs_left(id, owner, pids, sizeof pids)) > 0) {
		snprintf(err, len, "job %s: its collrun (pid %lld) is gone but %d of its processes "
		    "still run%s here: read them with collstack --pid %s", id, (long long)lp, nproc,
		    nproc == 1 ? "s" : "", pids);
		json_decref(rec);
		return;
	}
	np = stk_job_pages_left(sdir, id, owner, &foreign);
	stk_job_path(q1, sizeof q1, rpath, &plain);
	stk_job_path(q2, sizeof q2, sdir, &plain);
	n = snprintf(err, len, "job %s: its collrun (pid %lld) is gone and none of its processes "
	    "runs here; its record (%s)", id, (long long)lp, q1);
	if (np > 0 && n > 0 && (size_t)n < len)
		n += snprintf(err + n, len - (size_t)n, " and %d status page%s", np, np == 1 ? "" : "s");
	if (n <= 0 || (size_t)n >= len) {
		json_decref(rec);
		return;
	}
	if (!plain || foreign)	/* no command to paste: name the place */
		snprintf(err + n, len - (size_t)n, " %s left over%s%s: remove %s by hand",
		    np > 0 ? "are" : "is", np > 0 ? " in " : "", np > 0 ? q2 : "",
		    np > 0 ? "them" : "it");
	else if (np == 0)
		snprintf(err + n, len - (size_t)n, " is left over: remove it with rm %s", q1);
	else
		snprintf(err + n, len - (size_t)n, " are left over: remove them with rm %s %s/coll.%s.*",
		    q1, q2, id);
	json_decref(rec);
}

/* Is the collrun that wrote the record still there? A crashed one leaves its record behind. */
static int
stk_job_alive(const char *dir, const char *name)
{
	json_t *rec, *lp;
	int alive = 0;

	if ((rec = stk_job_read(dir, name)) == NULL)
		return 1;	/* malformed: stk_job_load says so */
	lp = json_object_get(rec, "launcher_pid");
	if (!json_is_integer(lp) || json_integer_value(lp) <= 0 ||
	    json_integer_value(lp) > INT32_MAX)
		alive = 1;
	else
		alive = stk_job_pid_runs((pid_t)json_integer_value(lp));
	json_decref(rec);
	return alive;
}

/* The newest of the records in dir so far: keeps name if (mtime) is newer than *best. */
static void
stk_job_newer(const struct stat *sb, const char *d_name, long long *best, char *name,
    size_t namelen)
{
	long long t = (long long)sb->st_mtime * 1000000000LL + sb->st_mtim.tv_nsec;

	if (t > *best) {
		*best = t;
		snprintf(name, namelen, "%s", d_name);
	}
}

/* Nothing runs: what is left over of the newest job, or that there is nothing. */
static void
stk_job_none(const char *dir, const char *want, int found, int stale, const char *gone,
    uid_t owner, char *err, size_t len)
{
	char more[64] = "";

	if (want != NULL && found > 1) {
		snprintf(err, len, "--job %s matches %d jobs: give more of the id", want, found);
	} else if (want != NULL) {
		snprintf(err, len, "no job %s in %s: collrun keeps a record only while the job "
		    "runs; give --pid, --match or --slurm", want, dir);
	} else if (stale > 0) {
		stk_job_leftover(dir, gone, owner, err, len);
		if (stale > 1)
			snprintf(more, sizeof more, " (and %d older records of ended jobs there)",
			    stale - 1);
		snprintf(err + strlen(err), len - strlen(err), "%s", more);
	} else {
		snprintf(err, len, "no collrun job is running as this user; name the processes "
		    "with --pid, --match or --slurm");
	}
}

/*
 * The record's file among the directory's: the newest whose collrun runs,
 * or the one whose id starts with want. A job whose collrun is gone is said
 * with what it left (stk_job_leftover).
 */
static int
stk_job_pick(const char *dir, const char *want, uid_t owner, char *name, size_t namelen,
    char *err, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	long long best = -1, best_gone = -1;
	char gone[512] = "";
	int found = 0, stale = 0;

	if (d == NULL) {
		snprintf(err, len, "no job to look at: no collrun job is running as this user "
		    "(%s does not exist); name the processes with --pid, --match or --slurm", dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char path[8192];
		struct stat sb;
		size_t l = strlen(de->d_name);

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		if (want == NULL && !stk_job_alive(dir, de->d_name)) {
			stale++;
			stk_job_newer(&sb, de->d_name, &best_gone, gone, sizeof gone);
			continue;
		}
		if (want == NULL || strncmp(de->d_name, want, strlen(want)) == 0) {
			stk_job_newer(&sb, de->d_name, &best, name, namelen);
			found++;
		}
	}
	closedir(d);
	if (want != NULL && found == 1 && !stk_job_alive(dir, name)) {
		stk_job_leftover(dir, name, owner, err, len);
		return -1;
	}
	if (found == 1 || (want == NULL && found > 0))
		return 0;
	stk_job_none(dir, want, found, stale, gone, owner, err, len);
	return -1;
}

int
stk_job_find(const char *want, const char *user, char *jobid, size_t idlen, char **hosts,
    char **launcher, char *err, size_t len)
{
	char dir[4096], name[512];
	struct stk_evidence ev;
	json_t *rec;
	int r;

	*hosts = *launcher = NULL;
	if (stk_evidence_init(&ev, user, err, len) != 0)
		return -1;
	/* Root looking at a user's job reads that user's records, never makes them. */
	if ((r = jobrec_dir_of(ev.owner, dir, sizeof dir)) == COLL_ENOTFOUND) {
		snprintf(err, len, "no job to look at: user %s runs no collrun job (%s does not "
		    "exist); name the processes with --pid, --match or --slurm", user ? user : "this user", dir);
		return -1;
	}
	if (r != COLL_OK) {
		snprintf(err, len, "job directory %s: %s", dir, coll_strerror(r));
		return -1;
	}
	if (stk_job_pick(dir, want, ev.owner, name, sizeof name, err, len) != 0)
		return -1;
	if ((rec = stk_job_load(dir, name, err, len)) == NULL)
		return -1;
	snprintf(jobid, idlen, "%s", json_string_value(json_object_get(rec, "jobid")));
	*launcher = xstrdup(json_string_value(json_object_get(rec, "launcher")));
	*hosts = stk_job_hosts(rec, *launcher);
	json_decref(rec);
	return 0;
}

/* The ids of this user's (or --user's) running collrun jobs, from their records; the count. */
int
stk_job_ids(const char *user, char (**ids)[24])
{
	char dir[4096], err[256];
	struct stk_evidence ev;
	struct dirent *de;
	DIR *d;
	int n = 0;

	*ids = NULL;
	if (stk_evidence_init(&ev, user, err, sizeof err) != 0 ||
	    jobrec_dir_of(ev.owner, dir, sizeof dir) != COLL_OK || (d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < 256) {
		size_t l = strlen(de->d_name);
		json_t *rec;
		const char *id;

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 ||
		    !stk_job_alive(dir, de->d_name))
			continue;
		if ((rec = stk_job_load(dir, de->d_name, err, sizeof err)) == NULL)
			continue;
		if ((id = json_string_value(json_object_get(rec, "jobid"))) == NULL) {
			json_decref(rec);
			continue;	/* not a record collrun wrote: no id to name */
		}
		*ids = xreallocarray(*ids, (size_t)n + 1, sizeof **ids);
		snprintf((*ids)[n++], sizeof **ids, "%s", id);
		json_decref(rec);
	}
	closedir(d);
	return n;
}
