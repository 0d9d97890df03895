/*
 * The record rank 0 hands the front end on its stdout, one JSON line: the
 * tasks (one per process, with its status pages), the hosts, timings, and
 * the merged tree in its packed form. Read back strictly: every field is
 * checked, since a worker is another process on another host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "err.h"
#include "msg.h"
#include "xmalloc.h"

#define STK_MAX_TASKS (1 << 22)

/*
 * Text that came from the processes read (command lines, names, errors in
 * their status pages) as printable ASCII: nothing reaches a terminal as an
 * escape, and JSON always takes it (msg_clean, the one cleaner).
 */
void
stk_clean_here(char *s)
{
	msg_clean(s);
}

static char *
stk_clean(const char *s)
{
	char *d = xstrdup(s ? s : "");

	stk_clean_here(d);
	return d;
}

static json_t *
stk_clean_json(const char *s)
{
	char *c = stk_clean(s);
	json_t *j = json_string(c);

	free(c);
	return j;
}

/* An NCCL page's own: kernel events, and what NCCL said of the op where it did. */
static json_t *
stk_page_nccl_json(const struct stk_page *p)
{
	json_t *o = json_pack("{s:b, s:I, s:i}", "kernel", p->kernel, "seq_kernel",
	    (json_int_t)p->seq_kernel, "kind_kernel", (int)p->kind_kernel);

	if (p->dtype[0])
		json_object_set_new(o, "dtype", stk_clean_json(p->dtype));
	if (p->algo[0])
		json_object_set_new(o, "algo", stk_clean_json(p->algo));
	if (p->proto[0])
		json_object_set_new(o, "proto", stk_clean_json(p->proto));
	if (p->lib_version > 0)
		json_object_set_new(o, "version", json_integer((json_int_t)p->lib_version));
	return o;
}

static json_t *
stk_page_json(const struct stk_page *p)
{
	json_t *o = json_pack("{s:o, s:i, s:i, s:i, s:I, s:I, s:i, s:i, s:I, s:i, s:i, s:f, s:o}",
	    "comm", stk_clean_json(p->commid), "nranks", p->nranks, "rank", p->rank, "state",
	    p->state, "seq_started", (json_int_t)p->seq_started, "seq_done",
	    (json_int_t)p->seq_done, "kind_started", (int)p->kind_started, "kind_done",
	    (int)p->kind_done, "bytes", (json_int_t)p->bytes, "wait_peer", p->wait_peer,
	    "wait_dir", p->wait_dir, "idle_s", p->idle_s, "error", stk_clean_json(p->error));

	if (o != NULL && p->nccl)
		json_object_set_new(o, "nccl", stk_page_nccl_json(p));
	return o;
}

json_t *
stk_task_json(const struct stk_task *t)
{
	json_t *o, *pages = json_array();
	char st[2] = { t->state ? t->state : 'G', '\0' };

	for (int i = 0; i < t->npages; i++)
		json_array_append_new(pages, stk_page_json(&t->pages[i]));
	if (st[0] < 'A' || st[0] > 'z')
		st[0] = '?';
	o = json_pack("{s:i, s:i, s:o, s:i, s:s, s:o, s:o, s:i, s:f, s:o}", "id", t->id,
	    "rank", t->rank, "host", stk_clean_json(t->host), "pid", t->pid, "state", st,
	    "comm", stk_clean_json(t->comm), "cmdline", stk_clean_json(t->cmdline),
	    "threads", t->nthreads, "pause_ms", t->pause_ms, "pages", pages);
	if (t->err != NULL)
		json_object_set_new(o, "error", stk_clean_json(t->err));
	if (t->where != NULL)
		json_object_set_new(o, "where", stk_clean_json(t->where));
	if (t->note != NULL)
		json_object_set_new(o, "note", stk_clean_json(t->note));
	if (t->stack != NULL)
		json_object_set_new(o, "stack", stk_clean_json(t->stack));
	json_object_set_new(o, "in_comm", json_integer(t->in_comm));
	if (t->kernels != NULL)
		json_object_set_new(o, "kernels", stk_clean_json(t->kernels));
	if (t->kernels_err != NULL)
		json_object_set_new(o, "kernels_error", stk_clean_json(t->kernels_err));
	return o;
}

static int
stk_int(json_t *o, const char *k, long long lo, long long hi, long long *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
		return -1;
	*v = json_integer_value(x);
	return 0;
}

static char *
stk_str(json_t *o, const char *k)
{
	json_t *x = json_object_get(o, k);

	return json_is_string(x) ? stk_clean(json_string_value(x)) : NULL;
}

/* What NCCL said of the op (a worker's, newer or older: each field optional), printable. */
static void
stk_page_op_read(struct stk_page *p, json_t *nc)
{
	struct {
		const char *key;
		char *to;
	} s[] = { { "dtype", p->dtype }, { "algo", p->algo }, { "proto", p->proto } };
	json_t *ver = json_object_get(nc, "version"), *kk = json_object_get(nc, "kind_kernel");

	for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
		const char *v = json_string_value(json_object_get(nc, s[i].key));

		snprintf(s[i].to, sizeof p->dtype, "%s", v != NULL ? v : "");
		stk_clean_here(s[i].to);
	}
	p->kind_kernel = json_is_integer(kk) && json_integer_value(kk) >= 0 &&
	    json_integer_value(kk) < 256 ? (unsigned)json_integer_value(kk) : p->kind_started;
	p->lib_version = json_is_integer(ver) && json_integer_value(ver) > 0 &&
	    json_integer_value(ver) < 1000000 ? (unsigned)json_integer_value(ver) : 0;
}

static int
stk_page_read(struct stk_page *p, json_t *o)
{
	long long v[11];
	static const char *const k[] = { "nranks", "rank", "state", "seq_started", "seq_done",
		"kind_started", "kind_done", "bytes", "wait_peer", "wait_dir" };
	const char *comm = json_string_value(json_object_get(o, "comm"));
	const char *e = json_string_value(json_object_get(o, "error"));
	json_t *nc;

	for (int i = 0; i < 10; i++)
		if (stk_int(o, k[i], -1, INT64_MAX, &v[i]) != 0)
			return -1;
	if (comm == NULL || strlen(comm) >= sizeof p->commid || v[0] < 1 || v[0] > 1 << 24 ||
	    v[1] < 0 || v[1] >= v[0] || !json_is_number(json_object_get(o, "idle_s")))
		return -1;
	snprintf(p->commid, sizeof p->commid, "%s", comm);
	stk_clean_here(p->commid);
	p->nranks = (int)v[0];
	p->rank = (int)v[1];
	p->state = (int)v[2];
	p->seq_started = (uint64_t)v[3];
	p->seq_done = (uint64_t)v[4];
	p->kind_started = (unsigned)v[5];
	p->kind_done = (unsigned)v[6];
	p->bytes = (uint64_t)v[7];
	p->wait_peer = v[8] > INT32_MAX ? -1 : (int)v[8];
	p->wait_dir = (int)(v[9] & 3);
	p->idle_s = json_number_value(json_object_get(o, "idle_s"));
	snprintf(p->error, sizeof p->error, "%s", e ? e : "");
	stk_clean_here(p->error);
	if ((nc = json_object_get(o, "nccl")) != NULL) {
		json_t *sk = json_object_get(nc, "seq_kernel");

		if (!json_is_object(nc) || !json_is_integer(sk) || json_integer_value(sk) < 0)
			return -1;
		p->nccl = 1;
		p->kernel = json_is_true(json_object_get(nc, "kernel"));
		p->seq_kernel = (uint64_t)json_integer_value(sk);
		stk_page_op_read(p, nc);
	}
	return 0;
}

int
stk_task_read(struct stk_task *t, json_t *o)
{
	long long id, rank, pid, th;
	json_t *pages = json_object_get(o, "pages");
	const char *st = json_string_value(json_object_get(o, "state"));

	memset(t, 0, sizeof *t);
	if (!json_is_object(o) || stk_int(o, "id", 0, STACK_RANK_MAX - 1, &id) ||
	    stk_int(o, "rank", -1, STACK_RANK_MAX - 1, &rank) ||
	    stk_int(o, "pid", 1, INT32_MAX, &pid) || stk_int(o, "threads", 0, 1 << 20, &th) ||
	    st == NULL || strlen(st) != 1 || !json_is_array(pages) ||
	    json_array_size(pages) > 1024 || !json_is_number(json_object_get(o, "pause_ms")))
		return -1;
	t->id = (int)id;
	t->rank = (int)rank;
	t->pid = (int)pid;
	t->nthreads = (int)th;
	t->state = st[0];
	t->pause_ms = json_number_value(json_object_get(o, "pause_ms"));
	t->host = stk_str(o, "host");
	t->comm = stk_str(o, "comm");
	t->cmdline = stk_str(o, "cmdline");
	t->err = stk_str(o, "error");
	t->where = stk_str(o, "where");
	t->note = stk_str(o, "note");
	t->stack = stk_str(o, "stack");
	t->kernels = stk_str(o, "kernels");
	t->kernels_err = stk_str(o, "kernels_error");
	t->in_comm = json_is_integer(json_object_get(o, "in_comm")) ?
	    (int)(json_integer_value(json_object_get(o, "in_comm")) > 0) -
	    (json_integer_value(json_object_get(o, "in_comm")) < 0) : -1;
	if (t->host == NULL || t->comm == NULL || t->cmdline == NULL)
		return -1;
	t->pages = xcalloc(json_array_size(pages) + 1, sizeof *t->pages);
	for (size_t i = 0; i < json_array_size(pages); i++) {
		if (stk_page_read(&t->pages[i], json_array_get(pages, i)) != 0)
			return -1;
		t->npages++;
	}
	return 0;
}

json_t *
stk_record(const struct stk_result *r)
{
	json_t *rec = json_object(), *tasks = json_array(), *hosts = json_array();
	size_t len;
	char *tree = stack_tree_pack(&r->tree, &len);

	for (int i = 0; i < r->ntasks; i++)
		json_array_append_new(tasks, stk_task_json(&r->tasks[i]));
	for (int i = 0; i < r->nhosts; i++)
		json_array_append_new(hosts, json_string(r->hosts[i]));
	json_object_set_new(rec, "version", json_integer(1));
	json_object_set_new(rec, "by_rank", json_boolean(r->by_rank));
	json_object_set_new(rec, "size", json_integer(r->size));
	json_object_set_new(rec, "hosts", hosts);
	json_object_set_new(rec, "tasks", tasks);
	json_object_set_new(rec, "ms", json_real(r->ms));
	json_object_set_new(rec, "pause_max_ms", json_real(r->pause_max_ms));
	json_object_set_new(rec, "cache_hits", json_integer((json_int_t)r->cache_hits));
	json_object_set_new(rec, "cache_misses", json_integer((json_int_t)r->cache_misses));
	if (r->note != NULL)
		json_object_set_new(rec, "note", json_string(r->note));
	if (r->ras != NULL)
		json_object_set_new(rec, "ras", json_pack("{s:O, s:s}", "report", r->ras, "host",
		    r->ras_host ? r->ras_host : ""));
	if (r->ras_note != NULL)
		json_object_set_new(rec, "ras_note", json_string(r->ras_note));
	if (r->fr_lines != NULL)
		json_object_set_new(rec, "fr", json_pack("{s:O, s:O}", "lines", r->fr_lines,
		    "findings", r->fr_findings));
	if (r->fr_note != NULL)
		json_object_set_new(rec, "fr_note", stk_clean_json(r->fr_note));
	if (r->ignored != NULL)
		json_object_set_new(rec, "ignored", json_incref(r->ignored));
	if (r->gpus != NULL)
		json_object_set_new(rec, "gpus", json_incref(r->gpus));
	if (r->launchers != NULL)
		json_object_set_new(rec, "launchers", json_incref(r->launchers));
	json_object_set_new(rec, "tree", json_stringn(tree, len));
	free(tree);
	return rec;
}

/* The record's GPUs, host by host, checked as a worker's are. */
static void
stk_gpus_read(struct stk_result *r, json_t *a)
{
	json_t *x;
	size_t i;

	json_array_foreach(a, i, x)
		stk_gpu_keep(r, json_object_get(x, "gpus"), json_string_value(json_object_get(x,
		    "host")));
}

static int
stk_record_fail(json_t *rec, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "rank 0's record %s", what);
	json_decref(rec);
	return -1;
}

/*
 * Append a's strings to the ignored list, each "HOST: why" when host is
 * given (rank 0 gathering its hosts' lists) and made printable.
 */
void
stk_ignored_add(struct stk_result *r, json_t *a, const char *host)
{
	json_t *x;
	size_t i;

	json_array_foreach(a, i, x) {
		char *s;

		if (!json_is_string(x))
			continue;
		if (r->ignored == NULL)
			r->ignored = json_array();
		s = host ? xasprintf("%s: %s", host, json_string_value(x)) :
		    xstrdup(json_string_value(x));
		json_array_append_new(r->ignored, stk_clean_json(s));
		free(s);
	}
}

#define STK_LAUNCHERS_MAX 4096	/* one per host is kept; beyond, counted as more hosts */

void
stk_launcher_put(const struct stk_local *l, json_t *blob)
{
	if (l->launcher[0] != '\0')
		json_object_set_new(blob, "launcher", json_pack("{s:o, s:i}", "name",
		    stk_clean_json(l->launcher), "pid", (int)l->launcher_pid));
	if (l->why != NULL)
		json_object_set_new(blob, "ranks_why", stk_clean_json(l->why));
}

/* One {name, pid, host} launcher, checked; NULL if malformed. */
static json_t *
stk_launcher_json(json_t *o, const char *host)
{
	long long pid;
	const char *name = json_string_value(json_object_get(o, "name"));

	if (host == NULL)
		host = json_string_value(json_object_get(o, "host"));
	if (!json_is_object(o) || name == NULL || host == NULL ||
	    stk_int(o, "pid", 1, INT32_MAX, &pid) != 0)
		return NULL;
	return json_pack("{s:o, s:I, s:o}", "name", stk_clean_json(name), "pid",
	    (json_int_t)pid, "host", stk_clean_json(host));
}

static void
stk_launcher_keep(struct stk_result *r, json_t *l)
{
	if (l == NULL)
		return;
	if (r->launchers == NULL)
		r->launchers = json_array();
	if (json_array_size(r->launchers) < STK_LAUNCHERS_MAX)
		json_array_append_new(r->launchers, l);
	else
		json_decref(l);
}

void
stk_launcher_gather(struct stk_result *r, json_t *o, const char *host)
{
	const char *why = json_string_value(json_object_get(o, "ranks_why"));

	if (json_object_get(o, "launcher") != NULL)
		stk_launcher_keep(r, stk_launcher_json(json_object_get(o, "launcher"), host));
	if (why != NULL && r->ranks_why == NULL)
		r->ranks_why = xasprintf("%s: %s", host, why);
	if (r->ranks_why != NULL)
		stk_clean_here(r->ranks_why);
}

/* Why the tasks carry no distinct ranks: a host's word, else a task without one or two alike. */
static char *
stk_ids_why(const struct stk_result *r)
{
	if (r->ranks_why != NULL)
		return xstrdup(r->ranks_why);
	for (int i = 0; i < r->ntasks; i++)
		if (r->tasks[i].rank < 0)
			return xasprintf("pid %d (%s) on %s carries none", r->tasks[i].pid,
			    r->tasks[i].comm, r->tasks[i].host);
	for (int i = 0; i < r->ntasks; i++)
		for (int k = i + 1; k < r->ntasks && k < i + 4096; k++)
			if (r->tasks[i].rank == r->tasks[k].rank)
				return xasprintf("pids %d (%s) and %d (%s) both carry rank %d",
				    r->tasks[i].pid, r->tasks[i].host, r->tasks[k].pid,
				    r->tasks[k].host, r->tasks[i].rank);
	return NULL;
}

void
stk_ids_note(struct stk_result *r)
{
	char *why;

	if (r->by_rank || r->ntasks == 0 || r->note != NULL)
		return;
	why = stk_ids_why(r);
	r->note = xasprintf("the processes do not all carry a distinct rank in their "
	    "environment%s%s%s: they are numbered by host and pid", why ? " (" : "",
	    why ? why : "", why ? ")" : "");
	free(why);
}

int
stk_record_read(struct stk_result *r, const char *buf, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *rec = json_loadb(buf, len, 0, &je), *tasks, *hosts, *tree;
	long long size;

	memset(r, 0, sizeof *r);
	stack_tree_init(&r->tree);
	if (rec == NULL) {
		snprintf(err, errlen, "rank 0's record is not JSON (%s at %d)", je.text, je.position);
		stk_clean_here(err);	/* jansson quotes the text near the fault as it was */
		return -1;
	}
	tasks = json_object_get(rec, "tasks");
	hosts = json_object_get(rec, "hosts");
	tree = json_object_get(rec, "tree");
	if (!json_is_array(tasks) || json_array_size(tasks) > STK_MAX_TASKS ||
	    !json_is_array(hosts) || !json_is_string(tree) ||
	    stk_int(rec, "size", 0, STACK_RANK_MAX, &size) != 0)
		return stk_record_fail(rec, err, errlen, "lacks tasks, hosts or the tree");
	r->by_rank = json_is_true(json_object_get(rec, "by_rank"));
	r->size = (int)size;
	r->tasks = xcalloc(json_array_size(tasks) + 1, sizeof *r->tasks);
	for (size_t i = 0; i < json_array_size(tasks); i++) {
		if (stk_task_read(&r->tasks[i], json_array_get(tasks, i)) != 0) {
			r->ntasks = (int)i + 1;
			return stk_record_fail(rec, err, errlen, "has a malformed task");
		}
		if (i > 0 && r->tasks[i].id <= r->tasks[i - 1].id) {
			r->ntasks = (int)i + 1;
			return stk_record_fail(rec, err, errlen, "has tasks out of order");
		}
		r->ntasks = (int)i + 1;
	}
	r->hosts = xcalloc(json_array_size(hosts) + 1, sizeof *r->hosts);
	for (size_t i = 0; i < json_array_size(hosts); i++) {
		if (!json_is_string(json_array_get(hosts, i)))
			return stk_record_fail(rec, err, errlen, "has a malformed host");
		r->hosts[r->nhosts++] = xstrdup(json_string_value(json_array_get(hosts, i)));
	}
	r->ms = json_number_value(json_object_get(rec, "ms"));
	r->pause_max_ms = json_number_value(json_object_get(rec, "pause_max_ms"));
	r->cache_hits = (uint64_t)json_integer_value(json_object_get(rec, "cache_hits"));
	r->cache_misses = (uint64_t)json_integer_value(json_object_get(rec, "cache_misses"));
	r->note = stk_str(rec, "note");
	r->ras_note = stk_str(rec, "ras_note");
	if (json_is_object(json_object_get(json_object_get(rec, "ras"), "report"))) {
		r->ras = json_incref(json_object_get(json_object_get(rec, "ras"), "report"));
		r->ras_host = stk_str(json_object_get(rec, "ras"), "host");
	}
	r->fr_note = stk_str(rec, "fr_note");
	stk_ignored_add(r, json_object_get(rec, "ignored"), NULL);
	stk_gpus_read(r, json_object_get(rec, "gpus"));
	for (size_t i = 0; i < json_array_size(json_object_get(rec, "launchers")); i++)
		stk_launcher_keep(r, stk_launcher_json(json_array_get(json_object_get(rec,
		    "launchers"), i), NULL));
	if (json_is_array(json_object_get(json_object_get(rec, "fr"), "lines")) &&
	    json_is_array(json_object_get(json_object_get(rec, "fr"), "findings"))) {
		json_t *x;
		size_t i;

		json_array_foreach(json_object_get(json_object_get(rec, "fr"), "lines"), i, x)
			if (!json_is_string(x))
				return stk_record_fail(rec, err, errlen, "has a malformed flight "
				    "recorder report");
		r->fr_lines = json_incref(json_object_get(json_object_get(rec, "fr"), "lines"));
		r->fr_findings = json_incref(json_object_get(json_object_get(rec, "fr"),
		    "findings"));
	}
	if (stack_tree_parse(&r->tree, json_string_value(tree), json_string_length(tree), err,
	    errlen) != COLL_OK)
		return stk_record_fail(rec, err, errlen, "has a malformed tree");
	json_decref(rec);
	return 0;
}

void
stk_task_free(struct stk_task *t)
{
	free(t->host);
	free(t->comm);
	free(t->cmdline);
	free(t->err);
	free(t->note);
	free(t->where);
	free(t->stack);
	free(t->kernels);
	free(t->kernels_err);
	free(t->pages);
}

void
stk_result_free(struct stk_result *r)
{
	for (int i = 0; i < r->ntasks; i++)
		stk_task_free(&r->tasks[i]);
	free(r->tasks);
	for (int i = 0; i < r->nhosts; i++)
		free(r->hosts[i]);
	free(r->hosts);
	free(r->note);
	json_decref(r->ras);
	free(r->ras_host);
	free(r->ras_note);
	json_decref(r->fr_lines);
	json_decref(r->fr_findings);
	free(r->fr_note);
	json_decref(r->ignored);
	json_decref(r->gpus);
	json_decref(r->launchers);
	free(r->ranks_why);
	stack_tree_free(&r->tree);
	memset(r, 0, sizeof *r);
}
