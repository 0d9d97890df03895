/*
 * Printing: the verdict first, then the merged tree. Text (the default) is
 * an indented tree that indents only where stacks part, each branch headed
 * by its rank set, the largest branch first; colour on a terminal. Then the
 * equivalence classes: ranks whose stacks are all the same. --json gives
 * the whole result, --dot the tree for Graphviz, --svg the tree drawn by
 * Graphviz's dot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "xmalloc.h"

/* --json's shape: its name and version, raised when a field changes meaning. */
#define STK_JSON_SCHEMA "collstack/2"

#define C_RANK "\033[36m"
#define C_BAD "\033[1;31m"
#define C_FUNC "\033[1m"
#define C_DIM "\033[2m"
#define C_OFF "\033[0m"

struct stk_out {
	FILE *f;
	int color;
	char label[16];		/* "rank" or "task" */
	const char *found;	/* the job collstack picked by itself, and how; NULL named */
};

static const char *
stk_c(const struct stk_out *o, const char *code)
{
	return o->color ? code : "";
}

static int
stk_kid_cmp(const void *a, const void *b)
{
	const struct stack_node *x = *(const struct stack_node *const *)a;
	const struct stack_node *y = *(const struct stack_node *const *)b;
	int cx = rankset_count(&x->ranks), cy = rankset_count(&y->ranks);

	if (cx != cy)
		return cy - cx;
	return x->ranks.r[0][0] - y->ranks.r[0][0];
}

static void
stk_sort_tree(struct stack_node *n)
{
	if (n->nkids > 1)
		qsort(n->kids, (size_t)n->nkids, sizeof *n->kids, stk_kid_cmp);
	for (int i = 0; i < n->nkids; i++)
		stk_sort_tree(n->kids[i]);
}

static int
stk_same_ranks(const struct stack_node *a, const struct stack_node *b)
{
	if (a->ranks.n != b->ranks.n)
		return 0;
	if (a->ranks.n == 0)
		return 1;
	return memcmp(a->ranks.r, b->ranks.r, sizeof *a->ranks.r * (size_t)a->ranks.n) == 0;
}

static void
stk_print_frame(const struct stk_out *o, const struct stack_node *n, int show_ranks)
{
	char name[600], *ranks;
	int cnt = rankset_count(&n->ranks);

	if (show_ranks) {
		ranks = rankset_str(&n->ranks);
		fprintf(o->f, "%s[%s]%s (%d) ", stk_c(o, C_RANK), ranks, stk_c(o, C_OFF), cnt);
		free(ranks);
	}
	stack_node_name(n, name, sizeof name);
	fprintf(o->f, "%s%s%s", stk_c(o, C_FUNC), name, stk_c(o, C_OFF));
	if (n->file != NULL && n->line > 0)
		fprintf(o->f, " %s(%s:%d)%s", stk_c(o, C_DIM), n->file, n->line, stk_c(o, C_OFF));
	else if (n->file != NULL)
		fprintf(o->f, " %s(%s)%s", stk_c(o, C_DIM), n->file, stk_c(o, C_OFF));
	else if (n->func != NULL && n->module != NULL)
		fprintf(o->f, " %s(%s)%s", stk_c(o, C_DIM), n->module, stk_c(o, C_OFF));
	if (n->kind == STACK_FRAME_INLINED)
		fprintf(o->f, " %s[inlined]%s", stk_c(o, C_DIM), stk_c(o, C_OFF));
	if (n->threads > (uint32_t)cnt)
		fprintf(o->f, " %s%u threads%s", stk_c(o, C_DIM), n->threads, stk_c(o, C_OFF));
	fputc('\n', o->f);
}

/* A chain of single children flat, then the branches below it, indented. */
static void
stk_print_chain(const struct stk_out *o, const struct stack_node *n, const char *first,
    const char *rest, const struct stack_node *above)
{
	const struct stack_node *cur = n, *prev = above;
	size_t rl = strlen(rest);
	char *p1, *p2;

	for (;;) {
		fputs(cur == n ? first : rest, o->f);
		stk_print_frame(o, cur, prev == NULL || !stk_same_ranks(cur, prev));
		if (cur->nkids != 1)
			break;
		prev = cur;
		cur = cur->kids[0];
	}
	p1 = xmalloc(rl + 16);
	p2 = xmalloc(rl + 16);
	for (int i = 0; i < cur->nkids; i++) {
		int last = i == cur->nkids - 1;

		snprintf(p1, rl + 16, "%s%s", rest, last ? "└─ " : "├─ ");
		snprintf(p2, rl + 16, "%s%s", rest, last ? "   " : "│  ");
		stk_print_chain(o, cur->kids[i], p1, p2, NULL);
	}
	free(p1);
	free(p2);
}

/* The first task whose id is id or more (the tasks ascend by id). */
static int
stk_task_from(const struct stk_result *r, int id)
{
	int lo = 0, hi = r->ntasks;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (r->tasks[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Walk the leaves; each task's signature hashes the leaves it reaches. */
static void
stk_leaf_sigs(const struct stack_node *n, const struct stk_result *r, uint64_t *sig,
    uint64_t *leaf)
{
	if (n->nkids == 0) {
		(*leaf)++;
		/* The leaf's ranges, each found among the tasks: not every task for every leaf. */
		for (int k = 0; k < n->ranks.n; k++)
			for (int i = stk_task_from(r, n->ranks.r[k][0]); i < r->ntasks &&
			    r->tasks[i].id <= n->ranks.r[k][1]; i++)
				sig[i] = (sig[i] ^ *leaf) * 1099511628211ull;
		return;
	}
	for (int i = 0; i < n->nkids; i++)
		stk_leaf_sigs(n->kids[i], r, sig, leaf);
}

/* A task's signature, sorted on; a class: where its run starts and its first task. */
struct stk_sig {
	uint64_t sig;
	int task;
};

struct stk_class {
	int task, start;
};

static int
stk_sig_cmp(const void *a, const void *b)
{
	const struct stk_sig *x = a, *y = b;

	if (x->sig != y->sig)
		return (x->sig > y->sig) - (x->sig < y->sig);
	return (x->task > y->task) - (x->task < y->task);
}

static int
stk_class_cmp(const void *a, const void *b)
{
	const struct stk_class *x = a, *y = b;

	return (x->task > y->task) - (x->task < y->task);
}

static void
stk_print_classes(const struct stk_out *o, const struct stk_result *r)
{
	uint64_t *sig, leaf = 0;
	struct stk_sig *by;
	struct stk_class *cl;
	int ncl = 0;
	char buf[512];

	if (r->ntasks <= 0)
		return;
	sig = xcalloc((size_t)r->ntasks + 1, sizeof *sig);
	stk_leaf_sigs(&r->tree, r, sig, &leaf);
	/* Sorted by signature, then task: a class is a run, led by its first task. */
	by = xcalloc((size_t)r->ntasks + 1, sizeof *by);
	for (int i = 0; i < r->ntasks; i++)
		by[i] = (struct stk_sig){ sig[i], i };
	qsort(by, (size_t)r->ntasks, sizeof *by, stk_sig_cmp);
	cl = xcalloc((size_t)r->ntasks + 1, sizeof *cl);
	for (int i = 0; i < r->ntasks; i++)
		if (i == 0 || by[i].sig != by[i - 1].sig)
			cl[ncl++] = (struct stk_class){ by[i].task, i };
	/* The classes in the order of their first tasks, as they were always printed. */
	qsort(cl, (size_t)ncl, sizeof *cl, stk_class_cmp);
	fprintf(o->f, "%d equivalence class%s (%ss with the same stacks):", ncl,
	    ncl == 1 ? "" : "es", o->label);
	for (int c = 0; c < ncl; c++) {
		struct rankset s = { 0 };

		for (int i = cl[c].start; i < r->ntasks && by[i].sig == by[cl[c].start].sig; i++)
			rankset_add(&s, r->tasks[by[i].task].id);
		rankset_fold(&s, buf, sizeof buf);
		fprintf(o->f, " %s[%s]%s", stk_c(o, C_RANK), buf, stk_c(o, C_OFF));
		rankset_free(&s);
	}
	fputc('\n', o->f);
	free(cl);
	free(by);
	free(sig);
}

/* What could not be read of the tasks that were: the first few, then a count. */
static void
stk_print_notes(const struct stk_out *o, const struct stk_result *r)
{
	int shown = 0, more = 0;

	for (int i = 0; i < r->ntasks; i++) {
		const struct stk_task *t = &r->tasks[i];

		if (t->note == NULL)
			continue;
		if (shown++ < 4)
			fprintf(o->f, "note: %s %d (%s, pid %d): %s\n", r->by_rank ? "rank" :
			    "task", t->id, t->host, t->pid, t->note);
		else
			more++;
	}
	if (more > 0)
		fprintf(o->f, "note: and %d more %s like that (--json lists them)\n", more,
		    r->by_rank ? "ranks" : "tasks");
}

/* Processes the evidence rule refused (docs/SECURITY.md): never in the verdict. */
static void
stk_print_ignored(const struct stk_out *o, const struct stk_result *r)
{
	json_t *x;
	size_t i;

	json_array_foreach(r->ignored, i, x)
		fprintf(o->f, "ignored: %s\n", json_string_value(x));
}

/* The job's launcher, once: the first host's, and how many hosts have one of their own. */
static void
stk_print_launcher(const struct stk_out *o, const struct stk_result *r)
{
	json_t *l = json_array_get(r->launchers, 0);
	size_t more = json_array_size(r->launchers);

	if (l == NULL)
		return;
	fprintf(o->f, "launcher: %s (pid %d, host %s)", json_string_value(json_object_get(l,
	    "name")), (int)json_integer_value(json_object_get(l, "pid")),
	    json_string_value(json_object_get(l, "host")));
	if (more > 1)
		fprintf(o->f, ", and %zu more on other hosts (--json lists them)", more - 1);
	fputc('\n', o->f);
}

static void
stk_print_text(const struct stk_out *o, const struct stk_result *r, const struct stk_verdict *v)
{
	char *ranks;

	fprintf(o->f, "collstack: %d %s%s on %d host%s, read in %.2f s (longest pause %.2f ms)\n",
	    r->ntasks, o->label, r->ntasks == 1 ? "" : "s", r->nhosts, r->nhosts == 1 ? "" : "s",
	    r->ms / 1000, r->pause_max_ms);
	if (o->found != NULL)
		fprintf(o->f, "job: %s\n", o->found);
	stk_print_launcher(o, r);
	if (r->note != NULL)
		fprintf(o->f, "note: %s\n", r->note);
	if (r->ras_note != NULL)
		fprintf(o->f, "note: NCCL RAS skipped on %s\n", r->ras_note);
	if (r->fr_note != NULL)
		fprintf(o->f, "note: flight recorder: %s\n", r->fr_note);
	stk_print_notes(o, r);
	stk_print_ignored(o, r);
	for (int i = 0; i < v->n; i++)
		fprintf(o->f, "%s%s%s\n", v->code ? stk_c(o, C_BAD) : "", v->line[i],
		    v->code ? stk_c(o, C_OFF) : "");
	if (r->tree.nkids == 0)
		return;
	fputc('\n', o->f);
	ranks = rankset_str(&r->tree.ranks);
	fprintf(o->f, "%s[%s]%s (%d) %u threads\n", stk_c(o, C_RANK), ranks, stk_c(o, C_OFF),
	    rankset_count(&r->tree.ranks), r->tree.threads);
	free(ranks);
	for (int i = 0; i < r->tree.nkids; i++) {
		int last = i == r->tree.nkids - 1;

		stk_print_chain(o, r->tree.kids[i], last ? "└─ " : "├─ ", last ? "   " : "│  ",
		    &r->tree);
	}
	fputc('\n', o->f);
	stk_print_classes(o, r);
}

static json_t *
stk_tree_json(const struct stack_node *n)
{
	char *ranks = rankset_str(&n->ranks), name[600];
	json_t *o, *kids = json_array();

	stack_node_name(n, name, sizeof name);
	for (int i = 0; i < n->nkids; i++)
		json_array_append_new(kids, stk_tree_json(n->kids[i]));
	o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:b, s:b, s:o}", "frame", name, "ranks", ranks,
	    "count", rankset_count(&n->ranks), "threads", (int)n->threads, "line",
	    n->line, "inlined", n->kind == STACK_FRAME_INLINED, "python",
	    n->kind == STACK_FRAME_PYTHON, "children", kids);
	if (n->file)
		json_object_set_new(o, "file", json_string(n->file));
	if (n->module)
		json_object_set_new(o, "module", json_string(n->module));
	free(ranks);
	return o;
}

/* Who a fact or culprit names: its id (rank or task number), rank, host and pid. */
static void
stk_who_json(json_t *o, const struct stk_result *r, int task)
{
	const struct stk_task *t = &r->tasks[task];

	json_object_set_new(o, "id", json_integer(t->id));
	json_object_set_new(o, "rank", t->rank >= 0 ? json_integer(t->rank) : json_null());
	json_object_set_new(o, "host", json_string(t->host));
	json_object_set_new(o, "pid", json_integer(t->pid));
}

/* The verdict, a line each: its kind and what it names, with the line as printed. */
static json_t *
stk_verdict_json(const struct stk_result *r, const struct stk_verdict *v)
{
	json_t *a = json_array();

	for (int i = 0; i < v->n; i++) {
		const struct stk_fact *f = &v->fact[i];
		json_t *o = json_pack("{s:s}", "kind", f->kind);

		if (f->task >= 0 && f->task < r->ntasks)
			stk_who_json(o, r, f->task);
		if (f->ranks != NULL)
			json_object_set_new(o, "ranks", json_string(f->ranks));
		if (f->comm[0] != '\0')
			json_object_set_new(o, "comm", json_string(f->comm));
		if (f->op != NULL)
			json_object_set_new(o, "op", json_string(f->op));
		if (f->seq >= 0)
			json_object_set_new(o, "seq", json_integer(f->seq));
		json_object_set_new(o, "text", json_string(v->line[i]));
		json_array_append_new(a, o);
	}
	return a;
}

/* The culprits: who, why (the line printed), the sources that agree, and what it is behind in. */
static json_t *
stk_culprits_json(const struct stk_result *r, const struct stk_verdict *v)
{
	json_t *a = json_array();

	for (int i = 0; i < v->nculprits; i++) {
		json_t *o = json_object(), *why = json_null();

		stk_who_json(o, r, v->culprits[i]);
		for (int k = 0; k < v->n && json_is_null(why); k++)
			if (strcmp(v->fact[k].kind, "culprit") == 0 && v->fact[k].task == v->culprits[i])
				why = json_string(v->line[k] + 3);	/* past "=> " */
		json_object_set_new(o, "why", why);
		json_object_set_new(o, "sources", stk_sources_json(v, i));
		if (v->op[i] != NULL)
			json_object_set_new(o, "behind_in", json_string(v->op[i]));
		json_array_append_new(a, o);
	}
	return a;
}

/*
 * A task, with its main thread's stack as py-spy dump gives one: its thread
 * id (the main thread's is the pid) and its frames, innermost first.
 */
static json_t *
stk_task_out(const struct stk_task *t)
{
	json_t *o = stk_task_json(t), *frames = json_array();
	const char *p, *sep;

	if (t->stack == NULL)
		return o;
	/* " < " between frames (a C++ frame may hold a bare '<'). */
	for (p = t->stack; p != NULL; p = sep != NULL ? sep + 3 : NULL) {
		sep = strstr(p, " < ");
		json_array_append_new(frames, json_stringn(p, sep != NULL ? (size_t)(sep - p) :
		    strlen(p)));
	}
	json_object_set_new(o, "main_thread", json_pack("{s:i, s:o}", "tid", t->pid, "frames",
	    frames));
	return o;
}

/* The parts only some jobs have. */
static void
stk_print_json_rest(const struct stk_out *o, const struct stk_result *r, json_t *rec)
{
	if (r->note)
		json_object_set_new(rec, "note", json_string(r->note));
	if (r->ras != NULL)
		json_object_set_new(rec, "ras", json_pack("{s:s, s:O}", "host", r->ras_host ?
		    r->ras_host : "", "report", r->ras));
	if (r->ras_note != NULL)
		json_object_set_new(rec, "ras_note", json_string(r->ras_note));
	if (r->ignored != NULL)
		json_object_set_new(rec, "ignored", json_incref(r->ignored));
	if (o->found != NULL)
		json_object_set_new(rec, "found", json_string(o->found));
	if (r->launchers != NULL) {
		json_object_set_new(rec, "launcher", json_incref(json_array_get(r->launchers, 0)));
		json_object_set_new(rec, "launchers", json_incref(r->launchers));
	}
}

static void
stk_print_json(const struct stk_out *o, const struct stk_result *r, const struct stk_verdict *v)
{
	json_t *rec = json_object(), *tasks = json_array(), *tree = json_array(),
	    *hosts = json_array();

	for (int i = 0; i < r->ntasks; i++)
		json_array_append_new(tasks, stk_task_out(&r->tasks[i]));
	for (int i = 0; i < r->tree.nkids; i++)
		json_array_append_new(tree, stk_tree_json(r->tree.kids[i]));
	for (int i = 0; i < r->nhosts; i++)
		json_array_append_new(hosts, json_string(r->hosts[i]));
	json_object_set_new(rec, "schema", json_string(STK_JSON_SCHEMA));
	/*
	 * As the text: the merged tree from the outermost frame down (STAT's
	 * prefix tree: stacks merge from main), a single stack innermost first
	 * (py-spy dump, gdb's bt: the frame that waits, first).
	 */
	json_object_set_new(rec, "tree_order", json_string("outermost-first"));
	json_object_set_new(rec, "stack_order", json_string("innermost-first"));
	json_object_set_new(rec, "labels", json_string(o->label));
	json_object_set_new(rec, "verdict", stk_verdict_json(r, v));
	json_object_set_new(rec, "culprits", stk_culprits_json(r, v));
	json_object_set_new(rec, "exit", json_integer(v->code));
	json_object_set_new(rec, "hosts", hosts);
	json_object_set_new(rec, "tasks", tasks);
	json_object_set_new(rec, "tree", tree);
	json_object_set_new(rec, "ms", json_real(r->ms));
	json_object_set_new(rec, "pause_max_ms", json_real(r->pause_max_ms));
	stk_print_json_rest(o, r, rec);
	json_dumpf(rec, o->f, JSON_INDENT(1));
	fputc('\n', o->f);
	json_decref(rec);
}

static void
stk_dot_text(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else
			fputc(*s, f);
}

static void
stk_dot_node(FILE *f, const struct stack_node *n, int *id, int parent)
{
	char *ranks = rankset_str(&n->ranks), name[600];
	int me = (*id)++;

	stack_node_name(n, name, sizeof name);
	fprintf(f, "  n%d [label=\"", me);
	stk_dot_text(f, name);
	if (n->file != NULL) {
		fputs("\\n", f);
		stk_dot_text(f, n->file);
		if (n->line > 0)
			fprintf(f, ":%d", n->line);
	}
	fprintf(f, "\\n[%s] (%d)\"];\n", ranks, rankset_count(&n->ranks));
	if (parent >= 0)
		fprintf(f, "  n%d -> n%d [label=\"%d\"];\n", parent, me,
		    rankset_count(&n->ranks));
	free(ranks);
	for (int i = 0; i < n->nkids; i++)
		stk_dot_node(f, n->kids[i], id, me);
}

static void
stk_print_dot(FILE *f, const struct stk_result *r)
{
	int id = 0;

	fprintf(f, "digraph collstack {\n  node [shape=box, fontname=\"monospace\"];\n");
	for (int i = 0; i < r->tree.nkids; i++)
		stk_dot_node(f, r->tree.kids[i], &id, -1);
	fprintf(f, "}\n");
}

static int
stk_print_svg(const struct stk_result *r)
{
	FILE *p;
	int st;

	fflush(stdout);
	if ((p = popen("dot -Tsvg", "w")) == NULL) {
		fprintf(stderr, "collstack: cannot run Graphviz's dot: install graphviz, or use "
		    "--dot and draw it elsewhere\n");
		return EXIT_CANNOT;
	}
	stk_print_dot(p, r);
	st = pclose(p);
	if (st != 0) {
		fprintf(stderr, "collstack: Graphviz's dot failed (status %d): install graphviz, "
		    "or use --dot and draw it elsewhere\n", st);
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

int
stk_render(const struct stk_result *r, const struct stk_verdict *v, const struct stk_args *a)
{
	struct stk_out o = { stdout, a->color && a->fmt == FMT_TEXT, "", a->found };

	snprintf(o.label, sizeof o.label, "%s", r->by_rank ? "rank" : "task");
	stk_sort_tree((struct stack_node *)&r->tree);
	switch (a->fmt) {
	case FMT_JSON:
		stk_print_json(&o, r, v);
		break;
	case FMT_DOT:
		stk_print_dot(stdout, r);
		break;
	case FMT_SVG:
		if (stk_print_svg(r) != EXIT_OK)
			return EXIT_CANNOT;
		break;
	default:
		stk_print_text(&o, r, v);
	}
	return v->code;
}
