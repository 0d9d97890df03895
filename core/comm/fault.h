/*
 * Fault injection: the plan read from COLL_FAULT, "RANK@SEQ:ACTION[,...]",
 * which tests and users set to rehearse recovery (docs/FAULTS.md). This is
 * only the parser and the lookup; the hooks that act on a fault live with
 * the op code, because the core itself never exits or prints.
 * Fuzzed: fuzz/fuzz_fault.c.
 */
#ifndef COLL_FAULT_H
#define COLL_FAULT_H

#include <stddef.h>
#include <stdint.h>

enum fault_action {
	FAULT_EXIT = 1, FAULT_KILL, FAULT_HANG, FAULT_CLOSE, FAULT_DELAY, FAULT_CORRUPT
};

#define FAULT_ANY_RANK (-1)		/* '*': every rank */
#define FAULT_RANK_MAX (1 << 24)	/* the bound comm_init_env() puts on COLL_RANK */
#define FAULT_DELAY_MAX_MS 3600000	/* an hour */
#define FAULT_SPEC_MAX 4096		/* characters */
#define FAULT_ITEMS_MAX 64
/* The bit of an action in fault_take()'s mask. */
#define FAULT_MASK(a) (1u << (a))

struct fault {
	int rank;			/* FAULT_ANY_RANK or 0..FAULT_RANK_MAX */
	uint64_t seq;			/* the op's sequence number, >= 1 */
	enum fault_action action;
	int delay_ms;			/* FAULT_DELAY only: 1..FAULT_DELAY_MAX_MS */
	int fired;
};

struct fault_plan {
	struct fault *v;		/* in the order written; NULL when n is 0 */
	int n;
};

/*
 * Parse spec into *plan (overwritten; free it with fault_plan_free). NULL, ""
 * or only whitespace is a plan of no faults. On error COLL_EINVAL, an empty
 * plan, and a one-line message in err naming the bad item and the expected form.
 */
int fault_parse(const char *spec, struct fault_plan *plan, char *err, size_t errlen);
/* Free a plan's faults and leave it empty. */
void fault_plan_free(struct fault_plan *plan);
/*
 * The first fault not yet fired for this rank at this seq whose action is in
 * mask (FAULT_MASK(action) bits); marks it fired. NULL if none. Not
 * thread-safe: one op thread asks.
 */
struct fault *fault_take(struct fault_plan *plan, int rank, uint64_t seq, unsigned mask);
/* The action's name as written in COLL_FAULT ("delay" for delay=MS), "unknown" if none. */
const char *fault_action_name(enum fault_action a);

#endif
