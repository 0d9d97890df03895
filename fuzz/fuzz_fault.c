/*
 * Fuzz the fault-plan parser: COLL_FAULT is text from the environment. What
 * parses must be within the documented bounds, and fault_take must hand out
 * each fault exactly once at its own rank and seq; every refusal must say why
 * on one line and leave no fault armed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fault.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_fault(const struct fault *f)
{
	if (f->rank < FAULT_ANY_RANK || f->rank > FAULT_RANK_MAX || f->seq == 0 || f->fired)
		abort();
	if (f->action < FAULT_EXIT || f->action > FAULT_CORRUPT ||
	    strcmp(fault_action_name(f->action), "unknown") == 0)
		abort();
	if (f->action == FAULT_DELAY ? f->delay_ms < 1 || f->delay_ms > FAULT_DELAY_MAX_MS :
	    f->delay_ms != 0)
		abort();
}

/* Take every fault at its own rank (rank 0 for '*') and seq: each comes out once. */
static void
fuzz_take_all(struct fault_plan *p)
{
	for (int i = 0; i < p->n; i++) {
		const struct fault *f;
		int rank = p->v[i].rank == FAULT_ANY_RANK ? 0 : p->v[i].rank;

		if (p->v[i].fired)
			continue;
		f = fault_take(p, rank, p->v[i].seq, FAULT_MASK(p->v[i].action));
		/* Every earlier fault has fired, so the first match is this one. */
		if (f != &p->v[i] || !f->fired)
			abort();
	}
	for (int i = 0; i < p->n; i++)
		if (!p->v[i].fired ||
		    fault_take(p, p->v[i].rank, p->v[i].seq, 0xffffffffu) != NULL)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[COLL_ERR_LEN];
	struct fault_plan p;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (fault_parse(s, &p, err, sizeof err) == COLL_OK) {
		if (p.n < 0 || p.n > FAULT_ITEMS_MAX || (p.n == 0) != (p.v == NULL))
			abort();
		for (int i = 0; i < p.n; i++)
			fuzz_check_fault(&p.v[i]);
		fuzz_take_all(&p);
	} else if (err[0] == '\0' || strchr(err, '\n') != NULL || p.n != 0 || p.v != NULL) {
		abort();
	}
	fault_plan_free(&p);
	free(s);
	return 0;
}
