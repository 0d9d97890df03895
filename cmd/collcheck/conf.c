/*
 * collcheck's files: the thresholds and rule settings (--config), and the
 * golden baseline (--save-baseline on good nodes, --baseline later, as
 * nhc-genconf writes a node's known-good configuration for NHC to check).
 *
 * The config is "name = value" lines with '#' comments:
 *   clock_offset_ms = 100      warn when a clock is further off rank 0's
 *   link_bw_factor = 0.5       pairs below this times the upper quartile of bandwidth
 *   link_lat_factor = 3        pairs above this times the lower quartile of latency
 *   ignore = env.OMPI_*        facts not compared (fnmatch patterns; repeatable)
 *   severity env.UCX_* = info  a pattern's findings at this severity
 *                              (error, warn, info or ignore)
 *   gpu_bw_factor = 0.7        collcheck gpus: copies below this times the host's upper quartile
 *   gpu_floor *H200* = 40 40 300  collcheck gpus: floors in GB/s (h2d d2h p2p; 0 none) of the
 *                              models matching the pattern, over coll's table (gpubw.c)
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpubw.h"
#include "xmalloc.h"

void
check_conf_defaults(struct check_conf *c)
{
	memset(c, 0, sizeof *c);
	c->clock_offset_ms = 100;
	c->link_bw_factor = 0.5;
	c->link_lat_factor = 3;
	c->gpu_bw_factor = GPUBW_FACTOR;
}

void
check_conf_free(struct check_conf *c)
{
	for (int i = 0; i < c->nignore; i++)
		free(c->ignore[i]);
	for (int i = 0; i < c->nsev; i++)
		free(c->sev_pat[i]);
	free(c->ignore);
	free(c->sev_pat);
	free(c->sev_val);
	gpubw_conf_free(c);
	memset(c, 0, sizeof *c);
}

static char *
check_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int
check_conf_number(const char *name, const char *v, double min, double max, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || d < min || d > max)
		return -1;
	(void)name;
	*out = d;
	return 0;
}

static int
check_sev_parse(const char *v)
{
	if (strcmp(v, "error") == 0)
		return SEV_ERROR;
	if (strcmp(v, "warn") == 0)
		return SEV_WARN;
	if (strcmp(v, "info") == 0)
		return SEV_INFO;
	if (strcmp(v, "ignore") == 0)
		return SEV_OK;
	return -1;
}

/* One line: 0, or -1 with err saying what is wrong with it. */
static int
check_conf_line(struct check_conf *c, char *line, char *err, size_t len)
{
	char *eq = strchr(line, '='), *name, *val;
	int sev;

	if (eq == NULL) {
		snprintf(err, len, "expected 'name = value'");
		return -1;
	}
	*eq = '\0';
	name = check_trim(line);
	val = check_trim(eq + 1);
	if (strcmp(name, "clock_offset_ms") == 0)
		return check_conf_number(name, val, 0, 1e9, &c->clock_offset_ms) == 0 ? 0 :
		    (snprintf(err, len, "clock_offset_ms must be a number >= 0"), -1);
	if (strcmp(name, "link_bw_factor") == 0)
		return check_conf_number(name, val, 0, 1, &c->link_bw_factor) == 0 ? 0 :
		    (snprintf(err, len, "link_bw_factor must be between 0 and 1"), -1);
	if (strcmp(name, "link_lat_factor") == 0)
		return check_conf_number(name, val, 1, 1e6, &c->link_lat_factor) == 0 ? 0 :
		    (snprintf(err, len, "link_lat_factor must be a number >= 1"), -1);
	if (strcmp(name, "ignore") == 0 && val[0] != '\0') {
		c->ignore = xreallocarray(c->ignore, (size_t)c->nignore + 1, sizeof *c->ignore);
		c->ignore[c->nignore++] = xstrdup(val);
		return 0;
	}
	if (strncmp(name, "severity", 8) == 0 && isspace((unsigned char)name[8])) {
		const char *pat = check_trim(name + 8);

		if (pat[0] == '\0' || (sev = check_sev_parse(val)) < 0) {
			snprintf(err, len, "use 'severity PATTERN = error|warn|info|ignore'");
			return -1;
		}
		c->sev_pat = xreallocarray(c->sev_pat, (size_t)c->nsev + 1, sizeof *c->sev_pat);
		c->sev_val = xreallocarray(c->sev_val, (size_t)c->nsev + 1, sizeof *c->sev_val);
		c->sev_pat[c->nsev] = xstrdup(pat);
		c->sev_val[c->nsev++] = sev;
		return 0;
	}
	if ((sev = gpubw_conf_line(c, name, val, err, len)) != 1)
		return sev;
	snprintf(err, len, "unknown setting '%s' (clock_offset_ms, link_bw_factor, "
	    "link_lat_factor, gpu_bw_factor, gpu_floor MODEL, ignore, severity PATTERN)", name);
	return -1;
}

#define CHECK_CONF_MAX (64u << 20)	/* a config or baseline: far above any real one */

int
check_conf_read(struct check_conf *c, const char *path, char *err, size_t len)
{
	char *text, *line, *next, why[256];
	int no = 0, r = 0;

	if (cmd_read_file("config", path, CHECK_CONF_MAX, &text, err, len) != 0)
		return -1;
	for (line = text; line != NULL && r == 0; line = next) {
		char *s, *hash;

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		no++;
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		s = check_trim(line);
		if (s[0] != '\0' && (r = check_conf_line(c, s, why, sizeof why)) != 0)
			snprintf(err, len, "%s:%d: %s", path, no, why);
	}
	free(text);
	return r == 0 ? 0 : -1;
}

int
check_conf_ignored(const struct check_conf *c, const char *key)
{
	for (int i = 0; i < c->nignore; i++)
		if (fnmatch(c->ignore[i], key, 0) == 0)
			return 1;
	for (int i = 0; i < c->nsev; i++)
		if (c->sev_val[i] == SEV_OK && fnmatch(c->sev_pat[i], key, 0) == 0)
			return 1;
	return 0;
}

int
check_conf_sev(const struct check_conf *c, const char *key, int sev)
{
	/* The last matching line wins, as later lines of a config refine earlier ones. */
	for (int i = 0; i < c->nsev; i++)
		if (fnmatch(c->sev_pat[i], key, 0) == 0)
			sev = c->sev_val[i];
	return sev;
}

/* The majority's value of every fact the hosts agree on (ties and identities left out). */
int
check_baseline_save(const struct check_result *r, const char *path, char *err, size_t len)
{
	json_t *doc, *facts = json_object();
	int live = 0, rc;

	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];

		if (ch->rank < 0)
			continue;
		live++;
		for (int i = 0; i < ch->facts.n; i++) {
			const char *k = ch->facts.v[i].key, *v = ch->facts.v[i].val;
			int same = 0, other = 0;

			if (check_identity_key(k) || json_object_get(facts, k) != NULL)
				continue;
			for (int g = 0; g < r->nhosts; g++) {
				const char *w;

				if (r->hosts[g].rank < 0)
					continue;
				w = facts_get(&r->hosts[g].facts, k);
				if (w != NULL && strcmp(w, v) == 0)
					same++;
				else
					other++;
			}
			if (same > other)
				json_object_set_new(facts, k, json_string(v));
		}
	}
	health_baseline_save(r, facts);
	if (live == 0) {
		json_decref(facts);
		snprintf(err, len, "no host answered: nothing to save in '%s'", path);
		return -1;
	}
	doc = json_pack("{s:i, s:i, s:o}", "collcheck_baseline", 1, "hosts", live, "facts", facts);
	rc = json_dump_file(doc, path, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(doc);
	if (rc != 0) {
		snprintf(err, len, "cannot write baseline '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int
check_baseline_load(struct facts *f, const char *path, char *err, size_t len)
{
	json_error_t je;
	json_t *doc, *facts, *v;
	const char *k;
	char *text;

	if (cmd_read_file("baseline", path, CHECK_CONF_MAX, &text, err, len) != 0)
		return -1;
	doc = json_loads(text, 0, &je);
	free(text);
	if (doc == NULL) {
		/* jansson gives line -1 where there is no line to point at (an empty file). */
		if (je.line > 0)
			snprintf(err, len, "cannot read baseline '%s': %s (line %d)", path, je.text,
			    je.line);
		else
			snprintf(err, len, "cannot read baseline '%s': %s", path, je.text);
		return -1;
	}
	facts = json_object_get(doc, "facts");
	if (json_integer_value(json_object_get(doc, "collcheck_baseline")) != 1 ||
	    !json_is_object(facts)) {
		snprintf(err, len, "'%s' is not a collcheck baseline (write one with "
		    "--save-baseline)", path);
		json_decref(doc);
		return -1;
	}
	json_object_foreach(facts, k, v) {
		if (!json_is_string(v) || strlen(k) >= FACTS_KEY_MAX) {
			snprintf(err, len, "baseline '%s': fact '%.64s' is not a string", path, k);
			json_decref(doc);
			return -1;
		}
		facts_add(f, k, "%s", json_string_value(v));
	}
	json_decref(doc);
	return 0;
}
