/*
 * PyTorch's flight recorder dumps (one per rank, named PREFIX<rank>: a
 * pickle, or JSON from dump_fr_trace_json), read into a set by rank: files, directories of them, or
 * prefixes, offline on dumps copied off a cluster, or a live job's sent on
 * by the workers (frlive.c). fr_match.c matches them across ranks.
 *
 * The dumps of one job are one user's: the caller's, or the one root names
 * with --user. In a directory others can write (a shared /tmp) anyone can
 * put a file at a dump's name, first, so a dump of another user is said as
 * ignored and left out, whichever rank's name it has. Files are opened O_NONBLOCK and O_NOFOLLOW and
 * read only if fstat says they are regular: a FIFO at a dump's name never
 * blocks the reader.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "fr.h"
#include "fr_impl.h"
#include "frjson.h"
#include "msg.h"
#include "pickle.h"
#include "regfile.h"
#include "user.h"
#include "xmalloc.h"

#define FR_FILE_MAX (512u << 20)

static int
fr_dump_cmp(const void *a, const void *b)
{
	const struct fr_dump *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The rank in a dump's name: the digits it ends in. */
static int
fr_rank_of(const char *path)
{
	size_t n = strlen(path), k = n;

	while (k > 0 && isdigit((unsigned char)path[k - 1]))
		k--;
	/* PyTorch writes the rank as it is: "07" is no rank's name. */
	if (k == n || n - k > 6 || (path[k] == '0' && n - k > 1))
		return -1;
	return atoi(path + k);
}

/*
 * Open a dump: never blocking (a FIFO at its name), never through a link,
 * a regular file of at most FR_FILE_MAX, fstat'ed into sb; NULL with why.
 */
static FILE *
fr_fopen(const char *path, struct stat *sb, char *err, size_t len)
{
	int fd, r = regfile_open(path, O_NOFOLLOW, &fd, sb);
	FILE *f;

	if (r == COLL_ESYS) {
		snprintf(err, len, "%s: %s", path, errno == ELOOP ? "a symbolic link: not "
		    "followed (name the dump itself)" : strerror(errno));
		return NULL;
	}
	if (r != COLL_OK || (uint64_t)sb->st_size > FR_FILE_MAX) {
		snprintf(err, len, "%s: not a regular file of at most %u MiB", path,
		    FR_FILE_MAX >> 20);
		if (r == COLL_OK)
			close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "rb")) == NULL) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

/*
 * Take one dump as rank (-1: from the digits its name ends in): opened and
 * fstat'ed only. It is parsed (fr_read) once its owner is known to be the
 * job's: a stranger's planted dumps, each up to FR_FILE_MAX of the slowest
 * JSON there is, are never parsed.
 */
static int
fr_load(struct fr_set *s, const char *path, int rank, char *err, size_t len)
{
	struct stat sb;
	FILE *f;

	if (rank < 0)
		rank = fr_rank_of(path);
	if (rank < 0) {
		snprintf(err, len, "%s: cannot tell its rank: PyTorch names a dump PREFIX<rank> "
		    "(TORCH_FR_DUMP_TEMP_FILE)", path);
		return -1;
	}
	if ((f = fr_fopen(path, &sb, err, len)) == NULL)
		return -1;
	fclose(f);
	s->d = xreallocarray(s->d, (size_t)s->n + 1, sizeof *s->d);
	s->d[s->n++] = (struct fr_dump){ rank, xstrdup(path), NULL, sb.st_uid };
	return 0;
}

/* Parse dump d, opened again: still its owner's (not swapped since), and a dump. */
static json_t *
fr_read_one(const struct fr_dump *d, char *err, size_t len)
{
	char why[256];
	struct stat sb;
	json_t *root;
	size_t got;
	uint8_t *buf;
	FILE *f;

	if ((f = fr_fopen(d->path, &sb, err, len)) == NULL)
		return NULL;
	if (sb.st_uid != d->uid) {
		fclose(f);
		snprintf(err, len, "%s: its owner changed while collstack read it", d->path);
		return NULL;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	got = fread(buf, 1, (size_t)sb.st_size, f);
	fclose(f);
	root = fr_parse(buf, got, why, sizeof why);
	free(buf);
	if (root == NULL)
		snprintf(err, len, "%s: not a flight recorder dump: %s", d->path, why);
	return root;
}

/* One more file passed over, and why (its name may be anyone's: made printable). */
static void
fr_skip(struct fr_set *s, const char *why)
{
	char *w = xstrdup(why);

	msg_clean(w);
	s->skipped = xreallocarray(s->skipped, (size_t)s->nskipped + 1, sizeof *s->skipped);
	s->skipped[s->nskipped++] = w;
}

static int
fr_dump_cmp_path(const void *a, const void *b)
{
	const struct fr_dump *x = a, *y = b;

	return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank) :
	    strcmp(x->path, y->path);
}

/*
 * Root named no user and none of the dumps is root's: they were copied off
 * a cluster. If they are all one user's, that user's are read, and said.
 * Dumps of several users cannot be told apart (in a shared directory anyone
 * can be first at a rank's name): refused, asking for --user.
 */
static int
fr_guess(struct fr_set *s, uid_t *owner, char *err, size_t len)
{
	char who[72], whose[72];

	for (int i = 0; i < s->n; i++)
		if (s->d[i].uid == 0)
			return 0;
	*owner = s->d[0].uid;
	user_name(*owner, who, sizeof who);
	for (int i = 1; i < s->n; i++)
		if (s->d[i].uid != *owner) {
			user_name(s->d[i].uid, whose, sizeof whose);
			snprintf(err, len, "the dumps are several users' (%s is user %s's, %s user "
			    "%s's) and none is root's: give --user to name the job's user",
			    s->d[0].path, who, s->d[i].path, whose);
			msg_clean(err);
			return -1;
		}
	s->note = xasprintf("none of the dumps is root's: they are all user %s's, and are read "
	    "(give --user to name the job's user)", who);
	msg_clean(s->note);
	return 0;
}

/* Leave out the dumps not owned by owner, each said; -1 if none is left. */
static int
fr_keep(struct fr_set *s, uid_t owner, const char *whose_dumps, char *err, size_t len)
{
	char who[72], whose[72], why[1024];
	int k = 0, n0 = s->n;

	user_name(owner, who, sizeof who);
	for (int i = 0; i < s->n; i++) {
		struct fr_dump *d = &s->d[i];

		if (d->uid == owner) {
			s->d[k++] = *d;
			continue;
		}
		user_name(d->uid, whose, sizeof whose);
		snprintf(why, sizeof why, "%s: ignored: owned by user %s, not by user %s %s",
		    d->path, whose, who, whose_dumps);
		fr_skip(s, why);
		free(d->path);
		json_decref(d->root);
	}
	s->n = k;
	if (k > 0)
		return 0;
	snprintf(err, len, "no dump of user %s: the %d found are other users' (%s)", who, n0,
	    geteuid() == 0 ? "give --user to read another user's" : "only your own are read");
	return -1;
}

/*
 * The job's user is the one who runs collstack, or the one root names with
 * --user: in a shared directory anyone can be first at a dump's name, so
 * whose a file is never decides it (but fr_guess). Another user's dumps are
 * ignored, and said; then a rank given twice is refused.
 */
static int
fr_owned(struct fr_set *s, uid_t owner, int guess, char *err, size_t len)
{
	const char *whose = "who runs collstack";

	if (s->n == 0)
		return 0;
	qsort(s->d, (size_t)s->n, sizeof *s->d, fr_dump_cmp_path);
	if (guess && fr_guess(s, &owner, err, len) != 0)
		return -1;
	if (s->note != NULL)
		whose = "whose are all the dumps";
	else if (owner != geteuid())
		whose = "named by --user";
	return fr_keep(s, owner, whose, err, len);
}

/* After parsing (a stray file at a rank's name is no dump): a rank given twice is refused. */
static int
fr_once(const struct fr_set *s, char *err, size_t len)
{
	for (int i = 1; i < s->n; i++)
		if (s->d[i].rank == s->d[i - 1].rank) {
			snprintf(err, len, "%s: rank %d's dump is given twice (also %s)", s->d[i].path,
			    s->d[i].rank, s->d[i - 1].path);
			msg_clean(err);
			return -1;
		}
	return 0;
}

/* Parse the dumps kept; one that is none is passed over, and said. -1 if none is left. */
static int
fr_read(struct fr_set *s, char *err, size_t len)
{
	int k = 0, n0 = s->n;

	for (int i = 0; i < s->n; i++) {
		struct fr_dump *d = &s->d[i];

		if ((d->root = fr_read_one(d, err, len)) != NULL) {
			s->d[k++] = *d;
			continue;
		}
		fr_skip(s, err);
		free(d->path);
	}
	if ((s->n = k) > 0)
		return fr_once(s, err, len);
	/* One file, and no dump: err says why as it is. */
	if (n0 > 1)
		snprintf(err, len, "no dump found (passed over %s)", s->skipped[s->nskipped - 1]);
	return -1;
}

/* A file, a directory of dumps, or a prefix: every PREFIX<digits> beside it. */
static int
fr_add(struct fr_set *s, const char *path, char *err, size_t len)
{
	char *dir, *base, *slash, *full;
	struct stat sb;
	struct dirent *de;
	int n0 = s->n, sk0 = s->nskipped, is_dir, r;
	DIR *d;

	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
		return fr_load(s, path, -1, err, len);
	is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
	dir = xstrdup(is_dir ? path : ".");
	base = xstrdup("");
	if (!is_dir && (slash = strrchr(path, '/')) != NULL) {
		free(dir);
		dir = xasprintf("%.*s", (int)(slash - path) + (slash == path), path);
		free(base);
		base = xstrdup(slash + 1);
	} else if (!is_dir) {
		free(base);
		base = xstrdup(path);
	}
	if ((d = opendir(dir)) == NULL) {
		snprintf(err, len, "%s: no such dump, directory or prefix (%s)", path,
		    strerror(errno));
		free(dir);
		free(base);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		const char *tail = de->d_name + strlen(base);

		/* In a directory, every file whose name ends in its rank. */
		if (is_dir)
			tail = de->d_name + strlen(de->d_name) - 1;
		if (strncmp(de->d_name, base, strlen(base)) != 0 || *tail == '\0' ||
		    strspn(tail, "0123456789") != strlen(tail) || strlen(tail) > 6 ||
		    de->d_name[0] == '.' || (!is_dir && tail[0] == '0' && tail[1] != '\0'))
			continue;
		full = xasprintf("%s/%s", dir, de->d_name);
		/* A prefix's rank is what follows it (the prefix may end in a digit). */
		r = fr_load(s, full, is_dir ? -1 : atoi(tail), err, len);
		free(full);
		/*
		 * A directory may hold other files too, and anyone may put one at
		 * a prefix's name in a shared one: passed over, and said.
		 */
		if (r != 0)
			fr_skip(s, err);
	}
	closedir(d);
	if (s->n == n0 && s->nskipped > sk0)
		snprintf(err, len, "%s: no dump found (passed over %s)", path,
		    s->skipped[s->nskipped - 1]);
	else if (s->n == n0)
		snprintf(err, len, "%s: no dump found (files named %s<rank>%s)", path,
		    base[0] ? base : "<digits>", is_dir ? " in that directory" : "");
	free(dir);
	free(base);
	return s->n > n0 ? 0 : -1;
}

int
fr_open(struct fr_set *s, const char *const *paths, int npaths, uid_t owner, int guess,
    char *err, size_t len)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < npaths; i++)
		if (fr_add(s, paths[i], err, len) != 0) {
			fr_close(s);
			return -1;
		}
	if (fr_owned(s, owner, guess, err, len) != 0 || fr_read(s, err, len) != 0) {
		fr_close(s);
		return -1;
	}
	return 0;
}

json_t *
fr_parse(const void *buf, size_t len, char *err, size_t errlen)
{
	const unsigned char *p = buf;
	size_t i = 0;
	json_t *root, *e;

	while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
		i++;
	/* A pickle begins with PROTO (0x80) or, in protocols 0 and 1, an opcode that is not '{'. */
	root = i < len && p[i] == '{' ? frjson_read(buf, len, err, errlen) :
	    pickle_read(buf, len, err, errlen);
	if (root == NULL)
		return NULL;
	if (!json_is_object(root)) {
		snprintf(err, errlen, "its value is not a dict");
		json_decref(root);
		return NULL;
	}
	if ((e = json_object_get(root, "entries")) == NULL)
		json_object_set_new(root, "entries", json_array());
	else if (!json_is_array(e) || json_array_size(e) > FR_ENTRIES_MAX) {
		if (json_is_array(e))
			snprintf(err, errlen, "more than %d entries", FR_ENTRIES_MAX);
		else
			snprintf(err, errlen, "its entries are not a list");
		json_decref(root);
		return NULL;
	}
	return root;
}

int
fr_add_root(struct fr_set *s, int rank, const char *label, json_t *root, char *err, size_t len)
{
	if (!json_is_object(root) || !json_is_array(json_object_get(root, "entries"))) {
		snprintf(err, len, "%s: not a flight recorder dump", label);
		return -1;
	}
	for (int i = 0; i < s->n; i++)
		if (s->d[i].rank == rank) {
			snprintf(err, len, "%s: rank %d's dump is given twice (also %s)", label, rank,
			    s->d[i].path);
			return -1;
		}
	s->d = xreallocarray(s->d, (size_t)s->n + 1, sizeof *s->d);
	s->d[s->n++] = (struct fr_dump){ rank, xstrdup(label), json_incref(root), (uid_t)-1 };
	qsort(s->d, (size_t)s->n, sizeof *s->d, fr_dump_cmp);
	return 0;
}

/*
 * The newest keep entries of each process group, in their order: a busy
 * group must not push a quiet one's entries out (the quiet one would then
 * look as if its ranks had no entry).
 */
static const char *const fr_keys_kept[] = { "pg_config", "version", "comm_lib_version" };

json_t *
fr_trim(json_t *root, size_t keep)
{
	json_t *e = json_object_get(root, "entries"), *out = json_object(), *tail = json_array();
	json_t *count = json_object(), *x;
	size_t n = json_array_size(e);

	for (size_t i = n; i-- > 0;) {
		const char *pg = fr__pg_of(json_array_get(e, i));
		json_int_t c;

		if (pg == NULL)
			pg = "";
		c = json_integer_value(json_object_get(count, pg));
		if ((size_t)c >= keep)
			continue;
		json_object_set_new(count, pg, json_integer(c + 1));
		json_array_insert(tail, 0, json_array_get(e, i));
	}
	json_decref(count);
	json_object_set_new(out, "entries", tail);
	/* What the dump says of itself (format 2.10's comm_lib_version among it) travels too. */
	for (size_t i = 0; i < sizeof fr_keys_kept / sizeof *fr_keys_kept; i++)
		if ((x = json_object_get(root, fr_keys_kept[i])) != NULL)
			json_object_set(out, fr_keys_kept[i], x);
	return out;
}

void
fr_close(struct fr_set *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->d[i].path);
		json_decref(s->d[i].root);
	}
	for (int i = 0; i < s->nskipped; i++)
		free(s->skipped[i]);
	free(s->skipped);
	free(s->note);
	free(s->d);
	memset(s, 0, sizeof *s);
}

/* The process group's name of an entry: the first of its (name, desc) tuple. */
const char *
fr__pg_of(json_t *e)
{
	json_t *pg = json_object_get(e, "process_group");

	if (json_is_array(pg))
		return json_string_value(json_array_get(pg, 0));
	return json_string_value(pg);
}
