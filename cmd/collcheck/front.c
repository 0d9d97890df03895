/*
 * The front end: start the workers through the job runner (local ranks, SSH
 * hosts or srun), read rank 0's record from its stdout, show the workers'
 * progress on a terminal, then analyse and report.
 *
 * A host that cannot be used (unreachable, refused, or its worker could not
 * be started: exit 126 or 127) would keep the others from ever forming a
 * communicator, so the job fails fast, and the check starts again without
 * it: it is named in the report as unreachable, with why, and the rest are
 * still checked. Any other failure of a worker would fail on every host
 * alike: it ends the check (exit 3) with the failing rank named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "err.h"
#include "front.h"
#include "launch.h"
#include "xmalloc.h"

#define CHECK_ATTEMPTS 4
#define CHECK_RECORD_MAX (512u << 20)

struct check_front {
	struct check_args *a;
	struct front_record rec;	/* rank 0's stdout */
	int tty;		/* show progress on stderr */
	int *failed;		/* per host of this attempt: 1 unusable */
	char **why;		/* per host of this attempt */
	char **last_err;	/* per rank: the last line it wrote on stderr */
	int nranks;
	int first_seen;		/* a failure was seen: the others are being stopped for it */
	char *fatal;		/* a worker's failure that ends the check */
	/* Hosts found unusable so far, over all attempts. */
	char **gone, **gone_why;
	int ngone;
	int reported;		/* the report was made (and --prometheus's file with it) */
};

static void
check_front_progress(struct check_front *f, const char *what, size_t len)
{
	if (!f->tty)
		return;
	fprintf(stderr, "\rcollcheck: %.*s\033[K", (int)(len > 200 ? 200 : len), what);
	fflush(stderr);
}

static int
check_front_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	static const char prog[] = "collcheck-progress: ";
	struct check_front *f = arg;

	if (front_record_take(&f->rec, rank, stream, line, len))
		return 1;
	if (rank == 0 && stream == LAUNCH_STDERR && len >= sizeof prog - 1 &&
	    memcmp(line, prog, sizeof prog - 1) == 0) {
		check_front_progress(f, line + sizeof prog - 1, len - (sizeof prog - 1));
		return 1;
	}
	if (rank >= 0 && rank < f->nranks && stream == LAUNCH_STDERR) {
		free(f->last_err[rank]);
		f->last_err[rank] = xasprintf("%.*s", (int)(len > 400 ? 400 : len), line);
	}
	if (f->tty)
		fprintf(stderr, "\r\033[K");
	return 0;
}

static void
check_front_exited(void *arg, int rank, int state, int code)
{
	struct check_front *f = arg;
	const struct job_opts *jo = &f->a->ho.jo;
	char words[160];
	int h;

	if ((state == LAUNCH_EXITED && code == 0) || state == LAUNCH_FAILED || jo->nhosts == 0 ||
	    rank < 0 || rank >= f->nranks || f->rec.len > 0)
		return;
	/*
	 * A worker that could not be started (126, 127: the shell's "cannot
	 * execute", "not found") makes its host unusable, whenever it ends: no
	 * other rank's failure causes that. Any other failure is taken from the
	 * first rank only (the others are being stopped for it).
	 */
	if (state != LAUNCH_EXITED || (code != 126 && code != 127)) {
		if (f->first_seen)
			return;
		f->first_seen = 1;
		job_end_words(state, code, words, sizeof words);
		f->fatal = xasprintf("rank %d on %s: its worker %s (its words are above)", rank,
		    jo->hosts[jo->rank_host[rank]], words);
		return;
	}
	f->first_seen = 1;
	h = jo->rank_host[rank];
	if (f->failed[h])
		return;
	f->failed[h] = 1;
	f->why[h] = xasprintf("its worker could not be started (exit %d)%s%s", code,
	    f->last_err[rank] ? ": " : "", f->last_err[rank] ? f->last_err[rank] : "");
}

static void
check_front_host_failed(void *arg, int host, const char *why)
{
	struct check_front *f = arg;

	if (f->failed[host])
		return;
	/* Unreachable hosts are all named: they fail before any rank runs. */
	f->first_seen = 1;
	f->failed[host] = 1;
	f->why[host] = xstrdup(why);
}

/* One attempt: the job over the hosts left; 0 with a record, 1 to retry without some, -1. */
static int
check_front_attempt(struct check_front *f, char **wargv, int *jobcode)
{
	struct job_hooks hooks = { check_front_output, check_front_exited,
	    check_front_host_failed, f, 1, NULL };
	struct check_args *a = f->a;
	int nh = a->ho.jo.nhosts, retry = 0;

	f->nranks = a->ho.jo.nranks;
	f->failed = xcalloc((size_t)nh + 1, sizeof *f->failed);
	f->why = xcalloc((size_t)nh + 1, sizeof *f->why);
	f->last_err = xcalloc((size_t)f->nranks, sizeof *f->last_err);
	f->rec.len = 0;
	f->first_seen = 0;
	free(f->fatal);
	f->fatal = NULL;
	a->ho.jo.argv = wargv;
	a->ho.jo.hooks = &hooks;
	if (f->tty) {
		char buf[128];
		int n = snprintf(buf, sizeof buf, "starting %d worker%s on %d host%s", f->nranks,
		    f->nranks == 1 ? "" : "s", nh ? nh : 1, nh > 1 ? "s" : "");

		check_front_progress(f, buf, (size_t)n);
	}
	*jobcode = job_run(&a->ho.jo);
	if (f->tty)
		fprintf(stderr, "\r\033[K");
	for (int h = 0; h < nh; h++) {
		if (!f->failed[h])
			continue;
		f->gone = xreallocarray(f->gone, (size_t)f->ngone + 1, sizeof *f->gone);
		f->gone_why = xreallocarray(f->gone_why, (size_t)f->ngone + 1, sizeof *f->gone_why);
		f->gone[f->ngone] = xstrdup(a->ho.names[h]);
		f->gone_why[f->ngone++] = f->why[h];
		f->why[h] = NULL;
		retry = 1;
	}
	free(f->failed);
	free(f->why);
	for (int k = 0; k < f->nranks; k++)
		free(f->last_err[k]);
	free(f->last_err);
	if (f->rec.len > 0)
		return 0;	/* rank 0 wrote the record: the check is whole, whatever came after */
	return retry ? 1 : -1;
}

/* The hosts given, less those found unusable: -x grows by them. */
static int
check_front_exclude(struct check_front *f, const char *user, char **excl, char *err, size_t len)
{
	struct check_args *a = f->a;
	size_t n = user ? strlen(user) + 1 : 0;
	char *s;

	for (int i = 0; i < f->ngone; i++)
		n += strlen(f->gone[i]) + 1;
	s = xcalloc(n + 1, 1);
	if (user)
		strcat(s, user);
	for (int i = 0; i < f->ngone; i++) {
		if (s[0] != '\0')
			strcat(s, ",");
		strcat(s, f->gone[i]);
	}
	free(*excl);
	*excl = s;
	a->ho.exclude = s;
	hostopt_release(&a->ho);
	return hostopt_prepare(&a->ho, err, len);
}

static void
check_front_add_gone(struct check_front *f, struct check_result *r)
{
	r->hosts = xreallocarray(r->hosts, (size_t)r->nhosts + (size_t)f->ngone + 1,
	    sizeof *r->hosts);
	for (int i = 0; i < f->ngone; i++) {
		struct check_host *h = &r->hosts[r->nhosts++];

		*h = (struct check_host){ .name = f->gone[i], .rank = -1, .why = f->gone_why[i] };
		facts_init(&h->facts);
		f->gone[i] = f->gone_why[i] = NULL;
	}
}

static int
check_front_finish(struct check_front *f, struct check_result *r, const struct facts *base)
{
	struct check_args *a = f->a;
	char err[512];
	int code;

	/* Each host by the name we reached it by: --drain's Slurm node name. */
	for (int h = 0; h < r->nhosts && a->ho.jo.nhosts > 0; h++)
		if (r->hosts[h].rank >= 0 && r->hosts[h].rank < a->ho.jo.nranks)
			r->hosts[h].node = a->ho.jo.hosts[a->ho.jo.rank_host[r->hosts[h].rank]];
	check_front_add_gone(f, r);
	check_analyse(r, a, base);
	if (a->save_baseline != NULL && check_baseline_save(r, a->save_baseline, err,
	    sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		return EXIT_CANNOT;
	}
	f->reported = 1;
	code = check_report(r, a);
	return code;
}

/* Why the check ended with no report: said on stderr; the reason for --prometheus. */
static const char *
check_front_said(struct check_front *f, int rc, int all_gone, int jobcode)
{
	const char *why = "workers";

	if (all_gone)
		fprintf(stderr, "collcheck: no host could be checked:\n"), why = "unreachable";
	else if (jobcode == JOB_EXIT_TIMEOUT)
		fprintf(stderr, "collcheck: the check ran past -T %g s: raise -T, or look for the "
		    "rank named above\n", f->a->timeout_s), why = "timeout";
	else if (f->fatal != NULL)
		fprintf(stderr, "collcheck: %s\n", f->fatal), why = "failed";
	else if (rc == 1)
		fprintf(stderr, "collcheck: hosts kept failing after %d attempts:\n",
		    CHECK_ATTEMPTS), why = "unreachable";
	else
		fprintf(stderr, "collcheck: the workers did not report (job exit code %d)\n",
		    jobcode);
	for (int i = 0; i < f->ngone; i++)
		fprintf(stderr, "  %s: %s\n", f->gone[i], f->gone_why[i]);
	return why;
}

/* A run with no report still says so in --prometheus's file: the last success must go. */
static void
check_front_prom_fail(struct check_front *f, const char *why)
{
	char err[512];

	if (f->reported || f->a->prometheus == NULL)
		return;
	if (check_prom_fail(f->a, why, err, sizeof err) != 0)
		fprintf(stderr, "collcheck: %s\n", err);
}

int
check_front(struct check_args *a, int argc, char **argv)
{
	struct check_front f = { .a = a, .tty = isatty(STDERR_FILENO) && !a->json,
	    .rec = { .max = CHECK_RECORD_MAX } };
	const struct front_argv w = { .sub = a->cmd->name };
	struct check_result r = { 0 };
	char **wargv = NULL, *excl = NULL, err[512];
	const char *user_excl = a->ho.exclude;
	int code = EXIT_CANNOT, jobcode = 0, rc = 1, all_gone = 0;
	const char *why = "setup";	/* no report: why, for --prometheus */
	struct facts base;

	facts_init(&base);
	/* A bad baseline is said before minutes of checking, not after. */
	if (a->baseline != NULL && check_baseline_load(&base, a->baseline, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		code = EXIT_USAGE;
		goto out;
	}
	if ((code = front_prepare(a->cmd, &a->ho, a->timeout_s)) != EXIT_OK)
		goto out;
	if ((a->what & CHECK_LINKS) && a->ho.jo.nranks < 2) {
		fprintf(stderr, "collcheck: nothing measured: %s 2 ranks (give -H with 2 hosts, "
		    "or -N 2)\n", a->what & CHECK_ALLREDUCE ? "links and the all-reduce need" :
		    "links needs");
		code = EXIT_USAGE;
		goto out;
	}
	code = EXIT_CANNOT;
	if ((wargv = front_argv(a->cmd, &w, argc, argv)) == NULL)
		goto out;
	for (int attempt = 0; attempt < CHECK_ATTEMPTS && rc == 1; attempt++) {
		if (attempt > 0 && check_front_exclude(&f, user_excl, &excl, err, sizeof err) != 0) {
			rc = -1;
			all_gone = 1;	/* every host is gone */
			break;
		}
		rc = check_front_attempt(&f, wargv, &jobcode);
	}
	why = "record";
	if (rc == 0 && f.rec.overflow)
		fprintf(stderr, "collcheck: rank 0's record is larger than %u MiB\n",
		    CHECK_RECORD_MAX >> 20);
	else if (rc == 0 && check_record_read(&r, f.rec.buf, f.rec.len, err, sizeof err) != 0)
		fprintf(stderr, "collcheck: %s\n", err);
	else if (rc == 0)
		code = check_front_finish(&f, &r, a->baseline != NULL ? &base : NULL);
	else
		why = check_front_said(&f, rc, all_gone, jobcode);
out:
	check_front_prom_fail(&f, why);
	for (int i = 0; i < f.ngone; i++) {
		free(f.gone[i]);
		free(f.gone_why[i]);
	}
	free(f.gone);
	free(f.gone_why);
	front_record_free(&f.rec);
	free(f.fatal);
	front_argv_free(wargv);
	free(excl);
	facts_free(&base);
	check_result_free(&r);
	hostopt_release(&a->ho);
	return code;
}
