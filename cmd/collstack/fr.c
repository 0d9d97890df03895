/*
 * collstack --fr: PyTorch's flight recorder dumps (one pickle per rank,
 * named PREFIX<rank>), matched across ranks as PyTorch's own analyzer does:
 * per process group, entries by collective_seq_id. It says which ranks did
 * not join the newest collective the others are in, where the op, sizes or
 * dtypes of one sequence number differ between ranks, and the Python frames
 * each rank's entry was made from. It works offline, on dumps copied off a
 * cluster.
 *
 * The dumps of one job are one user's: the caller's, or the one root names
 * with --user. In a directory others can write (a shared /tmp) anyone can
 * put a file at a dump's name, first, so a dump of another user is said as
 * ignored and left out, whichever rank's name it has. Files are opened O_NONBLOCK and O_NOFOLLOW and
 * read only if fstat says they are regular: a FIFO at a dump's name never
 * blocks the reader.
 */
#include <ctype.h>
#include <limits.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collstack.h"
#include "err.h"
#include "fr.h"
#include "pickle.h"
#include "regfile.h"
#include "xmalloc.h"

#define FR_FILE_MAX (512u << 20)
#define FR_FRAMES_SHOWN 4

struct fr_dump {
	int rank;
	char *path;
	json_t *root;
	uid_t uid;		/* its file's owner; (uid_t)-1 for a dump read elsewhere */
};

/* One collective entry of one rank in one process group. */
struct fr_ent {
	int rank;
	long long seq;
	const char *op, *state;
	json_t *e;
};

static const char *fr_pg_of(json_t *e);

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

/* Load one dump as rank (-1: from the digits its name ends in). */
static int
fr_load(struct fr_set *s, const char *path, int rank, char *err, size_t len)
{
	char why[256];
	struct stat sb;
	json_t *root;
	size_t got = 0;
	uint8_t *buf;
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
	buf = xmalloc((size_t)sb.st_size + 1);
	got = fread(buf, 1, (size_t)sb.st_size, f);
	fclose(f);
	root = pickle_read(buf, got, why, sizeof why);
	free(buf);
	if (root == NULL || !json_is_object(root)) {
		snprintf(err, len, "%s: not a flight recorder dump: %s", path,
		    root == NULL ? why : "its value is not a dict");
		json_decref(root);
		return -1;
	}
	s->d = xreallocarray(s->d, (size_t)s->n + 1, sizeof *s->d);
	s->d[s->n++] = (struct fr_dump){ rank, xstrdup(path), root, sb.st_uid };
	return 0;
}

/* One more file passed over, and why (its name may be anyone's: made printable). */
static void
fr_skip(struct fr_set *s, const char *why)
{
	char *w = xstrdup(why);

	stk_clean_here(w);
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
	cmd_user_name(*owner, who, sizeof who);
	for (int i = 1; i < s->n; i++)
		if (s->d[i].uid != *owner) {
			cmd_user_name(s->d[i].uid, whose, sizeof whose);
			snprintf(err, len, "the dumps are several users' (%s is user %s's, %s user "
			    "%s's) and none is root's: give --user to name the job's user",
			    s->d[0].path, who, s->d[i].path, whose);
			stk_clean_here(err);
			return -1;
		}
	s->note = xasprintf("none of the dumps is root's: they are all user %s's, and are read "
	    "(give --user to name the job's user)", who);
	stk_clean_here(s->note);
	return 0;
}

/* Leave out the dumps not owned by owner, each said; -1 if none is left. */
static int
fr_keep(struct fr_set *s, uid_t owner, const char *whose_dumps, char *err, size_t len)
{
	char who[72], whose[72], why[1024];
	int k = 0, n0 = s->n;

	cmd_user_name(owner, who, sizeof who);
	for (int i = 0; i < s->n; i++) {
		struct fr_dump *d = &s->d[i];

		if (d->uid == owner) {
			s->d[k++] = *d;
			continue;
		}
		cmd_user_name(d->uid, whose, sizeof whose);
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
	if (fr_keep(s, owner, whose, err, len) != 0)
		return -1;
	for (int i = 1; i < s->n; i++)
		if (s->d[i].rank == s->d[i - 1].rank) {
			snprintf(err, len, "%s: rank %d's dump is given twice (also %s)", s->d[i].path,
			    s->d[i].rank, s->d[i - 1].path);
			stk_clean_here(err);
			return -1;
		}
	return 0;
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
	if (fr_owned(s, owner, guess, err, len) != 0) {
		fr_close(s);
		return -1;
	}
	return 0;
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
json_t *
fr_trim(json_t *root, size_t keep)
{
	json_t *e = json_object_get(root, "entries"), *out = json_object(), *tail = json_array();
	json_t *count = json_object(), *x;
	size_t n = json_array_size(e);

	for (size_t i = n; i-- > 0;) {
		const char *pg = fr_pg_of(json_array_get(e, i));
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
	if ((x = json_object_get(root, "pg_config")) != NULL)
		json_object_set(out, "pg_config", x);
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

static const char *
fr_str(json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : dflt;
}

/* The process group's name of an entry: the first of its (name, desc) tuple. */
static const char *
fr_pg_of(json_t *e)
{
	json_t *pg = json_object_get(e, "process_group");

	if (json_is_array(pg))
		return json_string_value(json_array_get(pg, 0));
	return json_string_value(pg);
}

/* Every process group named in any dump, once. */
static int
fr_pg_names(const struct fr_set *s, const char ***out)
{
	const char **names = NULL;
	int n = 0;

	for (int i = 0; i < s->n; i++) {
		json_t *ents = json_object_get(s->d[i].root, "entries"), *e;
		size_t k;

		json_array_foreach(ents, k, e) {
			const char *pg = fr_pg_of(e);
			int seen = 0;

			if (pg == NULL || json_is_true(json_object_get(e, "is_p2p")))
				continue;
			for (int j = 0; j < n && !seen; j++)
				seen = strcmp(names[j], pg) == 0;
			if (!seen) {
				names = xreallocarray(names, (size_t)n + 1, sizeof *names);
				names[n++] = pg;
			}
		}
	}
	*out = names;
	return n;
}

/* The ranks of a process group, from pg_config's "[0, 1, 2]" in any dump, and its desc. */
static void
fr_pg_ranks(const struct fr_set *s, const char *pg, struct rankset *rs,
    const char **desc)
{
	*desc = NULL;
	for (int i = 0; i < s->n && rs->n == 0; i++) {
		json_t *cfg = json_object_get(json_object_get(s->d[i].root, "pg_config"), pg);
		const char *r = fr_str(cfg, "ranks", NULL);
		char *end;

		if (*desc == NULL)
			*desc = fr_str(cfg, "desc", NULL);
		for (const char *p = r; p != NULL && *p != '\0'; p++) {
			long v;

			if (!isdigit((unsigned char)*p))
				continue;
			v = strtol(p, &end, 10);
			if (v >= 0 && v < STACK_RANK_MAX)
				rankset_add(rs, (int)v);
			p = end - 1;
		}
	}
}

static int
fr_ent_cmp(const void *a, const void *b)
{
	const struct fr_ent *x = a, *y = b;
	long long rx = json_integer_value(json_object_get(x->e, "record_id")),
	    ry = json_integer_value(json_object_get(y->e, "record_id"));

	/* Ops of one seq (coalesced) in the order they were recorded, on every rank. */
	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	return (rx > ry) - (rx < ry);
}

/* Rank d's collective entries in pg, by seq. */
static int
fr_list(const struct fr_dump *d, const char *pg, struct fr_ent **out)
{
	json_t *ents = json_object_get(d->root, "entries"), *e;
	struct fr_ent *l = NULL;
	size_t k;
	int n = 0;

	json_array_foreach(ents, k, e) {
		const char *p = fr_pg_of(e);
		json_t *seq = json_object_get(e, "collective_seq_id");

		if (p == NULL || strcmp(p, pg) != 0 || !json_is_integer(seq) ||
		    json_is_true(json_object_get(e, "is_p2p")))
			continue;
		l = xreallocarray(l, (size_t)n + 1, sizeof *l);
		l[n++] = (struct fr_ent){ d->rank, json_integer_value(seq),
		    fr_str(e, "profiling_name", "?"), fr_str(e, "state", "?"), e };
	}
	if (n > 1)
		qsort(l, (size_t)n, sizeof *l, fr_ent_cmp);
	*out = l;
	return n;
}

static int
fr_seq_cmp(const void *a, const void *b)
{
	const struct fr_ent *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

static const struct fr_ent *
fr_at(const struct fr_ent *l, int n, long long seq)
{
	struct fr_ent key = { .seq = seq };

	return n > 0 ? bsearch(&key, l, (size_t)n, sizeof *l, fr_seq_cmp) : NULL;
}

static void
fr_frames(json_t *e, char *buf, size_t len)
{
	json_t *frames = json_object_get(e, "frames"), *f;
	size_t k, off = 0;
	int shown = 0;

	buf[0] = '\0';
	json_array_foreach(frames, k, f) {
		const char *file = fr_str(f, "filename", "?"), *slash = strrchr(file, '/');
		int n;

		if (shown == FR_FRAMES_SHOWN)
			break;
		n = snprintf(buf + off, len - off, "%s%s (%s:%lld)", shown ? " < " : "",
		    fr_str(f, "name", "?"), slash ? slash + 1 : file,
		    (long long)json_integer_value(json_object_get(f, "line")));
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
		shown++;
	}
}

/* Do two ranks' entries of one seq agree on what the op is? NULL, or what differs. */
static const char *
fr_differ(json_t *a, json_t *b)
{
	static const char *const keys[] = { "profiling_name", "input_sizes", "input_dtypes",
		"output_sizes", "output_dtypes" };

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
			return keys[i];
	return NULL;
}

static void
fr_say(struct fr_report *r, json_t *item, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fr_say(struct fr_report *r, json_t *item, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* Names and files come from the dumps. */
	stk_clean_here(buf);
	json_array_append_new(r->lines, json_string(buf));
	if (item != NULL)
		json_array_append_new(r->findings, item);
}

/* The first seq both ranks recorded where they disagree on the op: -1 when none. */
static long long
fr_first_mismatch(const struct fr_ent *a, int na, const struct fr_ent *b, int nb,
    const char **what)
{
	for (int i = 0, k = 0; i < na && k < nb;) {
		if (a[i].seq < b[k].seq)
			i++;
		else if (a[i].seq > b[k].seq)
			k++;
		else if ((*what = fr_differ(a[i].e, b[k].e)) != NULL)
			return a[i].seq;
		else
			i++, k++;
	}
	return -1;
}

/* Ranks that did not reach the newest collective of the group. */
static void
fr_behind(const struct fr_set *s, const char *pg, struct fr_ent **l, const int *n,
    long long top, const char *op, struct fr_report *r)
{
	char frames[512];

	for (int i = 0; i < s->n; i++) {
		const struct fr_ent *last = n[i] > 0 ? &l[i][n[i] - 1] : NULL;

		if (last == NULL || last->seq >= top)
			continue;
		fr_frames(last->e, frames, sizeof frames);
		fr_say(r, json_pack("{s:s, s:s, s:i, s:I, s:s, s:I, s:s, s:s}", "kind", "not_joined",
		    "pg", pg, "rank", s->d[i].rank, "seq", top, "op", op, "last_seq", last->seq,
		    "last_op", last->op, "last_state", last->state),
		    "rank %d did not join %s seq %lld: its newest is %s seq %lld (%s)%s%s",
		    s->d[i].rank, op, top, last->op, last->seq, last->state,
		    frames[0] ? ", from " : "", frames);
		r->problems++;
	}
}

/* Ranks of the group with no entry of it at all: no dump given, or nothing recorded. */
static void
fr_absent(const struct fr_set *s, const char *pg, const struct rankset *rs,
    const int *n, struct fr_report *r)
{
	for (int k = 0; k < rs->n; k++)
		for (int rank = rs->r[k][0]; rank <= rs->r[k][1]; rank++) {
			int have = 0;

			for (int i = 0; i < s->n && !have; i++)
				have = s->d[i].rank == rank && n[i] > 0;
			if (have)
				continue;
			fr_say(r, json_pack("{s:s, s:s, s:i}", "kind", "no_dump", "pg", pg, "rank", rank),
			    "rank %d of the group has no dump here (or no entry of the group in it)",
			    rank);
			r->problems++;
		}
}

/* Dumps with entries of the group. */
static int
fr_with_entries(const int *n, int count)
{
	int k = 0;

	for (int i = 0; i < count; i++)
		k += n[i] > 0;
	return k;
}

static void
fr_pg(const struct fr_set *s, const char *pg, struct fr_report *r)
{
	struct rankset rs = { 0 };
	struct fr_ent **l = xcalloc((size_t)s->n, sizeof *l);
	const struct fr_ent *ref = NULL, *at;
	int *n = xcalloc((size_t)s->n, sizeof *n), joined = 0, base = -1;
	long long top = LLONG_MIN, bad;
	char ranks[256], frames[512];
	const char *what, *desc;

	fr_pg_ranks(s, pg, &rs, &desc);
	rankset_fold(&rs, ranks, sizeof ranks);
	for (int i = 0; i < s->n; i++) {
		n[i] = fr_list(&s->d[i], pg, &l[i]);
		if (n[i] > 0 && l[i][n[i] - 1].seq > top)
			top = l[i][n[i] - 1].seq;
	}
	for (int i = 0; i < s->n; i++)
		if ((at = fr_at(l[i], n[i], top)) != NULL) {
			ref = ref ? ref : at;
			joined++;
		}
	if (ref == NULL) {
		/* Entries that name the group but carry no collective_seq_id: an older format. */
		fr_say(r, json_pack("{s:s, s:s}", "kind", "unreadable", "pg", pg), "process group %s: "
		    "its entries carry no collective_seq_id (a flight recorder format older than "
		    "this reader knows): nothing matched", pg);
		r->unreadable++;
		free(n);
		free(l);
		rankset_free(&rs);
		return;
	}
	fr_say(r, NULL, "process group %s%s%s%s (ranks %s): newest collective %s seq %lld, in %d "
	    "of the %d dumps", pg, desc ? " '" : "", desc ? desc : "", desc ? "'" : "",
	    rs.n ? ranks : "?", ref->op, top, joined, s->n);
	fr_behind(s, pg, l, n, top, ref->op, r);
	fr_absent(s, pg, &rs, n, r);
	for (int i = 0; i < s->n; i++) {
		if ((at = fr_at(l[i], n[i], top)) == NULL)
			continue;
		fr_frames(at->e, frames, sizeof frames);
		fr_say(r, NULL, "  rank %d: %s seq %lld %s%s%s", s->d[i].rank, at->op, top,
		    at->state, frames[0] ? ", from " : "", frames);
	}
	/* Desync: each rank against the lowest one with entries, from the first seq they differ. */
	for (int i = 0; i < s->n; i++) {
		if (n[i] == 0)
			continue;
		if (base < 0) {
			base = i;
			continue;
		}
		if ((bad = fr_first_mismatch(l[base], n[base], l[i], n[i], &what)) < 0)
			continue;
		/* among: the ranks compared, so that a reader can tell the odd side (verdict_gpu.c). */
		fr_say(r, json_pack("{s:s, s:s, s:I, s:s, s:i, s:i, s:s, s:s, s:i}", "kind",
		    "mismatch", "pg", pg, "seq", bad, "field", what, "rank", s->d[i].rank, "versus",
		    s->d[base].rank, "op", fr_at(l[i], n[i], bad)->op, "versus_op",
		    fr_at(l[base], n[base], bad)->op, "among", fr_with_entries(n, s->n)),
		    "mismatch in process group %s at seq %lld: rank %d's %s differs from rank %d's "
		    "(%s against %s)",
		    pg, bad, s->d[i].rank, what, s->d[base].rank, fr_at(l[i], n[i], bad)->op,
		    fr_at(l[base], n[base], bad)->op);
		r->problems++;
	}
	for (int i = 0; i < s->n; i++)
		free(l[i]);
	free(l);
	free(n);
	rankset_free(&rs);
}

void
fr_analyze(const struct fr_set *s, struct fr_report *r)
{
	const char **pgs = NULL;
	int npg;

	memset(r, 0, sizeof *r);
	r->lines = json_array();
	r->findings = json_array();
	npg = fr_pg_names(s, &pgs);
	for (int i = 0; i < npg; i++)
		fr_pg(s, pgs[i], r);
	if (npg == 0)
		fr_say(r, NULL, "no collective entries in the dumps (PyTorch records them with "
		    "TORCH_NCCL_TRACE_BUFFER_SIZE > 0)");
	free(pgs);
}

void
fr_report_free(struct fr_report *r)
{
	json_decref(r->lines);
	json_decref(r->findings);
	memset(r, 0, sizeof *r);
}
