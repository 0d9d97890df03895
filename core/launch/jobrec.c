#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "jobrec.h"
#include "status.h"

/*
 * Make sure dir is a directory fit for job records, which collstack trusts
 * (pids it will signal): created 0700 when missing (whatever the umask);
 * when it exists, refused unless it is a directory itself (not a link), ours,
 * and not writable by group or others, who could plant or swap records.
 */
static int
jobrec_dir_check(const char *dir, uid_t uid)
{
	struct stat sb;

	if (lstat(dir, &sb) == -1)
		return errno == ENOENT ? COLL_ENOTFOUND : COLL_ESYS;
	if (!S_ISDIR(sb.st_mode))
		return COLL_EUNSAFE;
	if (sb.st_uid != uid)
		return COLL_EOWNER;
	return (sb.st_mode & (S_IWGRP | S_IWOTH)) ? COLL_EUNSAFE : COLL_OK;
}

static int
jobrec_dir_ensure(const char *dir)
{
	if (mkdir(dir, 0700) == 0)
		return chmod(dir, 0700) == 0 ? COLL_OK : COLL_ESYS;
	if (errno != EEXIST)
		return COLL_ESYS;
	return jobrec_dir_check(dir, geteuid());
}

/* base/sub, each level made ours (0700) on the way: dir then names the one at fault. */
static int
jobrec_dir_under(const char *base, const char *sub, char *buf, size_t len)
{
	int r;

	if ((size_t)snprintf(buf, len, "%s", base) >= len)
		return COLL_ETOOBIG;
	if ((r = jobrec_dir_ensure(buf)) != COLL_OK)
		return r;
	for (const char *p = sub; p != NULL && *p != '\0'; p = strchr(p + 1, '/')) {
		const char *end = strchr(p + 1, '/');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if ((size_t)snprintf(buf + strlen(buf), len - strlen(buf), "%.*s", n, p) >=
		    len - strlen(buf))
			return COLL_ETOOBIG;
		if ((r = jobrec_dir_ensure(buf)) != COLL_OK)
			return r;
	}
	return COLL_OK;
}

/*
 * Where records go when another user holds /tmp/coll-<uid> (anyone may make
 * it first, in a world-writable /tmp): the user's runtime directory, else
 * ~/.cache/coll, home taken from the password database, not the environment.
 */
static int
jobrec_dir_fallback(char *buf, size_t len)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	struct passwd *pw;

	if (run != NULL && run[0] == '/' && jobrec_dir_under(run, "/coll/jobs", buf, len) == COLL_OK)
		return COLL_OK;
	if ((pw = getpwuid(geteuid())) == NULL || pw->pw_dir == NULL || pw->pw_dir[0] != '/')
		return COLL_ENOTFOUND;
	return jobrec_dir_under(pw->pw_dir, "/.cache/coll/jobs", buf, len);
}

const char *
jobrec_tmp(void)
{
	const char *t = getenv("TMPDIR");

	return t != NULL && t[0] == '/' ? t : "/tmp";
}

int
jobrec_dir(char *buf, size_t len)
{
	const char *d = getenv("COLL_JOB_DIR");
	char top[4096];
	int r;

	if (d != NULL && *d != '\0') {
		/* A cut-short name would be some other directory: refuse it instead. */
		if ((size_t)snprintf(buf, len, "%s", d) >= len)
			return COLL_ETOOBIG;
		return jobrec_dir_ensure(buf);
	}
	/* The temporary directory is everyone's: coll-<uid> must be ours before jobs/ in it is. */
	snprintf(top, sizeof top, "%s/coll-%u", jobrec_tmp(), (unsigned)geteuid());
	r = jobrec_dir_under(top, "/jobs", buf, len);
	if ((r == COLL_EOWNER || r == COLL_EUNSAFE) && strcmp(buf, top) == 0 &&
	    jobrec_dir_fallback(buf, len) == COLL_OK)
		return COLL_OK;
	return r;
}

/* base/sub for reading uid's records: every level there, uid's and private; made nowhere. */
static int
jobrec_dir_found(const char *base, const char *sub, uid_t uid, char *buf, size_t len)
{
	const char *p = sub;
	int r;

	if ((size_t)snprintf(buf, len, "%s", base) >= len)
		return COLL_ETOOBIG;
	for (;;) {
		if ((r = jobrec_dir_check(buf, uid)) != COLL_OK || p == NULL || *p == '\0')
			return r;
		const char *end = strchr(p + 1, '/');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if ((size_t)snprintf(buf + strlen(buf), len - strlen(buf), "%.*s", n, p) >=
		    len - strlen(buf))
			return COLL_ETOOBIG;
		p = end;
	}
}

int
jobrec_dir_of(uid_t uid, char *buf, size_t len)
{
	const char *d = getenv("COLL_JOB_DIR");
	struct passwd *pw;
	char top[4096];

	if (uid == geteuid())
		return jobrec_dir(buf, len);
	if (d != NULL && *d != '\0')
		return (size_t)snprintf(buf, len, "%s", d) >= len ? COLL_ETOOBIG : COLL_OK;
	snprintf(top, sizeof top, "%s/coll-%u", jobrec_tmp(), (unsigned)uid);
	if (jobrec_dir_found(top, "/jobs", uid, buf, len) == COLL_OK)
		return COLL_OK;
	/* That user's fallbacks (jobrec_dir): their runtime directory, their home. */
	snprintf(top, sizeof top, "/run/user/%u", (unsigned)uid);
	if (jobrec_dir_found(top, "/coll/jobs", uid, buf, len) == COLL_OK)
		return COLL_OK;
	if ((pw = getpwuid(uid)) != NULL && pw->pw_dir != NULL && pw->pw_dir[0] == '/' &&
	    jobrec_dir_found(pw->pw_dir, "/.cache/coll/jobs", uid, buf, len) == COLL_OK)
		return COLL_OK;
	snprintf(buf, len, "%s/coll-%u/jobs", jobrec_tmp(), (unsigned)uid);
	return COLL_ENOTFOUND;
}

static json_t *
jobrec_json(const struct jobrec *j)
{
	json_t *root = json_object(), *argv = json_array(), *ranks = json_array();
	char id[17];

	snprintf(id, sizeof id, "%016" PRIx64, j->jobid);
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "jobid", json_string(id));
	json_object_set_new(root, "launcher", json_string(j->launcher));
	json_object_set_new(root, "launcher_pid", json_integer(j->launcher_pid));
	json_object_set_new(root, "started", json_integer((json_int_t)time(NULL)));
	json_object_set_new(root, "status_dir", json_string(status_dir()));
	for (char *const *a = j->argv; a != NULL && *a != NULL; a++)
		json_array_append_new(argv, json_string(*a));
	json_object_set_new(root, "argv", argv);
	json_object_set_new(root, "nranks", json_integer(j->nranks));
	for (int i = 0; i < j->nranks; i++) {
		json_t *r = json_object();
		json_object_set_new(r, "rank", json_integer(j->ranks[i].rank));
		json_object_set_new(r, "host", json_string(j->ranks[i].host));
		json_object_set_new(r, "pid", json_integer(j->ranks[i].pid));
		json_array_append_new(ranks, r);
	}
	json_object_set_new(root, "ranks", ranks);
	return root;
}

int
jobrec_write(const struct jobrec *j, char *path, size_t len)
{
	char tmp[4200];
	json_t *root;
	int r, e;

	/* On a refused directory, path names it: the caller says which one. */
	if ((r = jobrec_dir(path, len)) != COLL_OK)
		return r;
	if (strlen(path) + sizeof "/0123456789abcdef.json" > len ||
	    strlen(path) + sizeof "/0123456789abcdef.json.tmp" > sizeof tmp)
		return COLL_ETOOBIG;
	snprintf(path + strlen(path), len - strlen(path), "/%016" PRIx64 ".json", j->jobid);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	root = jobrec_json(j);
	r = json_dump_file(root, tmp, JSON_INDENT(1)) == 0 ? COLL_OK : COLL_ESYS;
	json_decref(root);
	if (r == COLL_OK && rename(tmp, path) == -1)
		r = COLL_ESYS;
	if (r != COLL_OK) {
		e = errno;	/* the caller reports why it failed, not why unlink did */
		unlink(tmp);
		errno = e;
	}
	return r;
}
