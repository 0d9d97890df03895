/*
 * The flight recorder of a live PyTorch job, as collstack's job sees it:
 * each worker asks the ranks on its host (frlive_fetch, core/triage) and
 * sends their newest entries on in its blob; rank 0 gathers the blobs into
 * one set, each dump that could not be had said in a note, and matches
 * them across ranks as --fr does (fr_analyze).
 */
#include <stdio.h>
#include <stdlib.h>

#include "collstack.h"
#include "fr.h"
#include "frlive.h"
#include "xmalloc.h"

void
stk_fr_here(const struct stk_local *loc, double budget_s, json_t *blob)
{
	frlive_fetch(loc->pi, loc->n, budget_s, blob);
}

/* One more reason in the note, "; " between. */
static void
stk_fr_note(char **note, const char *why)
{
	char *old = *note;

	*note = old ? xasprintf("%s; %s", old, why) : xstrdup(why);
	free(old);
}

void
stk_fr_gather(struct fr_set *s, json_t *o, char **note)
{
	const char *host = json_string_value(json_object_get(o, "host"));
	json_t *x;
	size_t i;
	char err[512], label[300];

	json_array_foreach(json_object_get(o, "fr"), i, x) {
		json_int_t rank = json_integer_value(json_object_get(x, "rank"));

		snprintf(label, sizeof label, "%s rank %lld", host ? host : "?", (long long)rank);
		if (!json_is_integer(json_object_get(x, "rank")) || rank < 0 ||
		    rank >= STACK_RANK_MAX)
			snprintf(err, sizeof err, "%s: a dump without a rank", label);
		else if (fr_add_root(s, (int)rank, label, json_object_get(x, "dump"), err,
		    sizeof err) == 0)
			continue;
		stk_fr_note(note, err);
	}
	json_array_foreach(json_object_get(o, "fr_skipped"), i, x) {
		char *why;

		if (!json_is_string(x))
			continue;
		why = xasprintf("%s: %s", host ? host : "?", json_string_value(x));
		stk_fr_note(note, why);
		free(why);
	}
}

void
stk_fr_judge(struct stk_result *r, const struct fr_set *s)
{
	struct fr_report rep;

	if (s->n == 0)
		return;
	fr_analyze(s, &rep);
	r->fr_lines = json_incref(rep.lines);
	r->fr_findings = json_incref(rep.findings);
	fr_report_free(&rep);
}
