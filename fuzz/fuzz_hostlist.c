/*
 * Fuzz the host-list parsers: -w/-x expressions, hostfiles and Slurm's
 * variables are all untrusted text. The input is read as an expression, as a
 * hostfile, and split at its first newline as SLURM_JOB_NODELIST and
 * SLURM_TASKS_PER_NODE. Whatever parses must fold back into an expression
 * that parses to the same hosts, and every refusal must say why on one line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hostlist.h"

#define FUZZ_MAX_RANKS 4096
/*
 * A million-host expansion takes seconds under the sanitizers. It is parsed
 * once; folding it back and the other parsers would only repeat that work,
 * so they are skipped and the fuzzer stays fast on small inputs.
 */
#define FUZZ_MAX_CHECKED 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_err(const char *err)
{
	if (err[0] == '\0' || strchr(err, '\n') != NULL)
		abort();
}

/* fold, then parse what it gave: the same set of names. */
static void
fuzz_check_fold(const struct hostlist *hl)
{
	struct hostlist again = { 0 };
	const char **names = calloc(hl->n ? (size_t)hl->n : 1, sizeof *names);
	char err[COLL_ERR_LEN], *out;
	size_t len = 16;

	if (names == NULL)
		abort();
	for (int i = 0; i < hl->n; i++) {
		names[i] = hl->hosts[i].name;
		len += 2 * (strlen(names[i]) + 1);
	}
	/* Folding never lengthens a list by more than this, so it must fit. */
	if ((out = malloc(len)) == NULL || hostlist_fold(names, hl->n, out, len) != COLL_OK)
		abort();
	if (hl->n > 0 && (hostlist_parse(&again, out, err, sizeof err) != COLL_OK ||
	    again.n != hl->n))
		abort();
	for (int i = 0; i < hl->n; i++)
		if (hostlist_find(&again, hl->hosts[i].name) < 0)
			abort();
	hostlist_free(&again);
	free(out);
	free(names);
}

/* Place as many ranks as fit, both ways: no host gets more than its share. */
static void
fuzz_check_place(const struct hostlist *hl)
{
	long long total = 0;
	int nranks, *rank_host, *count;
	char err[COLL_ERR_LEN];

	for (int i = 0; i < hl->n; i++)
		total += hl->hosts[i].slots > 0 ? hl->hosts[i].slots : 1;
	nranks = total < FUZZ_MAX_RANKS ? (int)total : FUZZ_MAX_RANKS;
	rank_host = calloc((size_t)nranks + 1, sizeof *rank_host);
	count = calloc(hl->n ? (size_t)hl->n : 1, sizeof *count);
	if (rank_host == NULL || count == NULL)
		abort();
	for (int mode = PLACE_BLOCK; mode <= PLACE_ROUNDROBIN; mode++) {
		memset(count, 0, (hl->n ? (size_t)hl->n : 1) * sizeof *count);
		if (hostlist_place(hl, nranks, 0, mode, rank_host, err, sizeof err) != COLL_OK)
			abort();
		for (int r = 0; r < nranks; r++) {
			int h = rank_host[r];

			if (h < 0 || h >= hl->n ||
			    ++count[h] > (hl->hosts[h].slots > 0 ? hl->hosts[h].slots : 1))
				abort();
		}
	}
	if (total < FUZZ_MAX_RANKS &&
	    hostlist_place(hl, nranks + 1, 0, PLACE_BLOCK, rank_host, err, sizeof err) == COLL_OK)
		abort();
	free(rank_host);
	free(count);
}

static void
fuzz_slurm(char *s)
{
	struct hostlist hl = { 0 };
	char err[COLL_ERR_LEN] = "", *nl = strchr(s, '\n'), *tasks = NULL;

	if (nl != NULL) {
		*nl = '\0';
		tasks = nl + 1;
	}
	if (hostlist_parse_slurm(&hl, s, tasks, err, sizeof err) != COLL_OK) {
		fuzz_check_err(err);
		return;
	}
	if (hl.n > FUZZ_MAX_CHECKED) {
		hostlist_free(&hl);
		return;
	}
	for (int i = 0; tasks != NULL && i < hl.n; i++)
		if (hl.hosts[i].slots <= 0)
			abort();
	fuzz_check_fold(&hl);
	fuzz_check_place(&hl);
	/* Excluding the node list itself leaves nothing. */
	if (hostlist_exclude(&hl, s, err, sizeof err) != COLL_OK || hl.n != 0)
		abort();
	hostlist_free(&hl);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hostlist hl = { 0 };
	char *s = malloc(size + 1), err[COLL_ERR_LEN] = "";

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (hostlist_parse(&hl, s, err, sizeof err) != COLL_OK) {
		fuzz_check_err(err);
	} else if (hl.n > FUZZ_MAX_CHECKED) {
		hostlist_free(&hl);
		free(s);
		return 0;
	} else {
		fuzz_check_fold(&hl);
	}
	hostlist_free(&hl);
	err[0] = '\0';
	if (hostlist_parse_text(&hl, s, err, sizeof err) == COLL_OK)
		fuzz_check_fold(&hl);
	else
		fuzz_check_err(err);
	hostlist_free(&hl);
	fuzz_slurm(s);
	free(s);
	return 0;
}
