#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
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
jobrec_dir_ensure(const char *dir)
{
	struct stat sb;

	if (mkdir(dir, 0700) == 0)
		return chmod(dir, 0700) == 0 ? COLL_OK : COLL_ESYS;
	if (errno != EEXIST || lstat(dir, &sb) == -1)
		return COLL_ESYS;
	if (!S_ISDIR(sb.st_mode))
		return COLL_EUNSAFE;
	if (sb.st_uid != geteuid())
		return COLL_EOWNER;
	return (sb.st_mode & (S_IWGRP | S_IWOTH)) ? COLL_EUNSAFE : COLL_OK;
}

int
jobrec_dir(char *buf, size_t len)
{
	const char *d = getenv("COLL_JOB_DIR");
	int r;

	if (d != NULL && *d != '\0') {
		/* A cut-short name would be some other directory: refuse it instead. */
		if ((size_t)snprintf(buf, len, "%s", d) >= len)
			return COLL_ETOOBIG;
	} else {
		/* /tmp is everyone's: /tmp/coll-<uid> must be ours before jobs/ in it is. */
		snprintf(buf, len, "/tmp/coll-%u", (unsigned)geteuid());
		if ((r = jobrec_dir_ensure(buf)) != COLL_OK)
			return r;
		snprintf(buf, len, "/tmp/coll-%u/jobs", (unsigned)geteuid());
	}
	return jobrec_dir_ensure(buf);
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
