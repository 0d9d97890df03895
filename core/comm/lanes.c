/*
 * Lanes: several connections per pair of ranks, each carrying its own slice
 * of a large op, driven by several threads. One TCP stream and one thread
 * cannot fill a fast link: the kernel's copies and our reductions of a
 * stream run on one core, and one stream's window limits it. As NCCL's
 * socket transport does (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD), an
 * op is cut into lanes, each a whole collective over a slice of the data on
 * its own connection; each thread drives a group of lanes in one poll loop.
 *
 * The count comes from COLL_NTHREADS and COLL_NSOCKS, or from the speed of
 * the link this rank talks on. Every rank offers its count in its address
 * book entry and a communicator uses the fewest any rank offers, so that the
 * two ends of every connection slice an op alike. Small ops keep one lane:
 * below COLL_LANE_MIN_BYTES a lane costs more in wake-ups than it brings.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_impl.h"
#include "ifsel.h"
#include "lanes.h"
#include "log.h"
#include "xmalloc.h"

#define LANES_MAX_THREADS 16
#define LANES_MAX_SOCKS 16
#define LANES_MIN_BYTES_DEFAULT (64u << 10)
#define LANES_SCRATCH_LEN (256u << 10)

struct lane_job {
	struct xfer *xs;	/* this worker's group */
	int n;
	int rc;
};

struct lanes {
	int nworkers;
	pthread_t *t;
	struct lane_job *job;	/* one per worker */
	uint8_t **scratch;	/* one per lane past the first */
	int nscratch;
	pthread_mutex_t mu;
	pthread_cond_t go;	/* a new generation of jobs, or quit */
	pthread_cond_t done;	/* pending reached 0 */
	uint64_t gen;
	int pending;
	int quit;
	atomic_int stop;
	int stop_fd;
};

_Thread_local int comm_on_lane;

/* The interface a socket to addr would leave by: routing decides, no packet is sent. */
static int
lanes_ifname(struct comm *c, char *ifname, size_t len)
{
	struct net_addr a = { 0 };
	struct sockaddr_storage local;
	socklen_t sl = sizeof local;
	struct ifaddrs *ifs, *it;
	int fd, found = 0;

	if (c->ifname[0] != '\0')
		return ifsel_pick(c->ifname, AF_UNSPEC, &a, ifname, len) == COLL_OK;
	if (c->root_uid.root.len == 0 ||
	    (fd = socket(c->root_uid.root.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	if (connect(fd, (const struct sockaddr *)&c->root_uid.root.ss, c->root_uid.root.len) ||
	    getsockname(fd, (struct sockaddr *)&local, &sl)) {
		close(fd);
		return 0;
	}
	close(fd);
	if (getifaddrs(&ifs) != 0)
		return 0;
	for (it = ifs; it != NULL && !found; it = it->ifa_next) {
		if (it->ifa_addr == NULL || it->ifa_addr->sa_family != local.ss_family)
			continue;
		if (local.ss_family == AF_INET)
			found = ((struct sockaddr_in *)it->ifa_addr)->sin_addr.s_addr ==
			    ((struct sockaddr_in *)&local)->sin_addr.s_addr;
		else if (local.ss_family == AF_INET6)
			found = memcmp(&((struct sockaddr_in6 *)it->ifa_addr)->sin6_addr,
			    &((struct sockaddr_in6 *)&local)->sin6_addr, 16) == 0;
		if (found)
			snprintf(ifname, len, "%s", it->ifa_name);
	}
	freeifaddrs(ifs);
	return found;
}

/* The link's speed in Mb/s from sysfs; -1 where it has none (loopback, most virtual ones). */
static long
lanes_speed(const char *ifname)
{
	char path[128], buf[32];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/sys/class/net/%s/speed", ifname);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fgets(buf, sizeof buf, f) != NULL)
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v > 0 ? v : -1;
}

/* Threads within a rank's share of the cores (see lanes_auto). */
static int
lanes_cap(int threads, long share)
{
	long most = share / 2;

	return threads > most ? (most > 1 ? (int)most : 1) : threads;
}

/*
 * Threads and sockets from the link: a 10 GbE stream fills its link with
 * one core to spare, 25-100 GbE and faster need more streams and cores.
 * Loopback's rate is memory's: more threads help where there are cores
 * (measured on 32 cores, 2 ranks: 1.7 GB/s busbw with one, 8.5 with 8).
 * Ranks share the host: never more threads than half of a rank's share of
 * the cores (COLL_LOCAL_SIZE ranks on this host). On 32 cores 8 ranks at
 * 1-4 MiB ran 1.5-1.8x faster with 8 threads each than with the 2 this
 * gives, but on 64 cores 8 ranks with 8 threads each (their whole share)
 * ran 256 KiB-4 MiB 2.3-12x slower than with 4: the threads left no core
 * for the kernel's loopback work.
 */
static void
lanes_auto(struct comm *c, int *threads, int *socks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), speed = -1, local = 1, share;
	char ifname[64] = "";
	int loop = 0;

	if (lanes_ifname(c, ifname, sizeof ifname)) {
		speed = lanes_speed(ifname);
		loop = strcmp(ifname, "lo") == 0;
	}
	if (comm_env_parse("COLL_LOCAL_SIZE", 1, 1 << 20, &local) != COLL_OK)
		local = 1;
	share = cpus > local ? cpus / local : 1;
	*threads = *socks = 1;
	if (speed >= 100000) {
		*threads = 4;
		*socks = 2;
	} else if (speed >= 25000) {
		*threads = 2;
		*socks = 2;
	} else if (speed >= 10000) {
		*threads = 2;
	} else if (loop) {
		*threads = LANES_MAX_THREADS / 2;
	}
	*threads = lanes_cap(*threads, share);
}

static int
lanes_env(const char *name, long max, int def)
{
	long v;

	return comm_env_parse(name, 1, max, &v) == COLL_OK ? (int)v : def;
}

void
lanes_config(struct comm *c)
{
	int threads, socks;
	long mb;

	lanes_auto(c, &threads, &socks);
	c->lane_threads_set = lanes_env("COLL_NTHREADS", LANES_MAX_THREADS, 0) > 0;
	threads = lanes_env("COLL_NTHREADS", LANES_MAX_THREADS, threads);
	socks = lanes_env("COLL_NSOCKS", LANES_MAX_SOCKS, socks);
	/* Over the wire's bound lanes_check stops init; keep the arrays within it meanwhile. */
	while (threads * socks > WIRE_MAX_LANES)
		socks > 1 ? socks-- : threads--;
	c->lane_threads = threads;
	c->lanes_wish = threads * socks;
	if (comm_env_parse("COLL_LANE_MIN_BYTES", 1, UINT32_MAX, &mb) != COLL_OK)
		mb = LANES_MIN_BYTES_DEFAULT;
	c->lane_min = (uint32_t)mb;
}

int
lanes_check(char *err, size_t len)
{
	static const struct {
		const char *name;
		long max;
		const char *unset;
	} vars[] = {
		{ "COLL_NTHREADS", LANES_MAX_THREADS, "to choose from the link's speed" },
		{ "COLL_NSOCKS", LANES_MAX_SOCKS, "to choose from the link's speed" },
		{ "COLL_LANE_MIN_BYTES", UINT32_MAX, "for 65536" },
	};
	long v, t = 1, k = 1;

	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (comm_env_parse(vars[i].name, 1, vars[i].max, &v) == COLL_EINVAL) {
			snprintf(err, len, "%s=%s is not a count in 1..%ld: set it to one in that "
			    "range, or unset it %s", vars[i].name, getenv(vars[i].name),
			    vars[i].max, vars[i].unset);
			return COLL_EINVAL;
		}
	if (comm_env_parse("COLL_NTHREADS", 1, LANES_MAX_THREADS, &t) == COLL_OK &&
	    comm_env_parse("COLL_NSOCKS", 1, LANES_MAX_SOCKS, &k) == COLL_OK &&
	    t * k > WIRE_MAX_LANES) {
		snprintf(err, len, "COLL_NTHREADS=%ld x COLL_NSOCKS=%ld is %ld connections per "
		    "peer, over the most (%d): lower one of them", t, k, t * k, WIRE_MAX_LANES);
		return COLL_EINVAL;
	}
	return COLL_OK;
}

/*
 * The first time the book is known: the lanes every rank can drive, the
 * slice every rank finds worth one, and (unless COLL_NTHREADS says) threads
 * within this rank's share of the cores (lanes_cap) where no launcher said how many
 * ranks share the host (COLL_LOCAL_SIZE): the book does.
 */
static void
lanes_agree(struct comm *c)
{
	long local, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const char *me = comm_host(c, c->rank);
	int n = c->lanes_wish;
	uint32_t mb = c->lane_min;

	local = 0;
	for (int i = 0; i < c->nranks; i++) {
		if (c->book[i].lanes < n)
			n = c->book[i].lanes;
		if (c->book[i].lane_min > mb)
			mb = c->book[i].lane_min;
		local += strcmp(c->book[i].host, me) == 0;
	}
	c->nlanes = n > 0 ? n : 1;
	c->nlane_min = mb;
	if (!c->lane_threads_set && getenv("COLL_LOCAL_SIZE") == NULL && local > 1)
		c->lane_threads = lanes_cap(c->lane_threads, cpus / local);
}

int
lanes_for(struct comm *c, size_t bytes, size_t units)
{
	size_t n;

	if (c->nlanes == 0 && c->book != NULL)
		lanes_agree(c);
	if (c->nlanes <= 1)
		return 1;
	n = (size_t)c->nlanes;
	if (n > bytes / c->nlane_min)
		n = bytes / c->nlane_min;
	if (n > units)
		n = units;
	return n > 1 ? (int)n : 1;
}

int
comm_lanes(struct comm *c, int *threads)
{
	int n = lanes_for(c, SIZE_MAX, SIZE_MAX);

	if (threads != NULL)
		*threads = c->lane_threads < n ? c->lane_threads : n;
	return n;
}

/* A lane failed on its own (rc): the others give up rather than wait out the timeout. */
static void
lanes_stop_others(struct lanes *l, int rc)
{
	if (rc == COLL_OK || rc == XFER_STOPPED)
		return;
	atomic_store(&l->stop, 1);
	comm_kick(l->stop_fd);
}

static void *
lanes_worker(void *arg)
{
	struct lanes *l = ((void **)arg)[0];
	int i = (int)(intptr_t)((void **)arg)[1];
	struct xfer_ctl ctl = { 0, &l->stop, l->stop_fd };
	uint64_t seen = 0;
	int rc;

	free(arg);
	comm_on_lane = 1;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->quit && l->gen == seen)
			pthread_cond_wait(&l->go, &l->mu);
		if (l->quit)
			break;
		seen = l->gen;
		if (l->job[i].n == 0)
			continue;
		pthread_mutex_unlock(&l->mu);
		rc = xfer_run_group(l->job[i].xs, l->job[i].n, &ctl);
		lanes_stop_others(l, rc);
		pthread_mutex_lock(&l->mu);
		l->job[i].rc = rc;
		if (--l->pending == 0)
			pthread_cond_broadcast(&l->done);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* The workers and scratch for n lanes driven by threads threads, made once and grown. */
static int
lanes_ready(struct comm *c, int n, int threads)
{
	struct lanes *l = c->lanes;

	if (l == NULL) {
		l = c->lanes = xcalloc(1, sizeof *l);
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->go, NULL);
		pthread_cond_init(&l->done, NULL);
		if ((l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
			return comm_fail(c, COLL_ESYS, "rank %d: eventfd for the lanes: %s", c->rank,
			    strerror(errno));
	}
	if (l->stop_fd < 0)
		return comm_fail(c, COLL_ESYS, "rank %d: no eventfd for the lanes", c->rank);
	if (n - 1 > l->nscratch) {
		l->scratch = xreallocarray(l->scratch, (size_t)(n - 1), sizeof *l->scratch);
		for (int i = l->nscratch; i < n - 1; i++)
			l->scratch[i] = xmalloc(LANES_SCRATCH_LEN);
		l->nscratch = n - 1;
	}
	if (threads - 1 > l->nworkers) {
		pthread_mutex_lock(&l->mu);
		l->t = xreallocarray(l->t, (size_t)(threads - 1), sizeof *l->t);
		l->job = xreallocarray(l->job, (size_t)(threads - 1), sizeof *l->job);
		for (int i = l->nworkers; i < threads - 1; i++) {
			void **arg = xmalloc(2 * sizeof *arg);

			arg[0] = l;
			arg[1] = (void *)(intptr_t)i;
			l->job[i] = (struct lane_job){ NULL, 0, COLL_OK };
			if (pthread_create(&l->t[i], NULL, lanes_worker, arg) != 0) {
				free(arg);
				pthread_mutex_unlock(&l->mu);
				return comm_fail(c, COLL_ESYS, "rank %d: cannot start a lane thread: %s",
				    c->rank, strerror(errno));
			}
			l->nworkers = i + 1;
		}
		pthread_mutex_unlock(&l->mu);
	}
	return COLL_OK;
}

/*
 * Every lane's connections, made here on the op's thread before any lane
 * runs: connecting may wait for a lower rank, and only this thread waits
 * on the data plane's wake-ups and the status page.
 */
static int
lanes_connect(struct comm *c, struct xfer *xs, int n)
{
	int fd, rc;

	for (int i = 1; i < n; i++) {
		if (xs[i].send_peer >= 0 && (rc = peer_get(c, xs[i].send_peer, i, &fd)) != COLL_OK)
			return rc;
		if (xs[i].recv_peer >= 0 && (rc = peer_get(c, xs[i].recv_peer, i, &fd)) != COLL_OK)
			return rc;
	}
	return COLL_OK;
}

int
lanes_run(struct comm *c, struct xfer *xs, int n)
{
	int threads = c->lane_threads < n ? c->lane_threads : n, rc, own, first;
	struct xfer_ctl ctl;
	struct lanes *l;
	uint64_t v;

	if (n == 1)
		return xfer_run(xs);
	if (c->lanes == NULL)
		log_info("rank %d: %s seq %" PRIu64 " is the first op striped over %d connections "
		    "per peer, %d threads", c->rank, comm_op_name(c), c->seq, n, threads);
	if ((rc = lanes_ready(c, n, threads)) != COLL_OK || (rc = lanes_connect(c, xs, n)) != COLL_OK)
		return rc;
	l = c->lanes;
	for (int i = 0; i < n; i++) {
		xs[i].lane = i;
		if (i > 0) {
			xs[i].scratch = l->scratch[i - 1];
			xs[i].scratch_len = LANES_SCRATCH_LEN;
		}
	}
	atomic_store(&l->stop, 0);
	while (read(l->stop_fd, &v, sizeof v) == (ssize_t)sizeof v)
		;
	/* Thread t drives lanes [t n / threads, (t + 1) n / threads); this one the first group. */
	own = n / threads;
	pthread_mutex_lock(&l->mu);
	l->pending = threads - 1;
	for (int t = 1; t < threads; t++) {
		first = t * n / threads;
		l->job[t - 1] = (struct lane_job){ xs + first, (t + 1) * n / threads - first, COLL_OK };
	}
	for (int t = threads - 1; t < l->nworkers; t++)
		l->job[t] = (struct lane_job){ NULL, 0, COLL_OK };
	l->gen++;
	pthread_cond_broadcast(&l->go);
	pthread_mutex_unlock(&l->mu);

	ctl = (struct xfer_ctl){ 1, &l->stop, l->stop_fd };
	rc = xfer_run_group(xs, own, &ctl);
	lanes_stop_others(l, rc);
	pthread_mutex_lock(&l->mu);
	while (l->pending > 0)
		pthread_cond_wait(&l->done, &l->mu);
	/* The op's error is the first lane's that failed on its own, not one that was stopped. */
	for (int t = 1; t < threads && (rc == COLL_OK || rc == XFER_STOPPED); t++)
		if (l->job[t - 1].rc != COLL_OK && l->job[t - 1].rc != XFER_STOPPED) {
			rc = l->job[t - 1].rc;
			/* A worker wrote c->err but left the status page to this thread. */
			if (rc != COLL_ERETRY && rc != COLL_EPEER) {
				pthread_mutex_lock(&c->err_lock);
				status_set_state(&c->status, STATUS_FAILED, c->err);
				pthread_mutex_unlock(&c->err_lock);
			}
		}
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < n; i++)
		c->op_recv_bytes += xs[i].rx;
	return rc == XFER_STOPPED ? comm_fail(c, COLL_ESYS, "rank %d: a lane of %s stopped with "
	    "no error of its own", c->rank, comm_op_name(c)) : rc;
}

void
lanes_free(struct comm *c)
{
	struct lanes *l = c->lanes;

	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->go);
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < l->nworkers; i++)
		pthread_join(l->t[i], NULL);
	for (int i = 0; i < l->nscratch; i++)
		free(l->scratch[i]);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->go);
	pthread_cond_destroy(&l->done);
	free(l->scratch);
	free(l->t);
	free(l->job);
	free(l);
	c->lanes = NULL;
}
