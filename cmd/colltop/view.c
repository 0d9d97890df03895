/*
 * The model as text: the rank and host tables (cells with the number each
 * sorts by and an attribute), the alert lines, the summary and sparklines.
 * The screen and the batch writer both print from here, so what a script
 * reads is what a person sees. No curses: ui.c maps attributes to colours.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "msg.h"
#include "user.h"
#include "top.h"
#include "xmalloc.h"

static const char *const view_rank_cols[] = { "RANK", "HOST", "STATE", "LAT_MS", "LATE_MS",
	"BUSBW", "HISTORY" };
static const char *const view_host_cols[] = { "HOST", "RANKS", "STATE", "NET_RX", "NET_TX",
	"NET_ERR", "CARRIER", "RDMA_RX", "RDMA_TX", "RDMA_ERR", "RETRANS", "GPU%", "MEM%",
	"POWER_W", "TEMP_C", "NVLINK", "PCIE", "THROTTLE" };
#define VIEW_RANK_NCOLS (int)(sizeof view_rank_cols / sizeof view_rank_cols[0])
#define VIEW_HOST_NCOLS (int)(sizeof view_host_cols / sizeof view_host_cols[0])
#define VIEW_SPARK 24

int
view_ncols(int by_host)
{
	return by_host ? VIEW_HOST_NCOLS : VIEW_RANK_NCOLS;
}

const char *
view_col_name(int by_host, int col)
{
	if (col < 0 || col >= view_ncols(by_host))
		return "?";
	return by_host ? view_host_cols[col] : view_rank_cols[col];
}

int
view_col_parse(int by_host, const char *name)
{
	for (int c = 0; c < view_ncols(by_host); c++)
		if (strcasecmp(view_col_name(by_host, c), name) == 0)
			return c;
	return -1;
}

void
view_spark(const float *v, int n, int width, int ascii, char *buf, size_t len)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585",
		"\u2586", "\u2587", "\u2588" };
	static const char ramp[] = "_.-:=+*#";
	int from = n > width ? n - width : 0;
	float hi = 0;
	size_t o = 0;

	buf[0] = '\0';
	for (int i = from; i < n; i++)
		hi = v[i] > hi ? v[i] : hi;
	for (int i = from; i < n && o + 4 < len; i++) {
		int k = hi > 0 && v[i] > 0 ? (int)(v[i] / hi * 7.999f) : 0;

		k = k < 0 ? 0 : k > 7 ? 7 : k;
		if (ascii)
			buf[o++] = ramp[k];
		else
			o += (size_t)snprintf(buf + o, len - o, "%s", blocks[k]);
	}
	buf[o] = '\0';
}

static void
view_num(struct view_cell *c, double v, const char *fmt, double scale)
{
	c->right = 1;
	if (v < 0 || isnan(v)) {
		snprintf(c->text, sizeof c->text, "-");
		c->num = -1;
		return;
	}
	snprintf(c->text, sizeof c->text, fmt, v / scale);
	c->num = v;
}

static void
view_str(struct view_cell *c, const char *s, int attr)
{
	snprintf(c->text, sizeof c->text, "%s", s);
	msg_clean(c->text);	/* names from the hosts: interfaces, GPUs, clock reasons */
	c->num = NAN;
	c->attr = attr;
}

static void
view_rank_row(const struct top_model *m, const struct top_rank *x, int ascii,
    struct view_cell *row)
{
	char n[16];

	snprintf(n, sizeof n, "%d", x->rank);
	view_str(&row[0], n, VA_NONE);
	row[0].num = x->rank;
	row[0].right = 1;
	view_str(&row[1], x->host >= 0 ? m->hosts[x->host].name : "?", VA_NONE);
	view_str(&row[2], x->lost ? "lost" : x->straggler ? "SLOW" : x->slow_run ? "late" : "ok",
	    x->lost || x->straggler ? VA_BAD : x->slow_run ? VA_WARN : VA_OK);
	view_num(&row[3], x->lost ? -1 : x->lat_us, "%.3f", 1e3);
	view_num(&row[4], x->lost ? -1 : x->late_us, "%.3f", 1e3);
	view_num(&row[5], x->lost ? -1 : x->busbw, "%.3f", 1);
	if (x->straggler)
		row[4].attr = VA_BAD;
	view_spark(x->hist, x->nhist, VIEW_SPARK, ascii, row[6].text, sizeof row[6].text);
	row[6].num = x->lat_us;
	row[6].attr = VA_DIM;
}

/* Sum of a numeric field over an array of objects; -1 when none had it. */
static double
view_sum(json_t *arr, const char *key, int max_of)
{
	double s = -1;
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o) {
		json_t *v = json_object_get(o, key);
		double x;

		if (!json_is_number(v) || (x = json_number_value(v)) < 0)
			continue;
		s = s < 0 ? x : max_of ? fmax(s, x) : s + x;
	}
	return s;
}

/* Both directions summed; -1 when neither was there. */
static double
view_sum2(json_t *arr, const char *a, const char *b)
{
	double x = view_sum(arr, a, 0), y = view_sum(arr, b, 0);

	return x < 0 && y < 0 ? -1 : (x > 0 ? x : 0) + (y > 0 ? y : 0);
}

static double
view_rdma_errs(json_t *rdma)
{
	double s = -1;
	size_t i;
	json_t *o;

	json_array_foreach(rdma, i, o) {
		double e = (double)json_integer_value(json_object_get(o, "symbol_errors")) +
		    (double)json_integer_value(json_object_get(o, "link_downed")) +
		    (double)json_integer_value(json_object_get(o, "rx_errors"));

		s = s < 0 ? e : s + e;
	}
	return s;
}

static void
view_gpu_cells(json_t *gpu, struct view_cell *row)
{
	double used = view_sum(gpu, "mem_used", 0), total = view_sum(gpu, "mem_total", 0);
	double util = view_sum(gpu, "util", 0), n = (double)json_array_size(gpu);
	char why[96] = "";
	size_t i;
	json_t *o;

	view_num(&row[0], n > 0 && util >= 0 ? util / n : -1, "%.0f", 1);
	view_num(&row[1], total > 0 ? used / total * 100 : -1, "%.0f", 1);
	view_num(&row[2], view_sum(gpu, "power_mw", 0), "%.0f", 1e3);
	view_num(&row[3], view_sum(gpu, "temp_c", 1), "%.0f", 1);
	view_num(&row[4], view_sum2(gpu, "nvlink_tx_bps", "nvlink_rx_bps"), "%.1f", 1e6);
	view_num(&row[5], view_sum2(gpu, "pcie_tx_kbs", "pcie_rx_kbs") * 1e3, "%.1f", 1e6);
	json_array_foreach(gpu, i, o) {
		const char *t = json_string_value(json_object_get(o, "throttle"));

		if (t != NULL && t[0] != '\0' && strcmp(t, "none") != 0 && strstr(why, t) == NULL)
			snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s",
			    why[0] ? "," : "", t);
	}
	view_str(&row[6], why[0] ? why : n > 0 ? "none" : "-", why[0] ? VA_WARN : VA_NONE);
}

static void
view_host_row(const struct top_host *h, struct view_cell *row)
{
	json_t *s = h->sample, *net = json_object_get(s, "net"), *rdma = json_object_get(s, "rdma");
	double nerr = view_sum(net, "errors_ps", 0), rerr = view_rdma_errs(rdma);
	double retr = view_sum(rdma, "retransmits_ps", 0);

	view_str(&row[0], h->name, VA_NONE);
	view_num(&row[1], h->nranks, "%.0f", 1);
	view_str(&row[2], h->lost ? "lost" : s == NULL ? "-" : "ok", h->lost ? VA_BAD : VA_OK);
	view_num(&row[3], view_sum(net, "rx_bps", 0), "%.2f", 1e6);
	view_num(&row[4], view_sum(net, "tx_bps", 0), "%.2f", 1e6);
	view_num(&row[5], nerr, "%.0f", 1);
	view_num(&row[6], view_sum(net, "carrier_changes", 0), "%.0f", 1);
	view_num(&row[7], view_sum(rdma, "rx_bps", 0), "%.2f", 1e6);
	view_num(&row[8], view_sum(rdma, "tx_bps", 0), "%.2f", 1e6);
	view_num(&row[9], rerr, "%.0f", 1);
	view_num(&row[10], retr, "%.0f", 1);
	row[5].attr = nerr > 0 ? VA_BAD : VA_NONE;
	row[9].attr = rerr > 0 ? VA_WARN : VA_NONE;
	row[10].attr = retr > 0 ? VA_WARN : VA_NONE;
	view_gpu_cells(json_object_get(s, "gpu"), &row[11]);
}

static int
view_row_matches(const struct view_cell *row, int ncols, const char *filter)
{
	if (filter == NULL || filter[0] == '\0')
		return 1;
	for (int c = 0; c < ncols; c++)
		if (strstr(row[c].text, filter) != NULL)
			return 1;
	return 0;
}

static int view_sort_col, view_sort_rev;

static int
view_cmp(const void *a, const void *b)
{
	const struct view_cell *x = &((const struct view_cell *)a)[view_sort_col];
	const struct view_cell *y = &((const struct view_cell *)b)[view_sort_col];
	int r;

	if (!isnan(x->num) && !isnan(y->num))
		r = x->num < y->num ? -1 : x->num > y->num;
	else
		r = strcmp(x->text, y->text);
	return view_sort_rev ? -r : r;
}

void
view_table(const struct top_model *m, int by_host, int sort, int reverse, const char *filter,
    int ascii, struct view_table *t)
{
	int n = by_host ? m->nhosts : m->nranks;

	memset(t, 0, sizeof *t);
	t->ncols = view_ncols(by_host);
	t->rows = xcalloc((size_t)n + 1, sizeof *t->rows);
	for (int c = 0; c < t->ncols; c++) {
		view_str(&t->head[c], view_col_name(by_host, c), VA_HEAD);
		t->width[c] = (int)strlen(t->head[c].text);
	}
	for (int i = 0; i < n; i++) {
		struct view_cell *row = t->rows[t->nrows];

		if (!by_host && m->ranks[i].rank < 0)
			continue;
		memset(row, 0, sizeof *t->rows);
		if (by_host)
			view_host_row(&m->hosts[i], row);
		else
			view_rank_row(m, &m->ranks[i], ascii, row);
		if (view_row_matches(row, t->ncols, filter))
			t->nrows++;
	}
	/* One table is drawn at a time, from one thread: qsort's comparator may read these. */
	view_sort_col = sort >= 0 && sort < t->ncols ? sort : 0;
	view_sort_rev = reverse;
	qsort(t->rows, (size_t)t->nrows, sizeof *t->rows, view_cmp);
	for (int r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++) {
			int w = c == t->ncols - 1 && !by_host ? VIEW_SPARK :
			    (int)strlen(t->rows[r][c].text);

			t->width[c] = w > t->width[c] ? w : t->width[c];
		}
}

void
view_table_free(struct view_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof *t);
}

/* Bytes as the options take them: 64K, 1M. */
static void
view_bytes(size_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%zuM", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%zuK", b >> 10);
	else
		snprintf(buf, len, "%zu", b);
}

void
view_summary(const struct top_model *m, char *buf, size_t len)
{
	int live = 0, hosts = 0;
	char b[32];

	for (int r = 0; r < m->nranks; r++)
		live += m->ranks[r].rank >= 0 && !m->ranks[r].lost;
	for (int h = 0; h < m->nhosts; h++)
		hosts += !m->hosts[h].lost;
	view_bytes(m->bytes, b, sizeof b);
	snprintf(buf, len, "%d rank%s on %d host%s  #%llu  every %.2g s  probe %s x%ld  busbw "
	    "%.3f GB/s  median lat %.3f ms, late %.3f ms", live, live == 1 ? "" : "s", hosts,
	    hosts == 1 ? "" : "s", (unsigned long long)m->frames, m->interval_s, b, m->iters,
	    m->busbw > 0 ? m->busbw : 0, m->med_lat_us > 0 ? m->med_lat_us / 1e3 : 0,
	    m->med_late_us > 0 ? m->med_late_us / 1e3 : 0);
}

int
view_stalled_job(const struct top_model *m)
{
	char me[64];
	int other = -1;

	/*
	 * The user's own first: another user's job stalled beside it (as root,
	 * a stranger's fake one) must not take c from it by coming first.
	 */
	user_name(geteuid(), me, sizeof me);
	for (int j = 0; j < m->njobs; j++) {
		if (!m->jobs[j].stalled)
			continue;
		if (strcmp(m->jobs[j].user, me) == 0)
			return j;
		if (other < 0)
			other = j;
	}
	return other;
}

int
view_jobrank_shown(const struct top_jobrank *r)
{
	return r->wrank >= 0 ? r->wrank : r->rank;
}

int
view_rank_shown(const struct top_job *j, int comm_rank)
{
	for (int k = 0; k < j->nr; k++)
		if (j->r[k].rank == comm_rank)
			return view_jobrank_shown(&j->r[k]);
	return comm_rank;
}

const char *
view_job_state(const struct top_job *j)
{
	if (j->live == 0)
		return "gone";
	return !j->stalled ? "advancing" : j->in_kernel ? "hung in kernel" : "stalled";
}

/* "run:x via torchrun:4711 (user) comm 92906a7a": a job coll did not launch by its launcher. */
static void
view_job_name(const struct top_job *x, char *buf, size_t len)
{
	if (x->launcher[0] != '\0' && strcmp(x->launcher, x->jobid) != 0)
		snprintf(buf, len, "%.64s via %.48s (%.32s) comm %.8s", x->jobid, x->launcher,
		    x->user, x->commid);
	else
		snprintf(buf, len, "%.64s (%.32s) comm %.8s", x->jobid, x->user, x->commid);
}

/* An alert line, cut at its 256 bytes: the names in it are cut short already. */
static void __attribute__((format(printf, 2, 3)))
view_line(char *line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, 256, fmt, ap);
	va_end(ap);
}

/*
 * An advancing job's line, with its latest rank by its own ops (LATE) where
 * it is late by min_late_ms at least (in a job of equal ranks, one of them
 * is always the latest by a hair: naming it would point at nothing), and
 * its retries where there are any.
 */
static void
view_alert_advancing(const struct top_job *x, const char *name, double min_late_ms, char *line)
{
	char late[64] = "", retries[48] = "";
	int w = -1;

	for (int k = 0; k < x->nr; k++)
		if (x->r[k].late_ms >= 0 && (w < 0 || x->r[k].late_ms > x->r[w].late_ms))
			w = k;
	if (w >= 0 && x->r[w].late_ms >= min_late_ms)
		snprintf(late, sizeof late, "; latest to its ops: rank %d, %.1f ms",
		    view_jobrank_shown(&x->r[w]),
		    x->r[w].late_ms);
	if (x->retries > 0)
		snprintf(retries, sizeof retries, "; retries %llu", (unsigned long long)x->retries);
	view_line(line, "job %s: %d of %d ranks here, at seq %llu, advancing%s%s%s", name, x->live,
	    x->nranks, (unsigned long long)x->ahead_seq,
	    x->live < x->nr ? " (some ranks' processes are gone)" : "", late, retries);
}

/* The line of a stalled job: who holds it up and how, or that none is late. */
static void
view_alert_stalled(const struct top_job *x, const char *name, char *line)
{
	const struct top_jobrank *b = NULL;

	for (int k = 0; k < x->nr; k++)
		if (x->r[k].rank == x->behind)
			b = &x->r[k];
	if (x->in_kernel)
		view_line(line, "job %s: hung inside %.15s seq %llu on every rank seen (%d of "
		    "%d) for %.0f s: no rank is late; the collective library or the fabric "
		    "(c: collstack)", name, x->nr > 0 ? x->r[0].kind : "?",
		    (unsigned long long)x->ahead_seq, x->nr, x->nranks, x->still_s);
	else if (b != NULL && strcmp(x->why, "gpu not started") == 0)
		view_line(line, "job %s: stalled %.0f s; rank %d (%.40s, pid %d) enqueued %.15s "
		    "seq %llu but its GPU has not started it; the others' kernels began (c: "
		    "collstack)", name, x->still_s, view_rank_shown(x, b->rank), b->host, b->pid,
		    b->kind, (unsigned long long)x->ahead_seq);
	else if (b != NULL && x->behind_seq < x->ahead_seq)
		view_line(line, "job %s: stalled %.0f s; rank %d (%.40s, pid %d) is %s at seq "
		    "%llu, others up to %llu (c: collstack)", name, x->still_s,
		    view_rank_shown(x, b->rank), b->host, b->pid, x->why,
		    (unsigned long long)x->behind_seq, (unsigned long long)x->ahead_seq);
	else if (b != NULL)
		view_line(line, "job %s: stalled %.0f s in seq %llu; rank %d (%.40s, pid %d) is "
		    "%s (c: collstack)", name, x->still_s, (unsigned long long)x->ahead_seq,
		    view_rank_shown(x, b->rank), b->host, b->pid, x->why);
	else
		view_line(line, "job %s: stalled %.0f s, every rank here in seq %llu (c: "
		    "collstack)", name, x->still_s, (unsigned long long)x->ahead_seq);
}

/* The job's straggler by its own ops (jobstrag.c): who, where, by how much. */
static void
view_alert_jobstrag(const struct top_job *x, const char *name, char *line)
{
	const struct top_jobrank *s = &x->r[x->straggler];
	char gpu[40] = "";

	if (s->gpu >= 0)
		snprintf(gpu, sizeof gpu, ", GPU %d", s->gpu);
	else if (s->gpu_bus[0] != '\0')
		snprintf(gpu, sizeof gpu, ", GPU at %s", s->gpu_bus);
	view_line(line, "job %s: straggler: rank %d (%.40s%s, pid %d) comes %.1f ms late to "
	    "each op (median of %d ops, %d intervals running): the others wait for it", name,
	    view_jobrank_shown(s), s->host, gpu, s->pid, s->late_ms, x->nops, s->slow_run);
}

/* The rank in the job whose communicator rank is rank, NULL none. */
static const struct top_jobrank *
view_jobrank(const struct top_job *x, int rank)
{
	for (int k = 0; k < x->nr; k++)
		if (x->r[k].rank == rank)
			return &x->r[k];
	return NULL;
}

/* Is k's link (k and its retry_peer) one an earlier rank already said? */
static int
view_link_said(const struct top_job *x, int k)
{
	for (int i = 0; i < k; i++)
		if (x->r[i].retries > 0 && x->r[i].retry_peer >= 0 &&
		    ((x->r[i].rank == x->r[k].rank && x->r[i].retry_peer == x->r[k].retry_peer) ||
		    (x->r[i].rank == x->r[k].retry_peer && x->r[i].retry_peer == x->r[k].rank)))
			return 1;
	return 0;
}

/* ", the last 2 s ago": the newer of a's and b's last retries; "" unknown. */
static void
view_retry_age(const struct top_jobrank *a, const struct top_jobrank *b, char *buf, size_t len)
{
	double age = a->retry_age_s;

	if (b != NULL && b->retry_age_s >= 0 && (age < 0 || b->retry_age_s < age))
		age = b->retry_age_s;
	buf[0] = '\0';
	if (age >= 0)
		snprintf(buf, len, ", the last %.0f s ago", age);
}

/* A link that broke and was retried: its two ranks and hosts where the pages name them. */
static int
view_alert_retries(const struct top_job *x, const char *name, char lines[][256], int *attrs,
    int n, int max)
{
	int links = 0, named = 0;
	char age[48];

	/* A few ranks that name a peer are looked at: a line, not a walk of ranks x ranks. */
	for (int k = 0; k < x->nr && n < max && links < 3 && named < 32; k++) {
		const struct top_jobrank *a = &x->r[k], *b;
		uint64_t times = a->retries;

		if (a->retries == 0 || a->retry_peer < 0)
			continue;
		named++;
		if (view_link_said(x, k))
			continue;
		b = view_jobrank(x, a->retry_peer);
		if (b != NULL && b->retries > times)
			times = b->retries;
		view_retry_age(a, b, age, sizeof age);
		attrs[n] = x->retrying ? VA_BAD : VA_WARN;
		view_line(lines[n++], "job %s: link rank %d <-> rank %d (%.40s <-> %.40s) broke "
		    "and ops were retried %llu time%s%s%s", name, view_jobrank_shown(a),
		    b != NULL ? view_jobrank_shown(b) : a->retry_peer, a->host,
		    b != NULL ? b->host : "?", (unsigned long long)times, times == 1 ? "" : "s", age,
		    x->retrying && times > 1 ? ": a flapping link" : "");
		links++;
	}
	if (links == 0 && x->retries > 0 && n < max) {
		attrs[n] = x->retrying ? VA_BAD : VA_WARN;
		view_line(lines[n++], "job %s: ops were retried %llu time%s after a broken link "
		    "(its pages do not say which)%s", name, (unsigned long long)x->retries,
		    x->retries == 1 ? "" : "s", x->retrying && x->retries > 1 ?
		    ": a flapping link" : "");
	}
	return n;
}

/* The job's line, then its straggler and retries. */
static int
view_alert_jobs(const struct top_model *m, char lines[][256], int *attrs, int n, int max)
{
	char name[200];

	for (int j = 0; j < m->njobs && n < max; j++) {
		const struct top_job *x = &m->jobs[j];

		view_job_name(x, name, sizeof name);
		attrs[n] = x->stalled ? VA_BAD : x->live == 0 ? VA_WARN : VA_OK;
		if (x->live == 0)
			view_line(lines[n++], "job %s: gone: no process of its %d rank%s here is "
			    "running (pages left at seq %llu by a job that was killed)", name, x->nr,
			    x->nr == 1 ? "" : "s", (unsigned long long)x->ahead_seq);
		else if (!x->stalled)
			view_alert_advancing(x, name, m->a->min_late_ms, lines[n++]);
		else
			view_alert_stalled(x, name, lines[n++]);
		if (x->straggler >= 0 && x->straggler < x->nr && n < max) {
			attrs[n] = VA_BAD;
			view_alert_jobstrag(x, name, lines[n++]);
		}
		n = view_alert_retries(x, name, lines, attrs, n, max);
	}
	return n;
}

int
view_alerts(const struct top_model *m, double now_s, char lines[][256], int *attrs, int max)
{
	int n = 0;

	if (m->straggler >= 0 && n < max) {
		const struct top_rank *x = &m->ranks[m->straggler];

		attrs[n] = VA_BAD;
		snprintf(lines[n++], 256, "straggler: rank %d on %s came %.1f ms late to the probe "
		    "%d intervals running (median %.2f ms): the others wait for it", x->rank,
		    m->hosts[x->host].name, x->late_us / 1e3, x->slow_run, m->med_late_us / 1e3);
	}
	if (m->frames > 0 && now_s - m->t_last > 1.5 * m->interval_s && n < max) {
		attrs[n] = VA_WARN;
		snprintf(lines[n++], 256, "no word from the workers for %.1f s: a host may have "
		    "stopped answering (it is dropped after --dead-after)", now_s - m->t_last);
	}
	for (int h = 0; h < m->nhosts && n < max; h++)
		if (m->hosts[h].lost) {
			attrs[n] = VA_BAD;
			snprintf(lines[n++], 256, "lost: %.60s: %.160s", m->hosts[h].name, m->hosts[h].why);
		}
	for (int r = 0; r < m->nranks && n < max; r++)
		if (m->ranks[r].lost && m->ranks[r].host >= 0 && !m->hosts[m->ranks[r].host].lost) {
			attrs[n] = VA_BAD;
			snprintf(lines[n++], 256, "lost: rank %d on %.60s: %.160s", r,
			    m->hosts[m->ranks[r].host].name, m->ranks[r].why);
		}
	/* --ras: a death RAS saw is an alert; other events, and how following goes, dim. */
	for (int i = 0; i < m->nras && n < max; i++) {
		attrs[n] = m->ras[i].dead ? VA_BAD : VA_DIM;
		snprintf(lines[n++], 256, "%.255s", m->ras[i].text);
	}
	if (m->ras_note[0] != '\0' && n < max) {
		attrs[n] = VA_DIM;
		snprintf(lines[n++], 256, "%s", m->ras_note);
	}
	return view_alert_jobs(m, lines, attrs, n, max);
}

static void
view_cs_add(struct view_cs *cs, const char *word)
{
	if (cs->argc < VIEW_CS_ARGS)
		snprintf(cs->argv[cs->argc++], sizeof cs->argv[0], "%s", word);
}

/* The same job (any of its communicators): the same key, owner and host rule? */
static int
view_cmp_job(const struct top_job *a, const struct top_job *b)
{
	int c = strcmp(a->jobid, b->jobid);

	if (c == 0)
		c = strcmp(a->user, b->user);
	return c != 0 ? c : strcmp(a->local, b->local);
}

static const struct top_model *view_sort_m;	/* qsort has no argument for it */

static int
view_cmp_jobidx(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int c = view_cmp_job(&view_sort_m->jobs[x], &view_sort_m->jobs[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

static int
view_cmp_ent(const void *a, const void *b)
{
	const struct view_cs_ent *x = a, *y = b;
	int c = (x->group > y->group) - (x->group < y->group);

	if (c == 0)
		c = strcmp(x->host, y->host);
	return c != 0 ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* Each job's group (its job's communicators together, by view_cmp_job), each group's first host. */
static void
view_cs_groups(const struct top_model *m, struct view_cs_index *ix)
{
	int *order = xcalloc((size_t)m->njobs + 1, sizeof *order);

	for (int j = 0; j < m->njobs; j++)
		order[j] = j;
	view_sort_m = m;
	if (m->njobs > 0)
		qsort(order, (size_t)m->njobs, sizeof *order, view_cmp_jobidx);
	ix->group = xcalloc((size_t)m->njobs + 1, sizeof *ix->group);
	for (int i = 0; i < m->njobs; i++) {
		if (i == 0 || view_cmp_job(&m->jobs[order[i]], &m->jobs[order[i - 1]]) != 0)
			ix->ngroups++;
		ix->group[order[i]] = ix->ngroups - 1;
	}
	free(order);
	/* The first host in the model's order, as the screen lists them. */
	ix->gfirst = xcalloc((size_t)ix->ngroups + 1, sizeof *ix->gfirst);
	for (int j = 0; j < m->njobs; j++)
		if (m->jobs[j].nr > 0 && ix->gfirst[ix->group[j]] == NULL)
			ix->gfirst[ix->group[j]] = m->jobs[j].r[0].host;
}

struct view_cs_index *
view_cs_index(const struct top_model *m)
{
	struct view_cs_index *ix = xcalloc(1, sizeof *ix);
	int g = 0;

	view_cs_groups(m, ix);
	for (int j = 0; j < m->njobs; j++)
		ix->ne += m->jobs[j].nr;
	ix->e = xcalloc((size_t)ix->ne + 1, sizeof *ix->e);
	ix->ne = 0;
	for (int j = 0; j < m->njobs; j++)
		for (int k = 0; k < m->jobs[j].nr; k++)
			ix->e[ix->ne++] = (struct view_cs_ent){ ix->group[j], m->jobs[j].r[k].host,
				m->jobs[j].r[k].pid };
	if (ix->ne > 0)
		qsort(ix->e, (size_t)ix->ne, sizeof *ix->e, view_cmp_ent);
	/* Runs of one (group, host); a group's runs follow one another. */
	ix->run = xcalloc((size_t)ix->ne + 1, sizeof *ix->run);
	ix->grun = xcalloc((size_t)ix->ngroups + 1, sizeof *ix->grun);
	for (int i = 0; i < ix->ne; i++) {
		if (i > 0 && ix->e[i].group == ix->e[i - 1].group &&
		    strcmp(ix->e[i].host, ix->e[i - 1].host) == 0)
			continue;
		while (g <= ix->e[i].group)
			ix->grun[g++] = ix->nrun;
		ix->run[ix->nrun++] = i;
	}
	while (g <= ix->ngroups)
		ix->grun[g++] = ix->nrun;
	ix->run[ix->nrun] = ix->ne;
	return ix;
}

void
view_cs_index_free(struct view_cs_index *ix)
{
	if (ix == NULL)
		return;
	free(ix->e);
	free(ix->run);
	free(ix->grun);
	free(ix->group);
	free(ix->gfirst);
	free(ix);
}

/* The run of group g on host: its index, -1 if none (a search: the runs are sorted). */
static int
view_cs_run(const struct view_cs_index *ix, int g, const char *host)
{
	int lo = ix->grun[g], hi = ix->grun[g + 1];

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = strcmp(ix->e[ix->run[mid]].host, host);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The host whose ranks --pid takes: the culprit's, else this one if the job has ranks here. */
static const char *
view_cs_host(const struct view_cs_index *ix, const struct top_job *x, int g, const char *here)
{
	for (int k = 0; k < x->nr; k++)
		if (x->r[k].rank == x->behind)
			return x->r[k].host;
	if (view_cs_run(ix, g, here) >= 0)
		return here;
	return ix->gfirst[g] != NULL ? ix->gfirst[g] : here;
}

/*
 * The pids of entries [from, to), ascending already, each once, as 11,12,13
 * into buf; 0 when they did not all fit (it stops there: a host's ranks of a
 * job with many communicators are not walked once a communicator).
 */
static int
view_cs_join(const struct view_cs_ent *e, int from, int to, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = from; i < to; i++) {
		char w[24];

		if (i > from && e[i].pid == e[i - 1].pid)
			continue;
		snprintf(w, sizeof w, "%s%d", o > 0 ? "," : "", e[i].pid);
		if (o + strlen(w) >= len)
			return 0;
		memcpy(buf + o, w, strlen(w) + 1);
		o += strlen(w);
	}
	return 1;
}

/*
 * The group's other hosts than run skip: how many, the first three by name
 * into buf. Each host is one run, so each is counted once by its whole name
 * (node1 is not node10) however many ranks it has.
 */
static int
view_cs_others(const struct view_cs_index *ix, int g, int skip, char *buf, size_t len)
{
	int n = 0;

	buf[0] = '\0';
	for (int i = ix->grun[g]; i < ix->grun[g + 1] && n < 3; i++)
		if (i != skip)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%.40s", n++ ? ", " : "",
			    ix->e[ix->run[i]].host);
	return ix->grun[g + 1] - ix->grun[g] - (skip >= 0);
}

/*
 * --pid with the pids of the job's ranks on one host (-H it when it is not
 * this one): a pid is its host's own, so ranks elsewhere are said, not
 * guessed at. From the index: a few searches, not a walk of every job.
 */
static void
view_cs_pids(const struct view_cs_index *ix, const struct top_model *m, int j, const char *here,
    struct view_cs *cs)
{
	int g = ix->group[j];
	const char *host = view_cs_host(ix, &m->jobs[j], g, here);
	char pids[sizeof cs->argv[0]] = "", others[160] = "";
	int run = view_cs_run(ix, g, host), nother, cut = 0;

	if (run >= 0)
		cut = !view_cs_join(ix->e, ix->run[run], ix->run[run + 1], pids, sizeof pids);
	nother = view_cs_others(ix, g, run, others, sizeof others);
	view_cs_add(cs, "--pid");
	view_cs_add(cs, pids);
	if (strcmp(host, here) != 0) {
		view_cs_add(cs, "-H");
		view_cs_add(cs, host);
	}
	if (nother > 0)
		snprintf(cs->note, sizeof cs->note, "ranks on %d other host%s (%s%s) are not in "
		    "--pid: a pid is its own host's; run collstack there", nother,
		    nother == 1 ? "" : "s", others, nother > 3 ? ", ..." : "");
	else if (cut)
		snprintf(cs->note, sizeof cs->note, "more ranks than one --pid list holds: the "
		    "first are taken");
}

static int
view_is_coll_job(const char *id)
{
	return strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16 &&
	    strcmp(id, "0000000000000000") != 0;
}

void
view_collstack(const struct top_model *m, int j, const char *here, struct view_cs *cs)
{
	struct view_cs_index *ix = view_cs_index(m);

	view_collstack_in(m, ix, j, here, cs);
	view_cs_index_free(ix);
}

void
view_collstack_in(const struct top_model *m, const struct view_cs_index *ix, int j,
    const char *here, struct view_cs *cs)
{
	const struct top_job *x = &m->jobs[j];
	char host[256] = "";

	memset(cs, 0, sizeof *cs);
	if (here == NULL) {
		if (gethostname(host, sizeof host - 1) != 0)
			snprintf(host, sizeof host, "?");
		here = host;
	}
	view_cs_add(cs, "collstack");
	if (view_is_coll_job(x->jobid)) {
		view_cs_add(cs, "--job");
		view_cs_add(cs, x->jobid);
	} else if (x->slurm[0] != '\0' && strspn(x->slurm, "0123456789_") == strlen(x->slurm)) {
		view_cs_add(cs, "--slurm");
		view_cs_add(cs, x->slurm);
	} else {
		view_cs_pids(ix, m, j, here, cs);
	}
	/* Another user's job (root's view): collstack reads it only when named. */
	if (x->user[0] != '\0' && strcmp(x->user, "?") != 0) {
		view_cs_add(cs, "--user");
		view_cs_add(cs, x->user);
	}
}

void
view_cs_line(const struct view_cs *cs, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < cs->argc && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", cs->argv[i]);
	msg_clean(buf);
}
