/*
 * Fuzz what collstack reads from other processes: a packed stack tree (a
 * worker's, off the network, merged on the way up) and rank 0's record
 * (JSON on its stdout), then judged. The first byte picks the parser. A tree that parses
 * must pack and parse back to the same text, and every rank set in it must
 * hold as many ranks as its threads allow no fewer than one.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "err.h"
#include "stack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_tree_check(const struct stack_node *n)
{
	if (n->ranks.n < 1 || rankset_count(&n->ranks) < 1)
		abort();
	for (int i = 0; i < n->nkids; i++)
		fuzz_tree_check(n->kids[i]);
}

static void
fuzz_tree(const char *buf, size_t len)
{
	struct stack_node t, u, m;
	char err[256], *p1, *p2;
	size_t l1, l2;

	stack_tree_init(&t);
	stack_tree_init(&u);
	stack_tree_init(&m);
	if (stack_tree_parse(&t, buf, len, err, sizeof err) == COLL_OK) {
		for (int i = 0; i < t.nkids; i++)
			fuzz_tree_check(t.kids[i]);
		p1 = stack_tree_pack(&t, &l1);
		if (stack_tree_parse(&u, p1, l1, err, sizeof err) != COLL_OK)
			abort();
		p2 = stack_tree_pack(&u, &l2);
		if (l1 != l2 || memcmp(p1, p2, l1) != 0)
			abort();
		/* Merging a tree into an empty one gives it back. */
		stack_tree_merge(&m, &u);
		free(p2);
		p2 = stack_tree_pack(&m, &l2);
		if (l1 != l2 || memcmp(p1, p2, l1) != 0)
			abort();
		free(p1);
		free(p2);
	} else if (strchr(err, '\n') != NULL) {
		abort();
	}
	stack_tree_free(&t);
	stack_tree_free(&u);
	stack_tree_free(&m);
}

/* A record that reads is judged (verdict.c, verdict_gpu.c): pages and GPUs of any shape. */
static void
fuzz_verdict(const struct stk_result *r)
{
	struct stk_verdict v;

	stk_verdict(r, &v);
	stk_verdict_free(&v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stk_result r;
	char err[512];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		fuzz_tree((const char *)data + 1, size - 1);
		return 0;
	}
	if (stk_record_read(&r, (const char *)data + 1, size - 1, err, sizeof err) != 0) {
		if (strchr(err, '\n') != NULL)
			abort();
	} else {
		fuzz_verdict(&r);
	}
	stk_result_free(&r);
	return 0;
}
