/*
 * Communicator init at scale: a root service in this process and N ranks,
 * child processes running this same program, that each join (comm_init),
 * do one 8-byte all-reduce, check it and leave (comm_destroy). It measures
 * what the init path costs the job and the root:
 *
 *   bench_init_scale [--roots B] N [REPS]  run the job REPS times (default 3)
 *   bench_init_scale --rank R N PPID       one rank (run by the above; the
 *                                          unique ids come in COLL_UNIQUE_ID)
 *
 * With --roots B, B roots each serve a block of the ranks, which join with
 * comm_init_scalable; root_bytes_sent is then all roots' bytes together and
 * max_root_bytes the most any one root sent.
 *
 * Output, one line per repetition, then the median of each column, e.g.:
 *
 *   # ranks wall_s root_bytes_sent root_rss_kb max_root_bytes roots
 *   64 0.5224 148224 5688 148224 1
 *   median 64 0.5224 148224 5688 148224 1
 *
 * wall_s runs from just before the first rank is spawned to when the last has
 * been reaped, so it includes starting the processes.
 *
 * root_bytes_sent: this process runs only the root (its thread and the
 * handshake threads it starts) and the spawning, so whatever it sends on
 * sockets is the root's traffic. It is not taken from wchar in /proc/self/io:
 * the kernel counts write(2)/writev(2) there but not send(2)/sendmsg(2),
 * which is what the root uses (checked on Linux 6.18: a 100 kB send() on a
 * loopback TCP socket leaves wchar unchanged), so wchar would stay near zero
 * whatever the root sends. Instead the link
 * wraps send, sendto, sendmsg, sendmmsg, write and writev (-Wl,--wrap, see
 * bench/CMakeLists.txt) and counts the bytes each call accepted, for sockets
 * only. Any root that sends through libc's socket or write calls is counted
 * alike, whatever its protocol; a zero is reported as a problem.
 *
 * root_rss_kb: peak RSS of this process (getrusage), with the peak reset
 * before each repetition through /proc/self/clear_refs so that each line is
 * its own repetition's peak.
 *
 * A rank that fails makes the program print a line naming it, kill the other
 * ranks (after a few seconds in which they may report why they failed too)
 * and exit 1. Ranks die with this process (PR_SET_PDEATHSIG), so an
 * interrupted run leaves no orphans.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll.h"
#include "comm.h"
#include "err.h"
#include "net.h"
#include "root.h"
#include "status.h"
#include "uid.h"

/* File descriptors the root needs besides one socket per rank. */
#define BENCH_FD_SLACK 64
/* How long ranks still running after a failure get to report theirs. */
#define BENCH_GRACE_MS 3000
#define BENCH_MAX_REPS 100
#define BENCH_MAX_ROOTS 64
#define BENCH_MAX_FAIL_LINES 10
/* The parent's own lines, told apart from the ranks' on the shared stderr. */
#define BENCH_ME "bench_init_scale: "

extern char **environ;

static atomic_ullong bench_sent;

/* The real calls and their wrappers (-Wl,--wrap=NAME links NAME to __wrap_NAME). */
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __real_sendto(int fd, const void *buf, size_t len, int flags,
    const struct sockaddr *to, socklen_t tolen);
ssize_t __real_sendmsg(int fd, const struct msghdr *msg, int flags);
int __real_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags);
ssize_t __real_write(int fd, const void *buf, size_t len);
ssize_t __real_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_sendto(int fd, const void *buf, size_t len, int flags,
    const struct sockaddr *to, socklen_t tolen);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *msg, int flags);
int __wrap_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags);
ssize_t __wrap_write(int fd, const void *buf, size_t len);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int iovcnt);

static ssize_t
bench_count(ssize_t n)
{
	if (n > 0)
		atomic_fetch_add_explicit(&bench_sent, (unsigned long long)n, memory_order_relaxed);
	return n;
}

/* write(2) also serves pipes, eventfds and stderr: only a socket's bytes count. */
static int
bench_is_socket(int fd)
{
	struct stat sb;
	int saved = errno, r = fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode);

	errno = saved;
	return r;
}

ssize_t
__wrap_send(int fd, const void *buf, size_t len, int flags)
{
	return bench_count(__real_send(fd, buf, len, flags));
}

ssize_t
__wrap_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
    socklen_t tolen)
{
	return bench_count(__real_sendto(fd, buf, len, flags, to, tolen));
}

ssize_t
__wrap_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return bench_count(__real_sendmsg(fd, msg, flags));
}

int
__wrap_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	int n = __real_sendmmsg(fd, vec, vlen, flags);

	for (int i = 0; i < n; i++)
		bench_count((ssize_t)vec[i].msg_len);
	return n;
}

ssize_t
__wrap_write(int fd, const void *buf, size_t len)
{
	ssize_t n = __real_write(fd, buf, len);

	return bench_is_socket(fd) ? bench_count(n) : n;
}

ssize_t
__wrap_writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t n = __real_writev(fd, iov, iovcnt);

	return bench_is_socket(fd) ? bench_count(n) : n;
}

struct bench_rep {
	double wall_s;
	unsigned long long sent;
	long rss_kb;
	unsigned long long max_root;	/* the most one root sent */
};

struct bench_job {
	int n;
	pid_t *pids;
	int left;		/* ranks not yet reaped */
	int failed;		/* ranks that exited non-zero or died */
	char **envp;
	char *uid_env;		/* COLL_UNIQUE_ID=id[,id...] */
};

static double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
bench_parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

/* --- rank mode --- */

static int
rank_run(int rank, int n)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	const char *s = getenv("COLL_UNIQUE_ID");
	uint64_t v = (uint64_t)rank + 1, sum = 0, want = (uint64_t)n * ((uint64_t)n + 1) / 2;
	struct coll_uid *uids = NULL;
	struct comm *c = NULL;
	int r, rc = 1, nuids;

	if (s == NULL || (r = uid_parse_list(s, COLL_MAX_ROOTS, &uids, &nuids)) != COLL_OK) {
		fprintf(stderr, "rank %d: no valid unique id in COLL_UNIQUE_ID\n", rank);
		return 1;
	}
	r = comm_init_scalable(&c, n, uids, nuids, rank, &cfg);
	free(uids);
	if (r != COLL_OK) {
		fprintf(stderr, "rank %d: comm_init failed: %s\n", rank,
		    c ? comm_last_error(c) : coll_strerror(r));
		goto out;
	}
	if ((r = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) != COLL_OK) {
		fprintf(stderr, "rank %d: all-reduce failed: %s\n", rank, comm_last_error(c));
		goto out;
	}
	if (sum != want) {
		fprintf(stderr, "rank %d: all-reduce gave %" PRIu64 ", expected %" PRIu64 "\n",
		    rank, sum, want);
		goto out;
	}
	rc = 0;
out:
	comm_destroy(c);
	return rc;
}

static int
rank_main(int argc, char **argv)
{
	int rank, n, ppid;

	if (argc != 5 || bench_parse_int(argv[3], 1, 1 << 24, &n) != 0 ||
	    bench_parse_int(argv[2], 0, n - 1, &rank) != 0 ||
	    bench_parse_int(argv[4], 1, 1 << 30, &ppid) != 0) {
		fprintf(stderr, "usage: bench_init_scale --rank RANK N PARENT_PID\n");
		return 2;
	}
	/* Die with the parent, and check it did not die before we asked. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != ppid)
		return 1;
	return rank_run(rank, n);
}

/* --- parent --- */

/* The root holds one socket per rank: take the hard limit, or say why it is too low. */
static int
bench_raise_nofile(int n)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)n + BENCH_FD_SLACK;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		fprintf(stderr, BENCH_ME "cannot read RLIMIT_NOFILE: %s\n", strerror(errno));
		return -1;
	}
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		fprintf(stderr, BENCH_ME "the hard limit on open files (RLIMIT_NOFILE) is %llu, "
		    "too low for %d ranks: the root holds one socket per rank and needs about "
		    "%llu; raise it (ulimit -Hn as root, limits.conf or LimitNOFILE=)\n",
		    (unsigned long long)rl.rlim_max, n, (unsigned long long)need);
		return -1;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		fprintf(stderr, BENCH_ME "cannot raise RLIMIT_NOFILE to %llu: %s\n",
		    (unsigned long long)rl.rlim_max, strerror(errno));
		return -1;
	}
	return 0;
}

/* The parent's environment with COLL_UNIQUE_ID set to this repetition's ids. */
static char **
bench_env(struct bench_job *job, const struct coll_uid *uids, int nuids)
{
	char idstr[UID_STR_LEN];
	size_t n = 0, k = 0, len = 32 + (size_t)nuids * UID_STR_LEN, off;
	char **envp;

	if ((job->uid_env = malloc(len)) == NULL)
		return NULL;
	off = (size_t)snprintf(job->uid_env, len, "COLL_UNIQUE_ID=");
	for (int i = 0; i < nuids; i++) {
		uid_format(&uids[i], idstr, sizeof idstr);
		off += (size_t)snprintf(job->uid_env + off, len - off, "%s%s", i ? "," : "", idstr);
	}
	while (environ[n] != NULL)
		n++;
	envp = calloc(n + 2, sizeof *envp);
	if (envp == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "COLL_UNIQUE_ID=", 15) != 0)
			envp[k++] = environ[i];
	envp[k] = job->uid_env;
	return envp;
}

static int
bench_spawn(struct bench_job *job, int rank)
{
	char rs[16], ns[16], ps[16];
	char *argv[] = { "bench_init_scale", "--rank", rs, ns, ps, NULL };
	int r;

	snprintf(rs, sizeof rs, "%d", rank);
	snprintf(ns, sizeof ns, "%d", job->n);
	snprintf(ps, sizeof ps, "%d", (int)getpid());
	r = posix_spawn(&job->pids[rank], "/proc/self/exe", NULL, NULL, argv, job->envp);
	if (r != 0) {
		fprintf(stderr, BENCH_ME "cannot spawn rank %d of %d: %s\n", rank, job->n,
		    strerror(r));
		job->pids[rank] = 0;
		return -1;
	}
	job->left++;
	return 0;
}

static int
bench_rank_of(const struct bench_job *job, pid_t pid)
{
	for (int i = 0; i < job->n; i++)
		if (job->pids[i] == pid)
			return i;
	return -1;
}

/* Account for one reaped child; name it if it failed. */
static void
bench_reaped(struct bench_job *job, pid_t pid, int st)
{
	int rank = bench_rank_of(job, pid);

	if (rank < 0)
		return;
	job->pids[rank] = 0;
	job->left--;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return;
	if (job->failed++ >= BENCH_MAX_FAIL_LINES)
		return;
	if (WIFEXITED(st))
		fprintf(stderr, BENCH_ME "rank %d (pid %d) failed: exit status %d\n", rank,
		    (int)pid, WEXITSTATUS(st));
	else
		fprintf(stderr, BENCH_ME "rank %d (pid %d) failed: killed by signal %d (%s)\n",
		    rank, (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
}

/* Kill and reap every rank still running; they do not count as failures. */
static void
bench_kill_all(struct bench_job *job)
{
	int st;
	pid_t pid;

	for (int i = 0; i < job->n; i++)
		if (job->pids[i] > 0)
			kill(job->pids[i], SIGKILL);
	while (job->left > 0 && (pid = waitpid(-1, &st, 0)) > 0) {
		int rank = bench_rank_of(job, pid);

		if (rank >= 0) {
			job->pids[rank] = 0;
			job->left--;
		}
	}
}

/* After a failure, let the others report for a while, then kill the rest. */
static void
bench_grace(struct bench_job *job)
{
	double until = bench_now() + BENCH_GRACE_MS / 1000.0;
	struct timespec pause = { 0, 10 * 1000000 };
	int st;
	pid_t pid;

	while (job->left > 0 && bench_now() < until) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid > 0)
			bench_reaped(job, pid, st);
		else
			nanosleep(&pause, NULL);
	}
	if (job->left > 0)
		fprintf(stderr, BENCH_ME "killing the %d ranks still running\n", job->left);
	bench_kill_all(job);
}

/* Reap what has exited (all of them with block set), until a rank fails. */
static int
bench_reap(struct bench_job *job, int block)
{
	int st;
	pid_t pid;

	while (job->left > 0 && job->failed == 0) {
		pid = waitpid(-1, &st, block ? 0 : WNOHANG);
		if (pid == 0)
			break;
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid == -1) {
			fprintf(stderr, BENCH_ME "waitpid: %s\n", strerror(errno));
			return -1;
		}
		bench_reaped(job, pid, st);
	}
	return job->failed == 0 ? 0 : -1;
}

static void
bench_reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	/* "5" resets the peak RSS; without it the peak is that of all repetitions so far. */
	if (fd >= 0) {
		if (__real_write(fd, "5", 1) != 1)
			fprintf(stderr, BENCH_ME "cannot reset the peak RSS: %s\n",
			    strerror(errno));
		close(fd);
	}
}

/* Spawn every rank and wait for all; on any failure, none is left running. */
static int
bench_run_ranks(struct bench_job *job, double *wall)
{
	double t0 = bench_now();
	int r = 0;

	/* Reaping as we go stops the spawning at the first failure. */
	for (int i = 0; i < job->n && r == 0; i++)
		if ((r = bench_spawn(job, i)) == 0)
			r = bench_reap(job, 0);
	if (r == 0)
		r = bench_reap(job, 1);
	*wall = bench_now() - t0;
	if (r != 0) {
		bench_grace(job);
		if (job->failed > BENCH_MAX_FAIL_LINES)
			fprintf(stderr, BENCH_ME "%d of %d ranks failed (the first %d are named "
			    "above)\n", job->failed, job->n, BENCH_MAX_FAIL_LINES);
		else if (job->failed > 0)
			fprintf(stderr, BENCH_ME "%d of %d ranks failed\n", job->failed, job->n);
	}
	return r;
}

/* Block b of nroots over n ranks: as comm_init_scalable cuts them. */
static int
bench_block_size(int n, int nroots, int b)
{
	return (int)((int64_t)(b + 1) * n / nroots) - (int)((int64_t)b * n / nroots);
}

static int
bench_rep(int n, int nroots, struct bench_rep *out)
{
	struct bench_job job = { .n = n };
	struct net_addr a;
	struct coll_uid uids[BENCH_MAX_ROOTS];
	struct root *roots[BENCH_MAX_ROOTS] = { 0 };
	struct rusage ru;
	unsigned long long sent0, one;
	int r = -1, cr;

	job.pids = calloc((size_t)n, sizeof *job.pids);
	if (job.pids == NULL || net_addr_parse(&a, "127.0.0.1", 0) != COLL_OK)
		goto out;
	for (int b = 0; b < nroots; b++)
		if ((cr = root_start(&roots[b], &a, bench_block_size(n, nroots, b),
		    comm_env_timeout_ms(), &uids[b])) != COLL_OK) {
			fprintf(stderr, BENCH_ME "cannot start root %d: %s\n", b,
			    coll_strerror(cr));
			goto out;
		}
	if ((job.envp = bench_env(&job, uids, nroots)) == NULL)
		goto out;
	bench_reset_peak_rss();
	sent0 = atomic_load(&bench_sent);
	r = bench_run_ranks(&job, &out->wall_s);
	for (int b = 0; r != 0 && b < nroots; b++)
		if (root_first_dead(roots[b]) >= 0)
			fprintf(stderr, BENCH_ME "the first connection root %d lost was rank %d's\n",
			    b, root_first_dead(roots[b]));
	/* Joins the roots' threads: every byte they sent is counted after this. */
	out->max_root = 0;
	for (int b = 0; b < nroots; b++) {
		/* Its own count covers the connections it closed: let it see every rank go. */
		(void)root_wait_idle(roots[b], 5000);
		one = root_bytes_sent(roots[b]);
		if (one > out->max_root)
			out->max_root = one;
		root_stop(roots[b]);
		roots[b] = NULL;
	}
	out->sent = atomic_load(&bench_sent) - sent0;
	getrusage(RUSAGE_SELF, &ru);
	out->rss_kb = ru.ru_maxrss;
out:
	for (int b = 0; b < nroots; b++)
		root_stop(roots[b]);
	/* Ranks killed after a failure leave their status pages behind. */
	if (nroots > 0 && job.envp != NULL)
		status_remove_job(uids[0].jobid);
	free(job.envp);
	free(job.uid_env);
	free(job.pids);
	return r;
}

static int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); the mean of the middle two for even n. */
static double
bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
bench_print_median(int n, int nroots, const struct bench_rep *reps, int nreps)
{
	double w[BENCH_MAX_REPS], s[BENCH_MAX_REPS], m[BENCH_MAX_REPS], x[BENCH_MAX_REPS];

	for (int i = 0; i < nreps; i++) {
		w[i] = reps[i].wall_s;
		s[i] = (double)reps[i].sent;
		m[i] = (double)reps[i].rss_kb;
		x[i] = (double)reps[i].max_root;
	}
	printf("median %d %.4f %.0f %.0f %.0f %d\n", n, bench_median(w, nreps),
	    bench_median(s, nreps), bench_median(m, nreps), bench_median(x, nreps), nroots);
}

static int
bench_main(int n, int nroots, int nreps)
{
	struct bench_rep reps[BENCH_MAX_REPS];

	if (bench_raise_nofile(n) != 0)
		return 2;
	printf("# ranks wall_s root_bytes_sent root_rss_kb max_root_bytes roots\n");
	for (int i = 0; i < nreps; i++) {
		if (bench_rep(n, nroots, &reps[i]) != 0) {
			fprintf(stderr, BENCH_ME "repetition %d of %d ranks failed\n", i + 1, n);
			return 1;
		}
		printf("%d %.4f %llu %ld %llu %d\n", n, reps[i].wall_s, reps[i].sent,
		    reps[i].rss_kb, reps[i].max_root, nroots);
		fflush(stdout);
		if (reps[i].sent == 0) {
			fprintf(stderr, BENCH_ME "no bytes counted for the root: does it still "
			    "send through send/sendmsg/write? (see the comment atop "
			    "bench/init_scale.c)\n");
			return 1;
		}
	}
	bench_print_median(n, nroots, reps, nreps);
	return 0;
}

int
main(int argc, char **argv)
{
	int n, nreps = 3, nroots = 1, rc;

	if (argc > 1 && strcmp(argv[1], "--rank") == 0)
		return rank_main(argc, argv);
	if (argc > 2 && strcmp(argv[1], "--roots") == 0) {
		if (bench_parse_int(argv[2], 1, BENCH_MAX_ROOTS, &nroots) != 0) {
			fprintf(stderr, "bench_init_scale: --roots %s: give 1..%d\n", argv[2],
			    BENCH_MAX_ROOTS);
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	if (argc < 2 || argc > 3 || bench_parse_int(argv[1], 1, 1 << 20, &n) != 0 ||
	    (argc == 3 && bench_parse_int(argv[2], 1, BENCH_MAX_REPS, &nreps) != 0) ||
	    nroots > n) {
		fprintf(stderr, "usage: bench_init_scale [--roots B] N [REPS]   (N ranks, B <= N "
		    "roots, REPS 1..%d, default 3)\n", BENCH_MAX_REPS);
		return 2;
	}
	rc = bench_main(n, nroots, nreps);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, BENCH_ME "cannot write the results: %s\n", strerror(errno));
		return 1;
	}
	return rc;
}
