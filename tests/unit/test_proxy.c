/*
 * Root proxies (proxy.h): ranks whose COLL_ROOT_VIA names a proxy reach the
 * root through it, proxies nest, and the root sees one connection per proxy
 * of the first layer. Proxies keep their ranks alive themselves: no rank's
 * keep-alive reaches the root, a silent rank is given up by its proxy, and a
 * silent root by its proxies. Every rank, proxy and the root is a process of
 * its own on loopback, so that one can be killed or stopped as a crashed or
 * hung host would be; ranks record what they saw in a shared page and the
 * test process asserts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "coll.h"
#include "comm.h"
#include "err.h"
#include "net.h"
#include "proxy.h"
#include "root.h"
#include "uid.h"

#define NR 4
#define WAIT_MS 30000

struct seen {
	int joined;		/* the root's count of joined ranks */
	int first_dead;		/* the root's first rank declared dead */
	uint64_t proxied;	/* the root's count of frames read on proxies' channels */
	int init_rc[NR];
	int sum[NR];		/* the first all-reduce of rank + 1 */
	int ready[NR];		/* the first op is done */
	int go;			/* the test says: go on to the scenario's end */
	int after_rc[NR];	/* what the scenario's end gave */
	int after_sum[NR];
	int done[NR];
	char err[NR][COLL_ERR_LEN];
	int nfailed[NR];	/* SC_LOST: the ranks known dead at the verdict */
	int failed[NR][NR];
	int cut;		/* connections the cutter closed mid-handshake */
};

static struct seen *s;

static void
pause_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

static pid_t
root_child(int n, struct coll_uid *uid)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct root *root;
		struct net_addr a;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (net_addr_parse(&a, "127.0.0.1", 0) != COLL_OK ||
		    root_start(&root, &a, n, WAIT_MS, uid) != COLL_OK ||
		    write(fds[1], uid, sizeof *uid) != (ssize_t)sizeof *uid)
			_exit(1);
		for (;;) {
			s->joined = root_joined(root);
			s->first_dead = root_first_dead(root);
			s->proxied = root_proxied_in(root);
			pause_ms(5);
		}
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], uid, sizeof *uid), (ssize_t)sizeof *uid);
	close(fds[0]);
	return pid;
}

static volatile sig_atomic_t proxy_term;

static void
proxy_on_term(int sig)
{
	(void)sig;
	proxy_term = 1;
}

/* A proxy in a child process to upstream; *at gets where it listens. SIGTERM: proxy_stop. */
static pid_t
proxy_child(const struct coll_uid *uid, const struct net_addr *upstream, struct net_addr *at)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct proxy *p;
		char err[COLL_ERR_LEN];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGTERM, proxy_on_term);
		if (net_addr_parse(at, "127.0.0.1", 0) != COLL_OK ||
		    proxy_start(&p, uid, upstream, at, 5000, err, sizeof err) != COLL_OK ||
		    write(fds[1], at, sizeof *at) != (ssize_t)sizeof *at)
			_exit(1);
		while (!proxy_term)
			pause_ms(10);
		proxy_stop(p);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], at, sizeof *at), (ssize_t)sizeof *at);
	close(fds[0]);
	return pid;
}

static int
wait_for(const int *flag, int want)
{
	uint64_t end = clock_now_ms() + WAIT_MS;

	while (*(volatile const int *)flag != want && clock_now_ms() < end)
		pause_ms(2);
	return *(volatile const int *)flag == want;
}

/* The root's first dead rank, once its child has sampled one (it does every 5 ms). */
static int
first_dead(void)
{
	uint64_t end = clock_now_ms() + WAIT_MS;

	while (*(volatile int *)&s->first_dead < 0 && clock_now_ms() < end)
		pause_ms(2);
	return s->first_dead;
}

enum scen { SC_LEAVE, SC_SHRINK, SC_LOST };

static int
allreduce_one(struct comm *c, int v)
{
	int sum = -1;

	return coll_allreduce(c, &v, &sum, 1, DT_INT32, OP_SUM) == COLL_OK ? sum : -1;
}

/* Rank me joins through via (NULL: straight to the root), sums, then plays sc. */
static pid_t
rank_child(const struct coll_uid *uid, int me, int n, const struct net_addr *via, enum scen sc)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	char id[UID_STR_LEN], num[16], where[NET_ADDRSTR_LEN];
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct comm *c = NULL, *nc = NULL;
	int failed[NR], nf = 0;

	uid_format(uid, id, sizeof id);
	setenv("COLL_UNIQUE_ID", id, 1);
	snprintf(num, sizeof num, "%d", me);
	setenv("COLL_RANK", num, 1);
	snprintf(num, sizeof num, "%d", n);
	setenv("COLL_SIZE", num, 1);
	setenv("COLL_TIMEOUT", "20", 1);
	unsetenv("COLL_ROOT_VIA");
	if (via != NULL) {
		net_addr_format(via, where, sizeof where);
		setenv("COLL_ROOT_VIA", where, 1);
	}
	cfg.timeout_ms = 20000;
	s->init_rc[me] = comm_init_env(&c, &cfg);
	if (s->init_rc[me] != COLL_OK) {
		snprintf(s->err[me], COLL_ERR_LEN, "%s", c ? comm_last_error(c) : "no comm");
		s->done[me] = 1;
		_exit(0);
	}
	s->sum[me] = allreduce_one(c, me + 1);
	s->ready[me] = 1;
	wait_for(&s->go, 1);
	if (sc == SC_SHRINK) {
		/* The test killed the last rank: wait for the root's word of it, then agree. */
		for (int w = 0; w < 2000 && (nf = comm_get_failed(c, failed, NR)) == 0; w++)
			pause_ms(10);
		s->after_rc[me] = comm_shrink(c, failed, nf, &nc, NULL, COLL_SHRINK_ABORT);
		if (s->after_rc[me] == COLL_OK)
			s->after_sum[me] = allreduce_one(nc, me + 1);
		else
			snprintf(s->err[me], COLL_ERR_LEN, "%s", comm_last_error(c));
		comm_destroy(nc);
	} else if (sc == SC_LOST) {
		/* The test killed the proxy: wait for this communicator's verdict. */
		uint64_t end = clock_now_ms() + WAIT_MS;

		while ((s->after_rc[me] = comm_get_async_error(c)) == COLL_OK &&
		    clock_now_ms() < end)
			pause_ms(10);
		s->nfailed[me] = comm_get_failed(c, s->failed[me], NR);
		/* An op now fails with the verdict's reason. */
		(void)allreduce_one(c, 1);
		snprintf(s->err[me], COLL_ERR_LEN, "%s", comm_last_error(c));
	}
	comm_destroy(c);
	s->done[me] = 1;
	_exit(0);
}

/* Sockets on this host whose local port is port and that are established: the root's. */
static int
established_on(uint16_t port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	int n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned lport, st;

		if (sscanf(line, " %*d: %*x:%x %*x:%*x %x", &lport, &st) == 2 && lport == port &&
		    st == 1)
			n++;
	}
	fclose(f);
	return n;
}

static void
reap(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
}

static int
setup(void **state)
{
	(void)state;
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return -1;
	memset(s, 0, sizeof *s);
	s->first_dead = -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unsetenv("COLL_KEEPALIVE_MS");
	unsetenv("COLL_KEEPALIVE_LIMIT");
	munmap(s, sizeof *s);
	return 0;
}

/* The root, proxy A on it, B below A; rank 0 straight, 1 through A, 2-3 through B. */
struct nest {
	struct coll_uid uid;
	struct net_addr a, b;
	pid_t root, ra, rb, rk[NR];
};

static void
nest_start(struct nest *w, enum scen sc)
{
	w->root = root_child(NR, &w->uid);
	w->ra = proxy_child(&w->uid, &w->uid.root, &w->a);
	w->rb = proxy_child(&w->uid, &w->a, &w->b);
	w->rk[0] = rank_child(&w->uid, 0, NR, NULL, sc);
	w->rk[1] = rank_child(&w->uid, 1, NR, &w->a, sc);
	w->rk[2] = rank_child(&w->uid, 2, NR, &w->b, sc);
	w->rk[3] = rank_child(&w->uid, 3, NR, &w->b, sc);
}

/* The proxies and the root (the ranks are each test's). */
static void
nest_stop(struct nest *w)
{
	reap((pid_t[]){ w->rb, w->ra, w->root }, 3);
}

/* Whether rank me knew rank r dead when its verdict came (SC_LOST). */
static int
knew_dead(int me, int r)
{
	for (int i = 0; i < s->nfailed[me] && i < NR; i++)
		if (s->failed[me][i] == r)
			return 1;
	return 0;
}

/* Ranks through one and two proxies: the root holds 2 connections, not 4. */
static void
test_proxy_nested(void **state)
{
	struct nest w;
	pid_t *rk = w.rk;

	(void)state;
	nest_start(&w, SC_LEAVE);
	for (int i = 0; i < NR; i++)
		assert_true(wait_for(&s->ready[i], 1) || s->done[i]);
	for (int i = 0; i < NR; i++) {
		assert_int_equal(s->init_rc[i], COLL_OK);
		assert_int_equal(s->sum[i], 1 + 2 + 3 + 4);
	}
	/* The root's count is sampled every 5 ms. */
	assert_true(wait_for(&s->joined, NR));
	/* Rank 0's connection and proxy A's: not one per rank. */
	assert_int_equal(established_on(net_addr_port(&w.uid.root)), 2);
	s->go = 1;
	for (int i = 0; i < NR; i++) {
		int st;

		assert_true(wait_for(&s->done[i], 1));
		assert_int_equal(waitpid(rk[i], &st, 0), rk[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	/* Everyone said BYE through the proxies: nobody was declared dead. */
	pause_ms(200);
	assert_int_equal(s->first_dead, -1);
	nest_stop(&w);
}

/* Rank 3 (below two proxies) is killed: the survivors agree on a shrink through them. */
static void
test_proxy_shrink(void **state)
{
	struct nest w;
	pid_t *rk = w.rk;

	(void)state;
	nest_start(&w, SC_SHRINK);
	for (int i = 0; i < NR; i++)
		assert_true(wait_for(&s->ready[i], 1));
	kill(rk[3], SIGKILL);
	waitpid(rk[3], NULL, 0);
	rk[3] = -1;
	/* Its proxy tells the root the channel closed: the root names it dead. */
	assert_true(wait_for(&s->first_dead, 3));
	s->go = 1;
	for (int i = 0; i < NR - 1; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->after_rc[i] != COLL_OK)
			fail_msg("rank %d: shrink: %s", i, s->err[i]);
		assert_int_equal(s->after_sum[i], 1 + 2 + 3);
	}
	reap(rk, NR - 1);
	nest_stop(&w);
}

/* Proxy A is killed: the root names its ranks dead, the one it reached directly hears so. */
static void
test_proxy_lost(void **state)
{
	struct coll_uid uid;
	struct net_addr a;
	pid_t root, ra, rk[3];

	(void)state;
	root = root_child(3, &uid);
	ra = proxy_child(&uid, &uid.root, &a);
	rk[0] = rank_child(&uid, 0, 3, NULL, SC_LOST);
	rk[1] = rank_child(&uid, 1, 3, &a, SC_LOST);
	rk[2] = rank_child(&uid, 2, 3, &a, SC_LOST);
	for (int i = 0; i < 3; i++)
		assert_true(wait_for(&s->ready[i], 1));
	s->go = 1;
	kill(ra, SIGKILL);
	waitpid(ra, NULL, 0);
	for (int i = 0; i < 3; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->after_rc[i] == COLL_OK)
			fail_msg("rank %d saw no failure after its proxy died", i);
	}
	assert_true(first_dead() == 1 || s->first_dead == 2);
	/*
	 * The rank that reached the root directly is told which proxy went, and
	 * in one notice that both its ranks died (FAILED_SET): both are dead the
	 * moment its verdict is.
	 */
	if (strstr(s->err[0], "its proxy at 127.0.0.1:") == NULL ||
	    strstr(s->err[0], "and 1 more") == NULL)
		fail_msg("rank 0's error does not name the proxy and both ranks: %s", s->err[0]);
	if (!knew_dead(0, 1) || !knew_dead(0, 2))
		fail_msg("rank 0 did not know ranks 1 and 2 dead at its verdict");
	reap(rk, 3);
	reap((pid_t[]){ root }, 1);
}

/* pid's exit status within WAIT_MS, else -1 (and it is killed and reaped). */
static int
exit_within(pid_t pid)
{
	uint64_t end = clock_now_ms() + WAIT_MS;
	int st;

	while (clock_now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		pause_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/*
 * Proxy A stops (proxy_stop) as its ranks leave: it was held stopped while
 * they said BYE and exited, so their BYEs wait in its sockets when the stop
 * comes. It passes them up before their channels end: they left, and nobody
 * is declared dead; the proxy exits on its own.
 */
static void
test_proxy_stop(void **state)
{
	struct coll_uid uid;
	struct net_addr a;
	pid_t root, ra, rk[3];
	int left[3], proxy;

	(void)state;
	root = root_child(3, &uid);
	ra = proxy_child(&uid, &uid.root, &a);
	rk[0] = rank_child(&uid, 0, 3, NULL, SC_LEAVE);
	rk[1] = rank_child(&uid, 1, 3, &a, SC_LEAVE);
	rk[2] = rank_child(&uid, 2, 3, &a, SC_LEAVE);
	for (int i = 0; i < 3; i++)
		assert_true(wait_for(&s->ready[i], 1));
	assert_true(wait_for(&s->joined, 3));
	kill(ra, SIGSTOP);
	s->go = 1;
	/* Nothing asserted while the proxy is stopped: it must be let go first. */
	for (int i = 1; i < 3; i++)
		left[i] = exit_within(rk[i]);
	kill(ra, SIGTERM);
	kill(ra, SIGCONT);
	proxy = exit_within(ra);
	left[0] = exit_within(rk[0]);
	for (int i = 0; i < 3; i++)
		if (left[i] != 0)
			fail_msg("rank %d ended with %d, not 0", i, left[i]);
	if (proxy != 0)
		fail_msg("the proxy did not stop cleanly (%d)", proxy);
	pause_ms(200);
	assert_int_equal(s->first_dead, -1);
	reap((pid_t[]){ root }, 1);
}

/*
 * Keep-alives every 100 ms, dead after 3 s of silence (a loaded machine
 * under ASan stalls for a second at times): the ranks forked next inherit them.
 */
static void
fast_keepalive(void)
{
	setenv("COLL_KEEPALIVE_MS", "100", 1);
	setenv("COLL_KEEPALIVE_LIMIT", "30", 1);
}

/*
 * No proxied rank's keep-alive reaches the root (its proxy answers it), and
 * rank 3, stopped two proxies deep, is given up by its proxy: the root names
 * it with the proxy's word for how long it was silent.
 */
static void
test_proxy_silent_rank(void **state)
{
	struct nest w;
	uint64_t before;

	(void)state;
	fast_keepalive();
	nest_start(&w, SC_LOST);
	for (int i = 0; i < NR; i++)
		assert_true(wait_for(&s->ready[i], 1));
	assert_true(wait_for(&s->joined, NR));
	/* 15 keep-alive rounds of 3 proxied ranks: none of it on a channel. */
	pause_ms(100);
	before = s->proxied;
	pause_ms(1500);
	if (s->proxied != before)
		fail_msg("the root read %" PRIu64 " frames on proxies' channels while the ranks "
		    "idled", s->proxied - before);
	kill(w.rk[3], SIGSTOP);
	s->go = 1;
	for (int i = 0; i < NR - 1; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->after_rc[i] == COLL_OK)
			fail_msg("rank %d heard nothing of stopped rank 3", i);
	}
	assert_true(wait_for(&s->first_dead, 3));
	if (strstr(s->err[0], "no keep-alive for") == NULL ||
	    strstr(s->err[0], "said the proxy at 127.0.0.1:") == NULL)
		fail_msg("rank 0's error does not say rank 3 went silent behind a proxy: %s",
		    s->err[0]);
	reap(w.rk, NR);
	nest_stop(&w);
}

/* The nested world, fast keep-alives; *who (a proxy or the root) stops: every rank hears. */
static void
nest_stop_one(struct nest *w, pid_t *who, const char *what)
{
	fast_keepalive();
	nest_start(w, SC_LOST);
	for (int i = 0; i < NR; i++)
		assert_true(wait_for(&s->ready[i], 1));
	s->go = 1;
	kill(*who, SIGSTOP);
	for (int i = 0; i < NR; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->after_rc[i] == COLL_OK)
			fail_msg("rank %d did not hear that %s went silent", i, what);
	}
}

/*
 * Proxy B (below A) stops answering: A gives up the ranks B carried, the
 * root names them to the others in one notice, and B's ranks hear that
 * their proxy went silent.
 */
static void
test_proxy_silent_proxy(void **state)
{
	struct nest w;

	(void)state;
	nest_stop_one(&w, &w.rb, "proxy B");
	assert_true(first_dead() == 2 || s->first_dead == 3);
	if (strstr(s->err[0], "no keep-alive for") == NULL ||
	    strstr(s->err[0], "said the proxy at 127.0.0.1:") == NULL)
		fail_msg("rank 0: %s", s->err[0]);
	/*
	 * A's two channel ends came together: one notice named both of B's ranks
	 * (rank 1 may have left by the time rank 0 looked: it is done too).
	 */
	if (strstr(s->err[0], "and 1 more") == NULL || !knew_dead(0, 2) || !knew_dead(0, 3))
		fail_msg("rank 0 did not know ranks 2 and 3 dead at its verdict: %s", s->err[0]);
	for (int i = 2; i < NR; i++)
		if (strstr(s->err[i], "through its proxy at 127.0.0.1:") == NULL)
			fail_msg("rank %d's error does not name its proxy: %s", i, s->err[i]);
	reap(w.rk, NR);
	nest_stop(&w);
}

/* The root stops answering: its proxies give their ranks up, which hear it through them. */
static void
test_proxy_silent_root(void **state)
{
	struct nest w;

	(void)state;
	nest_stop_one(&w, &w.root, "the root");
	if (strstr(s->err[0], "lost the root service") == NULL)
		fail_msg("rank 0: %s", s->err[0]);
	for (int i = 1; i < NR; i++)
		if (strstr(s->err[i], "lost the root service") == NULL ||
		    strstr(s->err[i], "through its proxy at 127.0.0.1:") == NULL)
			fail_msg("rank %d's error does not name its proxy: %s", i, s->err[i]);
	reap(w.rk, NR);
	nest_stop(&w);
}

/*
 * A JOIN the root refuses through a proxy: the rank hears why, and the
 * proxy, whose only JOIN was refused, still serves ranks that come later
 * (it and the root keep the link alive alike).
 */
static void
test_proxy_refused(void **state)
{
	struct coll_uid uid;
	struct net_addr a;
	pid_t root, ra, rk[2];

	(void)state;
	fast_keepalive();
	root = root_child(2, &uid);
	ra = proxy_child(&uid, &uid.root, &a);
	/* A size that is not the root's. */
	rk[0] = rank_child(&uid, 0, 1, &a, SC_LEAVE);
	assert_true(wait_for(&s->done[0], 1));
	assert_int_not_equal(s->init_rc[0], COLL_OK);
	if (strstr(s->err[0], "rank 0 says this root serves 1 ranks, the root expects 2") == NULL)
		fail_msg("the refusal did not reach the rank: %s", s->err[0]);
	reap(rk, 1);
	/* Past the link's keep-alive limit, and the proxy still carries a rank. */
	pause_ms(4000);
	memset(s, 0, sizeof *s);
	s->first_dead = -1;
	s->go = 1;
	rk[0] = rank_child(&uid, 0, 2, NULL, SC_LEAVE);
	rk[1] = rank_child(&uid, 1, 2, &a, SC_LEAVE);
	for (int i = 0; i < 2; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->init_rc[i] != COLL_OK)
			fail_msg("rank %d, after the refusal: %s", i, s->err[i]);
		assert_int_equal(s->sum[i], 1 + 2);
	}
	reap(rk, 2);
	reap((pid_t[]){ ra, root }, 2);
}

/* A proxy that cannot reach its root says so, naming it, and does not start. */
static void
test_proxy_no_root(void **state)
{
	struct coll_uid uid;
	struct net_addr at, nowhere;
	struct proxy *p = NULL;
	char err[COLL_ERR_LEN] = "";
	int fd;

	(void)state;
	/* A port that was just free: nothing listens there. */
	assert_int_equal(net_addr_parse(&nowhere, "127.0.0.1", 0), COLL_OK);
	assert_int_equal(net_listen(&nowhere, 1, &fd), COLL_OK);
	close(fd);
	assert_int_equal(uid_generate(&uid, &nowhere), COLL_OK);
	assert_int_equal(net_addr_parse(&at, "127.0.0.1", 0), COLL_OK);
	assert_int_not_equal(proxy_start(&p, &uid, &uid.root, &at, 500, err, sizeof err), COLL_OK);
	assert_null(p);
	assert_non_null(strstr(err, "cannot reach the root at 127.0.0.1:"));
}

/* Bytes both ways between a and b until either side ends. */
static void
splice_fds(int a, int b)
{
	struct pollfd p[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
	char buf[4096];

	while (poll(p, 2, WAIT_MS) > 0)
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].revents == 0)
				continue;
			if ((n = read(p[i].fd, buf, sizeof buf)) <= 0 ||
			    write(p[1 - i].fd, buf, (size_t)n) != n)
				return;
		}
}

/*
 * In front of the root, as its handshake pool is when it cuts the oldest
 * handshake off for a newcomer: the first connection is closed once its
 * HELLO came; the others are carried to the root byte for byte.
 */
static pid_t
cutter_child(const struct net_addr *root, struct net_addr *at)
{
	int lfd;
	pid_t pid;

	assert_int_equal(net_addr_parse(at, "127.0.0.1", 0), COLL_OK);
	assert_int_equal(net_listen(at, 16, &lfd), COLL_OK);
	assert_int_equal(fcntl(lfd, F_SETFL, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid != 0) {
		close(lfd);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		int fd = accept(lfd, NULL, NULL), up;
		char b;

		if (fd < 0)
			_exit(1);
		if (s->cut == 0) {
			if (read(fd, &b, 1) == 1)
				s->cut = 1;
			close(fd);
			continue;
		}
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (net_connect(root, clock_now_ms() + WAIT_MS, -1, &up) != COLL_OK ||
			    fcntl(up, F_SETFL, 0) != 0)
				_exit(1);
			splice_fds(fd, up);
			_exit(0);
		}
		close(fd);
	}
}

/*
 * A rank whose handshake the root cut off (a crowd held every slot past the
 * grace) connects again and joins, rather than failing the job.
 */
static void
test_proxy_cut_rank_reconnects(void **state)
{
	struct coll_uid uid;
	struct net_addr a;
	pid_t root, cutter, rk[2];

	(void)state;
	root = root_child(2, &uid);
	cutter = cutter_child(&uid.root, &a);
	rk[0] = rank_child(&uid, 0, 2, &a, SC_LEAVE);
	rk[1] = rank_child(&uid, 1, 2, NULL, SC_LEAVE);
	s->go = 1;
	for (int i = 0; i < 2; i++) {
		assert_true(wait_for(&s->done[i], 1));
		if (s->init_rc[i] != COLL_OK)
			fail_msg("rank %d: %s", i, s->err[i]);
		assert_int_equal(s->sum[i], 1 + 2);
	}
	assert_int_equal(s->cut, 1);
	reap(rk, 2);
	reap((pid_t[]){ cutter, root }, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_proxy_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_shrink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_silent_rank, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_silent_proxy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_silent_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proxy_refused, setup, teardown),
		cmocka_unit_test(test_proxy_no_root),
		cmocka_unit_test_setup_teardown(test_proxy_cut_rank_reconnects, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
