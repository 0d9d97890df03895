/*
 * mpirun's habits, taken beside collrun's own spellings: users come to
 * collrun with `mpirun -np 4 -hostfile hosts -x NCCL_DEBUG=INFO ./a`
 * in their fingers. The option parser knows one spelling per option (a
 * letter and a long name): this file rewrites the others to it before the
 * parser runs, and only up to the program's name, since what follows it is
 * the program's own. Without it `-np 4` read as -n with the value "p", and
 * `-hostfile` as -h, the help.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpiargs.h"
#include "msg.h"
#include "xmalloc.h"

/* Other names for our options (mpirun's, or collrun's older ones). */
static const struct { const char *from, *to; } mpiargs_alias[] = {
	{ "-tag-output", "--label" },
	{ "--tag-output", "--label" },
	{ "-host", "--hosts" },
	{ "--host", "--hosts" },
	{ "-npernode", "--per-host" },
	{ "--npernode", "--per-host" },
	{ "-t", "-T" },
};

static const struct opt *
mpiargs_long(const struct opt *opts, const char *name, size_t len)
{
	for (const struct opt *o = opts; o->id != 0; o++)
		if (o->lng != NULL && strlen(o->lng) == len && strncmp(o->lng, name, len) == 0)
			return o;
	return NULL;
}

static const struct opt *
mpiargs_short(const struct opt *opts, char c)
{
	for (const struct opt *o = opts; o->id != 0; o++)
		if (o->shrt == c)
			return o;
	return NULL;
}

/* The spelling of a to parse: an alias's, "--WORD" for mpirun's "-WORD", or a as it is. */
static char *
mpiargs_spell(const struct opt *opts, char *a)
{
	for (size_t k = 0; k < sizeof mpiargs_alias / sizeof mpiargs_alias[0]; k++)
		if (strcmp(a, mpiargs_alias[k].from) == 0)
			return (char *)mpiargs_alias[k].to;
	if (a[1] != '-' && strlen(a) > 2 && mpiargs_long(opts, a + 1, strlen(a + 1)) != NULL)
		return xasprintf("-%s", a);
	return a;
}

/* Does option word a (as spelled) take the next word as its value? */
static int
mpiargs_takes_next(const struct opt *opts, const char *a)
{
	const struct opt *o;

	if (a[1] == '-')
		return strchr(a, '=') == NULL &&
		    (o = mpiargs_long(opts, a + 2, strlen(a + 2))) != NULL && o->type == OPT_VALUE;
	for (const char *c = a + 1; *c != '\0'; c++)
		if ((o = mpiargs_short(opts, *c)) == NULL || o->type == OPT_VALUE)
			return o != NULL && c[1] == '\0';
	return 0;
}

char **
mpiargs_normalize(const struct opt *opts, int argc, char **argv)
{
	char **v = xcalloc((size_t)argc + 1, sizeof *v);
	int i = 0;

	v[i] = argv[i];
	for (i = 1; i < argc; i++) {
		char *a = argv[i];

		/* The program's name (or "--" before it): the rest is the program's. */
		if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0')
			break;
		v[i] = mpiargs_spell(opts, a);
		if (mpiargs_takes_next(opts, v[i]) && i + 1 < argc) {
			i++;
			v[i] = argv[i];
		}
	}
	for (; i < argc; i++)
		v[i] = argv[i];
	return v;
}

void
mpiargs_free(char **v, int argc, char **argv)
{
	for (int i = 0; v != NULL && i < argc; i++) {
		int alias = 0;

		for (size_t k = 0; k < sizeof mpiargs_alias / sizeof mpiargs_alias[0]; k++)
			alias |= v[i] == mpiargs_alias[k].to;
		if (v[i] != argv[i] && !alias)
			free(v[i]);
	}
	free(v);
}

/* Is name one of the variables collrun sets for each rank? */
static int
mpiargs_ours(const char *name)
{
	static const char *const ours[] = { "COLL_UNIQUE_ID", "COLL_ROOT_VIA", "COLL_RANK",
	    "COLL_SIZE", "COLL_LOCAL_RANK", "COLL_LOCAL_SIZE", "COLL_JOBID", "RANK", "WORLD_SIZE",
	    "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", NULL };

	for (int i = 0; ours[i] != NULL; i++)
		if (strcmp(ours[i], name) == 0)
			return 1;
	return 0;
}

char *
mpiargs_export(const char *arg, char *err, size_t len)
{
	size_t n = strcspn(arg, "=");
	char q[MSG_QUOTE_LEN(64)], name[256];
	const char *val;

	if (n == 0 || n >= sizeof name || strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz_0123456789") != n || (arg[0] >= '0' && arg[0] <= '9')) {
		snprintf(err, len, "-x takes NAME or NAME=VALUE, not %s",
		    msg_quote(q, arg, strlen(arg), 64));
		return NULL;
	}
	memcpy(name, arg, n);
	name[n] = '\0';
	/* Set for each rank by collrun; the id also carries the job's secret, never on a command line. */
	if (mpiargs_ours(name)) {
		snprintf(err, len, "-x %s: collrun sets %s for each rank itself: leave it out", name, name);
		return NULL;
	}
	val = arg[n] == '=' ? arg + n + 1 : getenv(name);
	/* A remote agent reads it as one line of stdin (envwire.h), three bytes a byte at worst. */
	if (val != NULL && strlen(val) > MPIARGS_EXPORT_MAX) {
		snprintf(err, len, "-x %s: its value is %zu bytes, over %d: put it in a file and "
		    "give the file's name", name, strlen(val), MPIARGS_EXPORT_MAX);
		return NULL;
	}
	if (arg[n] == '=')
		return xstrdup(arg);
	if (val == NULL) {
		if (strpbrk(name, "abcdefghijklmnopqrstuvwxyz") != NULL)	/* a host, as -x was before */
			snprintf(err, len, "-x %s: %s is not set here: -x is mpirun's export "
			    "(VAR[=VALUE]); to leave out a host, give --exclude %s", name, name, name);
		else
			snprintf(err, len, "-x %s: %s is not set here: give -x %s=VALUE", name, name,
			    name);
		return NULL;
	}
	return xasprintf("%s=%s", name, val);
}
