/*
 * collstack --fr: the flight recorder's dumps read here, with no job and no
 * workers; the report as text or JSON, exit 1 when something is wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "collstack.h"
#include "fr.h"

int
stk_fr(const struct stk_args *a)
{
	struct fr_report r;
	struct stk_evidence ev;
	struct fr_set s;
	char err[1024];
	size_t i;
	json_t *line;
	int code;

	/* The dumps' owner: the caller, or --user's (checked as the options were read). */
	if (stk_evidence_init(&ev, a->user, err, sizeof err) != 0 ||
	    fr_open(&s, a->fr, a->nfr, ev.owner, geteuid() == 0 && !ev.named, err,
	    sizeof err) != 0) {
		fprintf(stderr, "collstack: %s\n", err);
		return EXIT_CANNOT;
	}
	if (s.note != NULL)
		fprintf(stderr, "collstack: note: %s\n", s.note);
	for (int k = 0; k < s.nskipped; k++)
		fprintf(stderr, "collstack: passed over %s\n", s.skipped[k]);
	fr_analyze(&s, &r);
	if (a->fmt == FMT_JSON) {
		json_t *o = json_pack("{s:i, s:O, s:O}", "dumps", s.n, "findings", r.findings,
		    "report", r.lines);

		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("collstack: flight recorder dumps of %d rank%s\n", s.n, s.n == 1 ? "" : "s");
		json_array_foreach(r.lines, i, line)
			printf("%s\n", json_string_value(line));
		if (r.problems == 0 && r.unreadable == 0)
			printf("every rank of every process group reached the newest collective, and "
			    "they agree on each op\n");
	}
	code = r.problems > 0 ? EXIT_PROBLEMS : r.unreadable > 0 ? EXIT_CANNOT : EXIT_OK;
	fr_report_free(&r);
	fr_close(&s);
	return code;
}
