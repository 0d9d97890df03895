/*
 * Before a rank starts: a program that cannot run is said once, not by
 * every rank (`collrun -n 600 ./dir` would say it 600 times, and '' ran
 * whatever PATH's first directory held); and ranks that far outnumber this
 * machine's CPUs are said before their start is felt.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "launch.h"
#include "msg.h"
#include "precheck.h"

/*
 * Past this many ranks per CPU, a job mostly waits for its turn: said, not
 * refused (a test of many ranks may want just that). 4 leaves the test
 * suite's -n 2..8 on 2 CPUs unwarned.
 */
#define PRECHECK_RANKS_PER_CPU 4

int
precheck_program(const struct job_opts *jo)
{
	const char *prog = jo->argv[0];
	char q[MSG_QUOTE_LEN(200)], path[4096];
	struct stat sb;

	if (prog[0] == '\0') {
		fprintf(stderr, "collrun: the program's name is empty: give a program to run\n");
		return EXIT_USAGE;
	}
	/* Elsewhere the program is looked for on its hosts. */
	if (jo->kind != LAUNCH_LOCAL)
		return EXIT_OK;
	msg_quote(q, prog, strlen(prog), 200);
	if (strchr(prog, '/') != NULL && stat(prog, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "collrun: %s is a directory, not a program\n", q);
		return EXIT_USAGE;
	}
	if (strchr(prog, '/') != NULL && stat(prog, &sb) == 0 && access(prog, X_OK) != 0) {
		fprintf(stderr, "collrun: cannot run %s: %s (chmod +x it, or run it with its "
		    "interpreter)\n", q, strerror(errno));
		return EXIT_CANNOT;
	}
	if (launch_resolve(prog, path, sizeof path) != 0) {
		fprintf(stderr, "collrun: cannot find program %s: not an executable path and not "
		    "in PATH\n", q);
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

static int
precheck_ncpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

void
precheck_cpus(const struct job_opts *jo)
{
	int cpus;

	if (jo->kind != LAUNCH_LOCAL)
		return;
	cpus = precheck_ncpus();
	if (jo->nranks > PRECHECK_RANKS_PER_CPU * cpus)
		fprintf(stderr, "collrun: warning: %d ranks on %d CPU%s here: they will start slowly "
		    "and take turns\n", jo->nranks, cpus, cpus == 1 ? "" : "s");
}
