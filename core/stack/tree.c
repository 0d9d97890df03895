/*
 * The merged stack tree, in the manner of LLNL STAT: a prefix tree of frames
 * from the outermost (_start, clone) in, each node holding the set of ranks
 * and the number of threads whose stacks pass through it. Frames are the
 * same node when they name the same function in the same module (or, with no
 * symbol, the same module offset); ranks at different lines of one function
 * stay together, and the node says the line only when they all agree.
 *
 * A thread in a system call ends in a frame of the kernel's (the call and
 * the wait channel), so ranks blocked in read and ranks spinning part there.
 *
 * The packed form, for merging trees across hosts, is one line per node in
 * preorder: "DEPTH THREADS INLINED LINE OFFSET RANKS\tFUNC\tFILE\tMODULE",
 * numbers in decimal but OFFSET in hex, empty text for none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "stack.h"
#include "xmalloc.h"

#define STACK_TREE_MAX_DEPTH 4096
#define STACK_TEXT_MAX 512

void
stack_tree_init(struct stack_node *root)
{
	memset(root, 0, sizeof *root);
}

static void
stack_node_free(struct stack_node *n)
{
	for (int i = 0; i < n->nkids; i++) {
		stack_node_free(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->func);
	free(n->file);
	free(n->module);
	rankset_free(&n->ranks);
}

void
stack_tree_free(struct stack_node *root)
{
	stack_node_free(root);
	memset(root, 0, sizeof *root);
}

/*
 * A copy fit for the packed form and a terminal: printable ASCII only (no
 * tabs, newlines, escape or 8-bit control bytes, no invalid UTF-8 for JSON),
 * bounded. Names come from the target's own binaries.
 */
static char *
stack_text(const char *s)
{
	size_t n;
	char *d;

	if (s == NULL || *s == '\0')
		return NULL;
	n = strnlen(s, STACK_TEXT_MAX);
	d = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
	d[n] = '\0';
	return d;
}

static int
stack_streq(const char *a, const char *b)
{
	return (a == NULL || b == NULL) ? a == b : strcmp(a, b) == 0;
}

static int
stack_node_same(const struct stack_node *n, const char *func, const char *module,
    uint64_t offset)
{
	return stack_streq(n->func, func) && stack_streq(n->module, module) &&
	    (func != NULL || n->offset == offset);
}

/* p's child for this frame, or NULL. */
static struct stack_node *
stack_node_find(const struct stack_node *p, const char *func, const char *module,
    uint64_t offset)
{
	for (int i = 0; i < p->nkids; i++)
		if (stack_node_same(p->kids[i], func, module, offset))
			return p->kids[i];
	return NULL;
}

static void
stack_node_append(struct stack_node *p, struct stack_node *k)
{
	if (p->nkids == p->capkids) {
		p->capkids = p->capkids ? p->capkids * 2 : 2;
		p->kids = xreallocarray(p->kids, (size_t)p->capkids, sizeof *p->kids);
	}
	p->kids[p->nkids++] = k;
}

static struct stack_node *
stack_node_kid(struct stack_node *p, const struct stack_frame *f)
{
	struct stack_node *k;
	char *func = stack_text(f->func), *module = stack_text(f->module);
	int line = f->line >= 0 ? f->line : 0;

	/*
	 * A pc in no module (a thread caught being born or ending, a stack of
	 * garbage) has neither name: the packed form needs one, and "?" is how
	 * stack_node_name shows it anyway.
	 */
	if (func == NULL && module == NULL)
		module = stack_text("?");

	if ((k = stack_node_find(p, func, module, f->offset)) != NULL) {
		if (k->line != line)
			k->line = -1;
		free(func);
		free(module);
		return k;
	}
	k = xcalloc(1, sizeof *k);
	k->func = func;
	k->module = module;
	k->file = stack_text(f->file);
	k->line = line;
	k->offset = f->offset;
	k->kind = f->kind >= 0 && f->kind <= STACK_FRAME_PYTHON ? f->kind : STACK_FRAME_NATIVE;
	stack_node_append(p, k);
	return k;
}

static void
stack_node_pass(struct stack_node *n, int rank)
{
	rankset_add(&n->ranks, rank);
	n->threads++;
}

/* The kernel's part of a thread's stack: the call it waits in, or why there is no stack. */
static int
stack_kernel_frame(const struct stack_thread *t, struct stack_frame *f, char *buf, size_t len)
{
	const char *sc = t->syscall >= 0 ? stack_syscall_name(t->syscall) : NULL;

	memset(f, 0, sizeof *f);
	f->module = "[kernel]";
	f->file = t->wchan[0] ? t->wchan : NULL;
	if (!t->stopped || t->nframes == 0) {
		snprintf(buf, len, "<%s>", t->err[0] ? t->err : "no stack");
	} else if (t->syscall >= 0) {
		if (sc != NULL)
			snprintf(buf, len, "%s", sc);
		else
			snprintf(buf, len, "syscall %ld", t->syscall);
	} else {
		return 0;
	}
	f->func = buf;
	return 1;
}

void
stack_tree_add(struct stack_node *root, int rank, const struct stack_thread *t)
{
	struct stack_node *n = root;
	struct stack_frame kf;
	char kbuf[128];
	/* The outermost frames, as deep as the packed form goes (a kernel frame under them). */
	int top = t->nframes < STACK_TREE_MAX_DEPTH - 1 ? t->nframes : STACK_TREE_MAX_DEPTH - 1;

	stack_node_pass(root, rank);
	for (int i = t->stopped ? t->nframes - 1 : -1; i >= t->nframes - top; i--) {
		n = stack_node_kid(n, &t->frames[i]);
		stack_node_pass(n, rank);
	}
	if (stack_kernel_frame(t, &kf, kbuf, sizeof kbuf)) {
		n = stack_node_kid(n, &kf);
		stack_node_pass(n, rank);
	}
}

void
stack_tree_merge(struct stack_node *dst, struct stack_node *src)
{
	rankset_union(&dst->ranks, &src->ranks);
	dst->threads += src->threads;
	for (int i = 0; i < src->nkids; i++) {
		struct stack_node *s = src->kids[i];
		struct stack_node *d = stack_node_find(dst, s->func, s->module, s->offset);

		if (d == NULL) {
			stack_node_append(dst, s);
			continue;
		}
		if (d->line != s->line)
			d->line = -1;
		stack_tree_merge(d, s);
		stack_node_free(s);
		free(s);
	}
	free(src->kids);
	src->kids = NULL;
	src->nkids = src->capkids = 0;
}

void
stack_node_name(const struct stack_node *n, char *buf, size_t len)
{
	if (n->func != NULL)
		snprintf(buf, len, "%s", n->func);
	else
		snprintf(buf, len, "%s+0x%llx", n->module ? n->module : "?",
		    (unsigned long long)n->offset);
}

struct stack_buf {
	char *p;
	size_t len, cap;
};

static void
stack_buf_add(struct stack_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xreallocarray(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
stack_pack_node(struct stack_buf *b, const struct stack_node *n, int depth)
{
	char head[96], *ranks = rankset_str(&n->ranks);
	int w;

	w = snprintf(head, sizeof head, "%d %u %d %d %llx ", depth, n->threads, n->kind,
	    n->line, (unsigned long long)n->offset);
	stack_buf_add(b, head, (size_t)w);
	stack_buf_add(b, ranks, strlen(ranks));
	free(ranks);
	stack_buf_add(b, "\t", 1);
	if (n->func)
		stack_buf_add(b, n->func, strlen(n->func));
	stack_buf_add(b, "\t", 1);
	if (n->file)
		stack_buf_add(b, n->file, strlen(n->file));
	stack_buf_add(b, "\t", 1);
	if (n->module)
		stack_buf_add(b, n->module, strlen(n->module));
	stack_buf_add(b, "\n", 1);
	for (int i = 0; i < n->nkids; i++)
		stack_pack_node(b, n->kids[i], depth + 1);
}

char *
stack_tree_pack(const struct stack_node *root, size_t *len)
{
	struct stack_buf b = { 0 };

	stack_buf_add(&b, "", 0);
	for (int i = 0; i < root->nkids; i++)
		stack_pack_node(&b, root->kids[i], 0);
	*len = b.len;
	return b.p;
}

/* A decimal number of at most 10 digits (a leading '-' if neg), then a space. */
static int
stack_pack_num(const char **p, const char *end, int neg, long long *v)
{
	const char *s = *p;
	long long x = 0;
	int sign = 1, digits = 0;

	if (neg && s < end && *s == '-') {
		sign = -1;
		s++;
	}
	for (; s < end && *s >= '0' && *s <= '9' && digits < 10; s++, digits++)
		x = x * 10 + (*s - '0');
	if (digits == 0 || s == end || *s != ' ')
		return -1;
	*p = s + 1;
	*v = sign * x;
	return 0;
}

static int
stack_pack_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;

	for (; s < end && digits < 16; s++, digits++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
		    -1;

		if (d < 0)
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (digits == 0 || s == end || *s != ' ')
		return -1;
	*p = s + 1;
	*v = x;
	return 0;
}

static char *
stack_pack_field(const char **p, const char *end, char stop)
{
	const char *s = *p, *e = memchr(s, stop, (size_t)(end - s));
	char *out = NULL;

	if (e == NULL)
		e = end;
	if (e - s > STACK_TEXT_MAX) {
		*p = NULL;	/* longer than stack_text makes it: refused */
		return NULL;
	}
	if (e > s) {
		out = xmalloc((size_t)(e - s) + 1);
		memcpy(out, s, (size_t)(e - s));
		out[e - s] = '\0';
	}
	*p = e < end ? e + 1 : e;
	return out;
}

/* One line into a new node; its depth, or -1. */
static int
stack_parse_line(const char *s, const char *end, struct stack_node *n)
{
	long long depth, threads, inl, line;
	const char *tab;

	if (stack_pack_num(&s, end, 0, &depth) || stack_pack_num(&s, end, 0, &threads) ||
	    stack_pack_num(&s, end, 0, &inl) || stack_pack_num(&s, end, 1, &line) ||
	    stack_pack_hex(&s, end, &n->offset) || depth >= STACK_TREE_MAX_DEPTH ||
	    threads < 1 || threads > UINT32_MAX || inl > STACK_FRAME_PYTHON || line < -1 || line > INT32_MAX ||
	    (tab = memchr(s, '\t', (size_t)(end - s))) == NULL ||
	    rankset_parse(&n->ranks, s, (size_t)(tab - s)) != COLL_OK)
		return -1;
	for (const char *c = tab; c < end; c++)
		if (((unsigned char)*c < 0x20 && *c != '\t') || (unsigned char)*c >= 0x7f)
			return -1;	/* printable ASCII only, as stack_text makes it */
	n->threads = (uint32_t)threads;
	n->kind = (int)inl;
	n->line = (int)line;
	s = tab + 1;
	n->func = stack_pack_field(&s, end, '\t');
	if (s != NULL)
		n->file = stack_pack_field(&s, end, '\t');
	if (s == NULL || s == end || s[-1] != '\t')
		return -1;	/* three fields, two tabs, none too long */
	n->module = stack_pack_field(&s, end, '\t');
	if (s == NULL || s != end || (end > tab && end[-1] == '\t') ||
	    (n->func == NULL && n->module == NULL))
		return -1;
	return (int)depth;
}

/* Attach k under p; -1 if p has a child for the same frame (a tree we pack never does). */
static int
stack_tree_attach(struct stack_node *p, struct stack_node *k)
{
	if (stack_node_find(p, k->func, k->module, k->offset) != NULL)
		return -1;
	stack_node_append(p, k);
	return 0;
}

int
stack_tree_parse(struct stack_node *root, const char *buf, size_t len, char *err,
    size_t errlen)
{
	struct stack_node **path = xcalloc(STACK_TREE_MAX_DEPTH + 1, sizeof *path);
	const char *p = buf, *end = buf + len;
	int depth = -1, nodes = 0, r = COLL_OK;

	path[0] = root;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct stack_node *n = xcalloc(1, sizeof *n);
		int d;

		if (nl == NULL || (d = stack_parse_line(p, nl, n)) < 0 || d > depth + 1 ||
		    ++nodes > STACK_TREE_MAX_NODES || stack_tree_attach(path[d], n) != 0) {
			snprintf(err, errlen, "stack tree line %d is malformed", nodes + 1);
			stack_node_free(n);
			free(n);
			r = COLL_EPROTO;
			break;
		}
		path[d + 1] = n;
		depth = d;
		p = nl + 1;
	}
	for (int i = 0; i < root->nkids; i++) {
		rankset_union(&root->ranks, &root->kids[i]->ranks);
		root->threads += root->kids[i]->threads;
	}
	free(path);
	return r;
}
