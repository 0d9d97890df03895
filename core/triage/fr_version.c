/*
 * What a set of flight recorder dumps says of itself, the first line of
 * the report: the format (the dump's "version") and, from format 2.10, the
 * version of the communication library each rank ran (comm_lib_version,
 * NCCL's for ProcessGroupNCCL). Ranks that ran different libraries are a
 * finding: their collectives need not agree on protocol or algorithm, a
 * known cause of hangs. A format newer than this reader knows is read by
 * its keys (a minor step only adds keys) and said, never refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fr.h"
#include "fr_impl.h"
#include "msg.h"
#include "rankset.h"
#include "xmalloc.h"

#define FR_FORMAT_MAJOR 2	/* the newest format this reader was made for: 2.10 */
#define FR_FORMAT_MINOR 10
#define FR_VALUE_SHOWN 40	/* bytes of a version shown */

/* The distinct values of one key across the dumps, each with the ranks that have it. */
struct fr_vals {
	const char **v;
	struct rankset *rs;
	int n;
};

static void
fr_vals_of(const struct fr_set *s, const char *key, struct fr_vals *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; i < s->n; i++) {
		const char *v = json_string_value(json_object_get(s->d[i].root, key));
		int k = 0;

		if (v == NULL || s->d[i].rank < 0 || s->d[i].rank >= RANKSET_MAX)
			continue;
		while (k < out->n && strcmp(out->v[k], v) != 0)
			k++;
		if (k == out->n) {
			out->v = xreallocarray(out->v, (size_t)k + 1, sizeof *out->v);
			out->rs = xreallocarray(out->rs, (size_t)k + 1, sizeof *out->rs);
			out->v[k] = v;
			memset(&out->rs[k], 0, sizeof out->rs[k]);
			out->n++;
		}
		rankset_add(&out->rs[k], s->d[i].rank);
	}
}

static void
fr_vals_free(struct fr_vals *x)
{
	for (int k = 0; k < x->n; k++)
		rankset_free(&x->rs[k]);
	free(x->v);
	free(x->rs);
}

/* "V" when one value; "V1 (ranks 0-2), V2 (rank 3)" when several. */
static void
fr_vals_say(const struct fr_vals *x, char *buf, size_t len)
{
	char ranks[128];
	size_t off = 0;

	buf[0] = '\0';
	for (int k = 0; k < x->n && off < len; k++) {
		int n;

		rankset_fold(&x->rs[k], ranks, sizeof ranks);
		if (x->n == 1)
			n = snprintf(buf, len, "%.*s", FR_VALUE_SHOWN, x->v[k]);
		else
			n = snprintf(buf + off, len - off, "%s%.*s (rank%s %s)", k ? ", " : "",
			    FR_VALUE_SHOWN, x->v[k], rankset_count(&x->rs[k]) == 1 ? "" : "s", ranks);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* Is this format newer than the one this reader knows? ("2.10" is not; "2.11", "3.0" are.) */
static int
fr_format_newer(const char *v)
{
	char *end;
	long major = strtol(v, &end, 10), minor;

	if (end == v || *end != '.')
		return 0;
	minor = strtol(end + 1, &end, 10);
	return major > FR_FORMAT_MAJOR || (major == FR_FORMAT_MAJOR && minor > FR_FORMAT_MINOR);
}

void
fr__versions(const struct fr_set *s, struct fr_report *r)
{
	struct fr_vals fmt, lib;
	char f[256], l[512];

	fr_vals_of(s, "version", &fmt);
	fr_vals_of(s, "comm_lib_version", &lib);
	fr_vals_say(&fmt, f, sizeof f);
	fr_vals_say(&lib, l, sizeof l);
	if (fmt.n > 0 || lib.n > 0)
		fr__say(r, NULL, "dumps of format %s; communication library %s%s",
		    fmt.n ? f : "not said", lib.n ? l : "not said (a format before 2.10)",
		    lib.n == 1 && (int)rankset_count(&lib.rs[0]) == s->n && s->n > 1 ?
		    " on every rank" : "");
	for (int k = 0; k < fmt.n; k++)
		if (fr_format_newer(fmt.v[k]))
			fr__say(r, NULL, "note: format %.*s is newer than %d.%d, the newest this reader "
			    "knows: read by its keys (what the newer format changed may be missed)",
			    FR_VALUE_SHOWN, fmt.v[k], FR_FORMAT_MAJOR, FR_FORMAT_MINOR);
	if (lib.n > 1) {
		msg_clean(l);	/* whole characters only in the finding's string */
		fr__say(r, json_pack("{s:s, s:s}", "kind", "lib_versions", "versions", l),
		    "the ranks ran different communication library versions: %s (collectives "
		    "of different versions need not agree: give every rank the same)", l);
		r->problems++;
	}
	fr_vals_free(&fmt);
	fr_vals_free(&lib);
}
