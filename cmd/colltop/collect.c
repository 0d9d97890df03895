/*
 * A host's sample as JSON, for the interval's gather: each interface, RDMA
 * port and GPU with its counters' totals (so a reader can check they only
 * grow) and their rates since the last sample (worked out here, where both
 * samples are, so the front end never sees a counter reset as a huge rate:
 * sample_rate says -1 then). Also the status pages of the other jobs on this
 * host, which the front end follows for stalls.
 *
 * No curses here: collectors fill plain data, the view and the screen show it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kind.h"
#include "user.h"
#include "msg.h"
#include "plat_file.h"
#include "sample.h"
#include "status.h"
#include "top.h"
#include "xmalloc.h"

#define COLLECT_PAGES_MAX 4096	/* pages read per host per interval */
/*
 * The most pages of one user's an interval takes: a user's flood of pages
 * (each backed by a live process of theirs) cannot crowd out another's job.
 * What is left: four users or more, each at its share, still fill
 * COLLECT_PAGES_MAX, and a fifth's pages read after them are not shown; a
 * stranger would need live processes under that many uids.
 */
#define COLLECT_PAGES_PER_UID 1024

void
collect_init(struct collect *c, uint64_t own_job, int gpus)
{
	*c = (struct collect){ .own_job = own_job, .gpus = gpus };
}

void
collect_free(struct collect *c)
{
	if (c->prev != NULL) {
		sample_host_free(c->prev);
		free(c->prev);
	}
	c->prev = NULL;
}

static json_t *
collect_net(const struct sample_net *x, const struct sample_net *p, double dt)
{
	uint64_t errs = x->rx_errors + x->tx_errors, drops = x->rx_dropped + x->tx_dropped;

	return json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f}",
	    "name", x->name, "up", x->up, "speed_mbps", (json_int_t)x->speed_mbps,
	    "rx_bytes", (json_int_t)x->rx_bytes, "tx_bytes", (json_int_t)x->tx_bytes,
	    "errors", (json_int_t)errs, "drops", (json_int_t)drops,
	    "carrier_changes", (json_int_t)x->carrier_changes,
	    "rx_bps", p ? sample_rate(p->rx_bytes, x->rx_bytes, dt) : -1.0,
	    "tx_bps", p ? sample_rate(p->tx_bytes, x->tx_bytes, dt) : -1.0,
	    "errors_ps", p ? sample_rate(p->rx_errors + p->tx_errors, errs, dt) : -1.0,
	    "carrier_ps", p ? sample_rate(p->carrier_changes, x->carrier_changes, dt) : -1.0);
}

static json_t *
collect_rdma(const struct sample_rdma *x, const struct sample_rdma *p, double dt)
{
	return json_pack("{s:s, s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, "
	    "s:f, s:f, s:f}",
	    "dev", x->dev, "port", x->port, "state", x->state, "rate", x->rate,
	    "rx_bytes", (json_int_t)x->rx_bytes, "tx_bytes", (json_int_t)x->tx_bytes,
	    "symbol_errors", (json_int_t)x->symbol_errors,
	    "link_downed", (json_int_t)x->link_downed, "rx_errors", (json_int_t)x->rx_errors,
	    "tx_discards", (json_int_t)x->tx_discards,
	    "retransmits", (json_int_t)x->ack_timeouts, "seq_errors", (json_int_t)x->seq_errors,
	    "hw", x->have_hw,
	    "rx_bps", p ? sample_rate(p->rx_bytes, x->rx_bytes, dt) : -1.0,
	    "tx_bps", p ? sample_rate(p->tx_bytes, x->tx_bytes, dt) : -1.0,
	    "retransmits_ps", p ? sample_rate(p->ack_timeouts, x->ack_timeouts, dt) : -1.0);
}

/* KiB counters to bytes a second; -1 without both samples or after a reset. */
static double
collect_kib_rate(long long before, long long after, double dt)
{
	if (before < 0 || after < 0)
		return -1;
	return sample_rate((uint64_t)before * 1024, (uint64_t)after * 1024, dt);
}

static json_t *
collect_gpu(const struct sample_gpu *g, const struct sample_gpu *p, double dt)
{
	char reasons[256];

	sample_clock_reasons(g->clock_reasons, reasons, sizeof reasons);
	return json_pack("{s:i, s:s, s:i, s:i, s:I, s:I, s:I, s:i, s:I, s:s, s:I, s:I, s:I, s:I, "
	    "s:f, s:f}",
	    "index", g->index, "name", g->name, "util", g->util_gpu, "mem_util", g->util_mem,
	    "mem_used", (json_int_t)g->mem_used, "mem_total", (json_int_t)g->mem_total,
	    "power_mw", (json_int_t)g->power_mw, "temp_c", g->temp_c,
	    "clock_reasons", (json_int_t)g->clock_reasons, "throttle", reasons,
	    "pcie_tx_kbs", (json_int_t)g->pcie_tx_kbs, "pcie_rx_kbs", (json_int_t)g->pcie_rx_kbs,
	    "nvlink_tx_kib", (json_int_t)g->nvlink_tx_kib,
	    "nvlink_rx_kib", (json_int_t)g->nvlink_rx_kib,
	    "nvlink_tx_bps", p ? collect_kib_rate(p->nvlink_tx_kib, g->nvlink_tx_kib, dt) : -1.0,
	    "nvlink_rx_bps", p ? collect_kib_rate(p->nvlink_rx_kib, g->nvlink_rx_kib, dt) : -1.0);
}

/* The same interface or port in the last sample (they can come and go). */
static const struct sample_net *
collect_prev_net(const struct sample_host *p, const char *name)
{
	for (int i = 0; p != NULL && i < p->nnet; i++)
		if (strcmp(p->net[i].name, name) == 0)
			return &p->net[i];
	return NULL;
}

static const struct sample_gpu *
collect_prev_gpu(const struct sample_host *p, int index)
{
	for (int i = 0; p != NULL && i < p->ngpu; i++)
		if (p->gpu[i].index == index)
			return &p->gpu[i];
	return NULL;
}

static const struct sample_rdma *
collect_prev_rdma(const struct sample_host *p, const struct sample_rdma *x)
{
	for (int i = 0; p != NULL && i < p->nrdma; i++)
		if (strcmp(p->rdma[i].dev, x->dev) == 0 && p->rdma[i].port == x->port)
			return &p->rdma[i];
	return NULL;
}

json_t *
collect_host(struct collect *c)
{
	struct sample_host *s = xcalloc(1, sizeof *s);
	json_t *o = json_object(), *net = json_array(), *rdma = json_array(), *gpu = json_array();
	double dt;

	sample_host_read(s, plat_file_root(), c->gpus);
	dt = c->prev != NULL ? (double)(s->t_ns - c->prev->t_ns) / 1e9 : 0;
	for (int i = 0; i < s->nnet; i++) {
		if (strcmp(s->net[i].name, "lo") == 0)
			continue;	/* loopback says nothing about the fabric */
		json_array_append_new(net, collect_net(&s->net[i],
		    collect_prev_net(c->prev, s->net[i].name), dt));
	}
	for (int i = 0; i < s->nrdma; i++)
		json_array_append_new(rdma, collect_rdma(&s->rdma[i],
		    collect_prev_rdma(c->prev, &s->rdma[i]), dt));
	for (int i = 0; i < s->ngpu; i++)
		json_array_append_new(gpu, collect_gpu(&s->gpu[i],
		    collect_prev_gpu(c->prev, s->gpu[i].index), dt));
	json_object_set_new(o, "net", net);
	json_object_set_new(o, "rdma", rdma);
	json_object_set_new(o, "gpu", gpu);
	json_object_set_new(o, "gpu_why", json_string(c->gpus ? s->gpu_why : "--no-gpu"));
	collect_free(c);
	c->prev = s;
	return o;
}

/*
 * Does a page speak for a job colltop shows? Anyone can write a page into
 * the shared directory, so: a user sees only their own pages; root sees its
 * own, and another user's only while the page's pid is a live process of
 * that user (a page cannot claim someone else's process, and a dead job's
 * leftovers are not a job).
 */
static int
collect_page_trusted(const struct alive_proc *a, uid_t owner)
{
	uid_t me = geteuid();

	if (owner == me)
		return 1;
	return me == 0 && a->owned;
}

/*
 * Who wrote the page, for a job coll did not launch (ident.c): its key and
 * launcher replace job id 0, and its world rank goes with the page's own.
 */
static void
collect_page_ident(json_t *o, const struct status_page *p, const struct top_ident *id)
{
	json_object_set_new(o, "wrank", json_integer(id != NULL ? id->wrank : -1));
	json_object_set_new(o, "kernel", json_boolean(p->source == STATUS_SRC_NCCL &&
	    (p->flags & STATUS_F_KERNEL)));
	if (id == NULL || !id->known)
		return;
	json_object_set_new(o, "launcher", json_string(id->launcher));
	if (p->jobid != 0 || id->key[0] == '\0')
		return;
	json_object_set_new(o, "job", json_string(id->key));
	json_object_set_new(o, "job_local", json_boolean(id->local));
	if (id->slurm[0] != '\0')
		json_object_set_new(o, "slurm", json_string(id->slurm));
}

/*
 * The ops the page keeps that have ended, for the job's straggler test
 * (jobstrag.c), and its retries with the broken link's other rank. A slot
 * holds op seq only at seq % STATUS_RING: any other is stale or made up.
 * Frames stay small: a page with no retry says only that it has none.
 */
static void
collect_page_ops(json_t *o, const struct status_page *p)
{
	json_t *ops = json_array();
	struct timespec now;

	for (int i = 0; i < STATUS_RING; i++) {
		const struct status_op *op = &p->ops[i];

		if (op->seq == 0 || op->seq % STATUS_RING != (uint64_t)i || op->end_ns == 0 ||
		    op->seq > INT64_MAX || op->end_ns > INT64_MAX || op->begin_ns > INT64_MAX ||
		    op->queued_ns > INT64_MAX)
			continue;
		json_array_append_new(ops, json_pack("[I, I, I, I, i]", (json_int_t)op->seq,
		    (json_int_t)op->queued_ns, (json_int_t)op->begin_ns, (json_int_t)op->end_ns,
		    (int)p->op_kind[i]));
	}
	if (json_array_size(ops) > 0)
		json_object_set_new(o, "ops", ops);
	else
		json_decref(ops);
	json_object_set_new(o, "retries", json_integer(p->retries > INT64_MAX ? INT64_MAX :
	    (json_int_t)p->retries));
	if (p->retries == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	json_object_set_new(o, "retry_peer", json_integer(p->retry_peer >= 0 &&
	    p->retry_peer < p->nranks ? p->retry_peer : -1));
	json_object_set_new(o, "retry_ns", json_integer(p->retry_ns > INT64_MAX ? 0 :
	    (json_int_t)p->retry_ns));
	/* Its age here, where the page's clock is: the front end's host may not agree. */
	if (p->retry_ns != 0 && p->retry_ns <= INT64_MAX)
		json_object_set_new(o, "retry_age_s", json_real(fmax(((double)now.tv_sec * 1e9 +
		    (double)now.tv_nsec - (double)p->retry_ns) / 1e9, 0)));
}

/*
 * The page's GPU (NCCL's plugin names it by PCI address) as NVML counts this
 * host's GPUs, from the sample just taken: -1 where it is not one of them.
 */
static void
collect_page_gpu(json_t *o, const struct status_page *p, const struct sample_host *s)
{
	char bus[sizeof p->gpu_bus];
	unsigned int dom, b, dev;
	int index = -1;

	snprintf(bus, sizeof bus, "%.*s", (int)strnlen(p->gpu_bus, sizeof p->gpu_bus), p->gpu_bus);
	msg_clean(bus);
	if (bus[0] != '\0' && sscanf(bus, "%x:%x:%x", &dom, &b, &dev) == 3)
		for (int i = 0; s != NULL && i < s->ngpu; i++)
			if (s->gpu[i].pci_bus == b && s->gpu[i].pci_device == dev &&
			    s->gpu[i].pci_domain == dom && (b | dev | dom) != 0)
				index = s->gpu[i].index;
	json_object_set_new(o, "gpu", json_integer(index));
	if (bus[0] != '\0')
		json_object_set_new(o, "gpu_bus", json_string(bus));
}

static json_t *
collect_page(const struct status_page *p, uid_t owner, const struct top_ident *id,
    const struct alive_proc *a, const struct sample_host *s)
{
	/*
	 * Its process state here ('?' gone, or its pid another process now): a
	 * rank stopped inside an op has the same sequence numbers as the ranks
	 * waiting for it, and only this tells them apart; a killed job's pages
	 * stay, and only this says nobody writes them.
	 */
	char state = alive_of(a, p);
	char job[20], comm[20], st[2] = { state ? state : '?', '\0' }, user[64];
	json_t *o;

	user_name(owner, user, sizeof user);
	snprintf(job, sizeof job, "%016" PRIx64, p->jobid);
	snprintf(comm, sizeof comm, "%016" PRIx64, p->commid);
	o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:s, s:s%, s:i, "
	    "s:s}", "job", job, "comm", comm, "rank", p->rank, "nranks", p->nranks, "pid", p->pid,
	    "state", p->state, "source", (int)p->source,
	    "seq_started", (json_int_t)p->seq_started, "seq_done", (json_int_t)p->seq_done,
	    "seq_queued", (json_int_t)p->seq_queued,
	    "kind", coll_kind_name(p->source ? p->kind_queued : p->kind_started),
	    "host", p->host, strnlen(p->host, sizeof p->host), "wait_peer", p->wait_peer,
	    "proc", st);
	if (o != NULL) {
		json_object_set_new(o, "user", json_string(user));
		collect_page_ident(o, p, id);
		collect_page_ops(o, p);
		collect_page_gpu(o, p, s);
	}
	return o;
}

/*
 * Identities read this interval, one per process (its pages, one per
 * communicator, share it): at most COLLECT_IDENT_MAX processes are read, so
 * an interval's work stays bounded whatever the directory holds.
 */
#define COLLECT_IDENT_MAX 256

struct collect_scan {
	json_t *pages;
	uint64_t own_job;
	const char *host;
	const struct sample_host *sample;	/* this host's, for the pages' GPUs; NULL none */
	struct top_ident ids[COLLECT_IDENT_MAX];
	uid_t id_owner[COLLECT_IDENT_MAX];
	int nids;
	struct alive_proc procs[COLLECT_IDENT_MAX];	/* /proc read once a process */
	int nprocs;
	struct { uid_t uid; int n; } share[COLLECT_PAGES_MAX];	/* pages taken, by owner */
	int nshare;
	double boot_s;		/* read once a scan */
};

static const struct top_ident *
collect_ident(struct collect_scan *cs, pid_t pid, uid_t owner)
{
	for (int i = 0; i < cs->nids; i++)
		if (cs->ids[i].pid == pid && cs->id_owner[i] == owner)
			return &cs->ids[i];
	if (pid <= 0 || cs->nids == COLLECT_IDENT_MAX)
		return NULL;
	cs->id_owner[cs->nids] = owner;
	(void)ident_read(pid, owner, &cs->ids[cs->nids]);
	return &cs->ids[cs->nids++];
}

/*
 * Whether pid is owner's live process, read once a scan however many pages
 * name it (past COLLECT_IDENT_MAX processes: read again, into spare).
 */
static const struct alive_proc *
collect_alive(struct collect_scan *cs, pid_t pid, uid_t owner, struct alive_proc *spare)
{
	for (int i = 0; i < cs->nprocs; i++)
		if (cs->procs[i].pid == pid && cs->procs[i].owner == owner)
			return &cs->procs[i];
	if (cs->nprocs < COLLECT_IDENT_MAX)
		spare = &cs->procs[cs->nprocs++];
	alive_read(spare, pid, owner, cs->boot_s);
	return spare;
}

/* Owner's count of pages taken this scan (a linear walk: owners are few, each a live process). */
static int *
collect_share(struct collect_scan *cs, uid_t owner)
{
	for (int i = 0; i < cs->nshare; i++)
		if (cs->share[i].uid == owner)
			return &cs->share[i].n;
	if (cs->nshare == COLLECT_PAGES_MAX)
		return NULL;
	cs->share[cs->nshare].uid = owner;
	cs->share[cs->nshare].n = 0;
	return &cs->share[cs->nshare++].n;
}

static int
collect_scan_one(const struct status_page *pg, uid_t owner, void *arg)
{
	struct collect_scan *cs = arg;
	const struct alive_proc *a;
	struct alive_proc spare;
	int *taken;

	if (pg->jobid == cs->own_job || strncmp(pg->host, cs->host, sizeof pg->host) != 0)
		return 0;
	if ((taken = collect_share(cs, owner)) == NULL || *taken >= COLLECT_PAGES_PER_UID)
		return 0;
	a = collect_alive(cs, pg->pid, owner, &spare);
	if (!collect_page_trusted(a, owner))
		return 0;
	(*taken)++;
	json_array_append_new(cs->pages, collect_page(pg, owner,
	    collect_ident(cs, pg->pid, owner), a, cs->sample));
	return json_array_size(cs->pages) >= COLLECT_PAGES_MAX;
}

/*
 * Only the pages of ranks on this host: hosts that share a /dev/shm (a test
 * bed's namespaces, a container's bind mount) would each report them all.
 */
json_t *
collect_pages(const struct collect *c, uint64_t own_job, const char *host)
{
	struct collect_scan *cs = xcalloc(1, sizeof *cs);
	json_t *pages = json_array();

	cs->pages = pages;
	cs->own_job = own_job;
	cs->host = host;
	cs->sample = c != NULL ? c->prev : NULL;
	cs->boot_s = alive_boot_s();
	status_scan(NULL, collect_scan_one, cs);
	free(cs);
	return pages;
}
