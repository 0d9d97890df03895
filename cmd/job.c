/*
 * The front end's event loop. Deliberate choices:
 * - The first rank to fail decides the exit code; later failures are
 *   reported but do not change it (they are usually consequences). A host
 *   that could not be used makes it 255, as with pdsh and ssh.
 * - Ranks get a grace period after a failure so they can report what they
 *   saw (the core names the dead rank); then SIGTERM, then SIGKILL.
 * - With keep_going a failure is reported and sets the exit code, but stops
 *   nothing: the others run to their end. It is one flag on that decision,
 *   here and in srun's --kill-on-bad-exit, not a second loop. A host that
 *   cannot be used is such a failure; a signal from the user and --timeout
 *   still stop the job.
 * - Output is read until every stream closes, so nothing a dying rank wrote
 *   is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cmd.h"
#include "comm.h"
#include "err.h"
#include "gather.h"
#include "ifsel.h"
#include "job.h"
#include "jobrec.h"
#include "net.h"
#include "root.h"
#include "status.h"
#include "uid.h"
#include "xmalloc.h"

static int job_sigpipe[2] = { -1, -1 };
/* The last signal caught, for the start's loop, which does not read the pipe. */
static volatile sig_atomic_t job_last_sig;

/* A start longer than this shows its progress, then again every JOB_PROGRESS_EVERY_MS. */
#define JOB_PROGRESS_AFTER_MS 2000
#define JOB_PROGRESS_EVERY_MS 5000

struct job {
	const struct job_opts *o;
	struct launch *l;
	struct root *root;	/* it knows which rank died first */
	struct gather *gather;
	int failed_rank;	/* first rank that failed, -1 */
	int exit_code;
	int failed_unasked;	/* that rank ended before collrun signalled anything */
	int signalled;		/* collrun has signalled the ranks */
	int forwarded;		/* signals forwarded so far */
	int timed_out;
	int stopping;		/* the ranks left are being stopped (failure or timeout) */
	uint64_t term_at;	/* when to SIGTERM the rest (0: not scheduled) */
	uint64_t kill_at;	/* when to SIGKILL the rest */
	uint64_t give_up_at;	/* after SIGKILL: stop waiting for what never ends */
	int give_up;
	int pids_known;		/* pids in the job record */
	int squat_said;		/* the warning that the record went elsewhere, given */
	int broken_stdout;
	int stdout_errno;	/* why our stdout failed (0: it did not) */
	int label[3];		/* per stream (LAUNCH_STDOUT, LAUNCH_STDERR): [rank] labels */
	int user_sig;		/* the first signal the user sent us (0: none) */
	int nstopped;		/* ranks that ended after it, counted instead of named */
	int nfailed_hosts;
	char **host_why;	/* per host: why it could not be used */
	int recorded;		/* the job record has every pid */
	uint64_t start_at;	/* when the ranks' start began */
	uint64_t progress_at;	/* when to say how far the start is */
};

static void
job_on_signal(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;

	job_last_sig = sig;
	if (write(job_sigpipe[1], &b, 1) < 0)
		(void)0;
	errno = e;
}

static int
job_signals_init(void)
{
	struct sigaction sa;

	if (pipe2(job_sigpipe, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = job_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static const char *
job_host(const struct job *j, int rank)
{
	return j->o->nhosts > 0 ? j->o->hosts[j->o->rank_host[rank]] : NULL;
}

static int
job_quiet(const struct job *j)
{
	return j->o->hooks != NULL && j->o->hooks->quiet;
}

/*
 * Our stdout failed. A reader that went away (| head) ends the job quietly
 * with a shell's SIGPIPE code, as if collrun had died of it: the ranks are
 * stopped at once. Any other error (a full disk, a quota) is said once and
 * the ranks' output dropped, but the job runs on (a week's training is not
 * ended by its log), to end with EXIT_CANNOT if nothing else failed.
 */
static void
job_stdout_failed(struct job *j, int e)
{
	if (j->stdout_errno != 0)
		return;
	j->stdout_errno = e != 0 ? e : EIO;
	j->broken_stdout = 1;
	if (j->failed_rank < 0 && !j->timed_out)
		j->exit_code = cmd_stdout_failed(j->stdout_errno, EXIT_OK);
	if (e != EPIPE)
		return;
	if (!j->stopping && j->l != NULL && launch_running(j->l) > 0) {
		j->stopping = 1;
		j->term_at = clock_now_ms();
	}
}

static void
job_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct job *j = arg;
	FILE *f = stream == LAUNCH_STDOUT ? stdout : stderr;
	int ok = 1;

	if (j->o->hooks != NULL && j->o->hooks->output != NULL &&
	    j->o->hooks->output(j->o->hooks->arg, rank, stream, line, len))
		return;
	if (rank < 0) {
		/* The launcher's own words (srun's), as they are. */
		fwrite(line, 1, len, stderr);
		fputc('\n', stderr);
		return;
	}
	if (j->o->rank0_stdout_only && stream == LAUNCH_STDOUT && rank != 0)
		return;
	if (j->gather != NULL && stream == LAUNCH_STDOUT) {
		gather_add(j->gather, rank, line, len);
		return;
	}
	/* After | head went away, what the ranks we stop say of it is noise too. */
	if (j->broken_stdout && (f == stdout || j->stdout_errno == EPIPE))
		return;
	if (j->label[stream] && !(j->o->rank0_stdout_only && stream == LAUNCH_STDOUT)) {
		if (j->o->kind == LAUNCH_SSH)
			ok = fprintf(f, "[%d %s] ", rank, job_host(j, rank)) >= 0;
		else
			ok = fprintf(f, "[%d] ", rank) >= 0;
	}
	ok = ok && fwrite(line, 1, len, f) == len && fputc('\n', f) != EOF;
	if (!ok && f == stdout)
		job_stdout_failed(j, errno);
}

/*
 * Fail fast: SIGTERM the ranks left after the grace period. Under
 * keep_going a failure stops nothing, unless the user has already asked
 * (by a signal) for the job to end: then it ends as it always did.
 */
static void
job_stop_others(struct job *j)
{
	if (j->stopping || (j->o->keep_going && j->forwarded == 0))
		return;
	j->stopping = 1;
	if (launch_running(j->l) > 0 && j->term_at == 0) {
		j->term_at = clock_now_ms() + (uint64_t)(j->o->grace_s * 1000);
		/* The user's own signal has reached them all already: nothing to announce. */
		if (!job_quiet(j) && j->user_sig == 0)
			fprintf(stderr, "%s: stopping the other ranks in %.0f s\n", j->o->tool, j->o->grace_s);
	}
}

/*
 * A rank lost with its node explains the ranks that ended on SIGTERM or
 * SIGKILL before it was known, if collrun had not signalled them: Slurm
 * stops a step when a node of it fails, and srun reports the lost ones last.
 */
static int
job_lost_explains(const struct job *j)
{
	return j->failed_unasked && (j->exit_code == 128 + SIGTERM ||
	    j->exit_code == 128 + SIGKILL);
}

static void
job_fail_once(struct job *j, int rank, int code, int lost)
{
	int first = j->root != NULL ? root_first_dead(j->root) : -1;

	/*
	 * Ranks that end together (one died, the others heard of it) may be
	 * reported in any order: the root's word on who died first decides.
	 */
	if (j->timed_out || (j->stdout_errno != 0 && j->failed_rank < 0) || (j->failed_rank >= 0 && !(rank == first && j->failed_rank != first) &&
	    !(lost && first < 0 && job_lost_explains(j))))
		return;
	j->failed_rank = rank;
	j->exit_code = code;
	j->failed_unasked = !j->signalled;
	job_stop_others(j);
}

/* A lost rank's host is as good as unreachable: 255, as with ssh. */
static int
job_exit_code(int state, int code)
{
	if (state == LAUNCH_LOST)
		return JOB_EXIT_UNREACHABLE;
	return state == LAUNCH_SIGNALED ? 128 + code : code;
}

void
job_end_words(int state, int code, char *buf, size_t len)
{
	if (state == LAUNCH_LOST)
		snprintf(buf, len, "was lost: word of how it ended never came (its node died or "
		    "was cut off, or its agent or relay was killed)");
	else
		snprintf(buf, len, "%s %d", state == LAUNCH_SIGNALED ? "was killed by signal" :
		    "exited with code", code);
}

static void
job_exited(void *arg, int rank, int state, int code)
{
	struct job *j = arg;
	pid_t pid = j->l != NULL ? launch_pid(j->l, rank) : -1;
	char where[300] = "", words[160], name[24] = "";

	if (j->o->hooks != NULL && j->o->hooks->exited != NULL)
		j->o->hooks->exited(j->o->hooks->arg, rank, state, code);
	j->nstopped += j->user_sig != 0;
	/* A start given up (job_starting): the ranks it started, killed, are counted only. */
	if (j->l == NULL)
		return;
	if (state == LAUNCH_EXITED && code == 0)
		return;
	if (state == LAUNCH_FAILED) {
		/* Its host's failure was reported; the job cannot be whole. */
		job_fail_once(j, rank, JOB_EXIT_UNREACHABLE, 1);
		return;
	}
	fflush(stdout);
	/*
	 * Once the user has stopped the job (Ctrl-C) or our stdout failed
	 * (| head, a full disk), the ranks' ends are ours: counted, not named.
	 */
	if (job_quiet(j) || j->user_sig != 0 || j->stdout_errno != 0) {
		job_fail_once(j, rank, job_exit_code(state, code), state == LAUNCH_LOST);
		return;
	}
	if (job_host(j, rank) != NULL)
		snprintf(where, sizeof where, " on %s", job_host(j, rank));
	job_end_words(state, code, words, sizeof words);
	if (state == LAUNCH_SIGNALED)
		snprintf(name, sizeof name, " (SIG%s)", sigabbrev_np(code) ? sigabbrev_np(code) : "?");
	fprintf(stderr, "%s: rank %d%s (pid %d) %s%s\n", j->o->tool, rank, where, (int)pid, words,
	    name);
	job_fail_once(j, rank, job_exit_code(state, code), state == LAUNCH_LOST);
}

static void
job_host_failed(void *arg, int host, const char *why)
{
	struct job *j = arg;

	if (j->host_why[host] != NULL)
		return;
	j->host_why[host] = xstrdup(why);
	j->nfailed_hosts++;
	if (j->o->hooks != NULL && j->o->hooks->host_failed != NULL)
		j->o->hooks->host_failed(j->o->hooks->arg, host, why);
	if (!job_quiet(j))
		fprintf(stderr, "%s: %s: %s\n", j->o->tool, j->o->hosts[host], why);
}

/* Signal the ranks; a rank's failure after this may be collrun's doing. */
static void
job_signal(struct job *j, int sig)
{
	j->signalled = 1;
	launch_signal(j->l, sig);
}

static void
job_handle_signals(struct job *j)
{
	unsigned char b;

	while (read(job_sigpipe[0], &b, 1) == 1) {
		if (j->forwarded++ == 0) {
			j->user_sig = b;
			fprintf(stderr, "%s: got SIG%s, passing it to the ranks (again to kill them)\n",
			    j->o->tool, sigabbrev_np(b) ? sigabbrev_np(b) : "?");
			job_signal(j, b);
			j->kill_at = clock_now_ms() + (uint64_t)(j->o->grace_s * 1000) + 5000;
		} else {
			job_signal(j, SIGKILL);
			/* The next stages of the kill (Slurm's) follow each second from now. */
			if (j->kill_at == 0 || j->kill_at > clock_now_ms() + 1000)
				j->kill_at = clock_now_ms() + 1000;
		}
	}
}

/* Timers: job timeout, then the SIGTERM and SIGKILL steps. Returns ms to the next. */
static int
job_timers(struct job *j, uint64_t job_deadline)
{
	uint64_t now = clock_now_ms(), next = now + 1000;

	/* A failure kept going from still ends at the timeout, but keeps its code. */
	if (job_deadline && now >= job_deadline && !j->timed_out && !j->stopping) {
		j->timed_out = j->stopping = 1;
		if (j->failed_rank < 0)
			j->exit_code = JOB_EXIT_TIMEOUT;
		fprintf(stderr, "%s: the job ran past --timeout %.0f s; stopping %d ranks\n",
		    j->o->tool, j->o->timeout_s, launch_running(j->l));
		j->term_at = now;
	}
	if (j->term_at && now >= j->term_at) {
		job_signal(j, SIGTERM);
		j->term_at = 0;
		j->kill_at = now + 3000;
	}
	if (j->kill_at && now >= j->kill_at) {
		job_signal(j, SIGKILL);
		if (j->give_up_at == 0)
			j->give_up_at = now + 10000;
		j->kill_at = now + 1000;
	}
	if (j->give_up_at && now >= j->give_up_at) {
		/* A host that stopped answering cannot be made to: leave, and say so. */
		fprintf(stderr, "%s: %d ranks did not end 10 s after SIGKILL; giving up on them\n",
		    j->o->tool, launch_running(j->l));
		j->give_up = 1;
		if (j->exit_code == 0)
			j->exit_code = JOB_EXIT_UNREACHABLE;
	}
	if (job_deadline && !j->stopping && job_deadline < next)
		next = job_deadline;
	if (j->term_at && j->term_at < next)
		next = j->term_at;
	if (j->kill_at && j->kill_at < next)
		next = j->kill_at;
	return next > now ? (int)(next - now) : 0;
}

/* The root holds a socket per rank and SSH one per host: 1024 fds is too few. */
static void
job_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
job_master_port(void)
{
	struct net_addr a;
	int fd, port = 29500;

	/* Like torchrun: pick a free port now; rank 0's store binds it later. */
	if (net_addr_parse(&a, "127.0.0.1", 0) == COLL_OK && net_listen(&a, 1, &fd) == COLL_OK) {
		port = net_addr_port(&a);
		close(fd);
	}
	return port;
}

/* Why there is no job record, in one line naming the directory and what to do. */
static void
job_record_warn(const char *tool, int r, const char *where)
{
	if (r == COLL_ETOOBIG)
		fprintf(stderr, "%s: warning: no job record: the job directory's name is too "
		    "long: set COLL_JOB_DIR to a shorter path\n", tool);
	else if (r == COLL_EOWNER)
		fprintf(stderr, "%s: warning: no job record: %s is owned by another user: "
		    "remove it or set COLL_JOB_DIR to a directory of your own\n", tool, where);
	else if (r == COLL_EUNSAFE)
		fprintf(stderr, "%s: warning: no job record: %s is a link, not a directory, or "
		    "writable by others: make it a directory of yours with mode 700 or set "
		    "COLL_JOB_DIR elsewhere\n", tool, where);
	else
		fprintf(stderr, "%s: warning: cannot write the job record %s: %s\n", tool, where,
		    r == COLL_ESYS ? strerror(errno) : coll_strerror(r));
}

/*
 * The record went elsewhere because another user made $TMPDIR/coll-<uid>
 * first (jobrec_dir): say so once, naming that user, so that root can remove it.
 */
static void
job_record_squatted(const char *tool, const char *path)
{
	char top[4096];
	struct stat sb;

	snprintf(top, sizeof top, "%s/coll-%u/", jobrec_tmp(), (unsigned)geteuid());
	if ((getenv("COLL_JOB_DIR") != NULL && getenv("COLL_JOB_DIR")[0] != '\0') ||
	    strncmp(path, top, strlen(top)) == 0)
		return;
	top[strlen(top) - 1] = '\0';
	if (lstat(top, &sb) != 0)
		return;
	fprintf(stderr, "%s: warning: %s belongs to uid %u, not you (or is not a private "
	    "directory): the job record is in %s instead; remove %s (as root)\n", tool, top,
	    (unsigned)sb.st_uid, path, top);
}

/* Write (or rewrite, once every remote pid is known) the record collstack reads. */
static void
job_record(struct job *j, const struct coll_uid *uid, char *path, size_t len)
{
	struct jobrec_rank *r = xcalloc((size_t)j->o->nranks, sizeof *r);
	char host[256] = "localhost";
	static const char *names[] = { "local", "ssh", "slurm" };
	struct jobrec rec = { uid->jobid, names[j->o->kind], getpid(),
	    j->o->argv, j->o->nranks, r };
	int all = 1, known = 0, err;

	gethostname(host, sizeof host - 1);
	for (int i = 0; i < j->o->nranks; i++) {
		r[i] = (struct jobrec_rank){ i, job_host(j, i) ? job_host(j, i) : host,
		    launch_pid(j->l, i) };
		all &= r[i].pid > 0;
		known += r[i].pid > 0;
	}
	/* Rewrite only when it says more than last time. */
	if (path[0] != '\0' && known == j->pids_known) {
		free(r);
		return;
	}
	j->pids_known = known;
	if ((err = jobrec_write(&rec, path, len)) != COLL_OK) {
		job_record_warn(j->o->tool, err, path);
		path[0] = '\0';
		all = 1;
	} else if (!j->squat_said) {
		job_record_squatted(j->o->tool, path);
		j->squat_said = 1;
	}
	j->recorded = all;
	free(r);
}

/*
 * Where the root listens: loopback for a local job; else every address (or
 * the chosen interface's). On every address the uid says "::": each SSH
 * host is given the address its session reached, and each Slurm task the
 * address srun reached its node from (collrun --agent --slurm).
 */
static int
job_root_addr(const struct job_opts *o, struct net_addr *a)
{
	const char *ifname = getenv("COLL_SOCKET_IFNAME");
	char name[64];

	if (o->kind == LAUNCH_LOCAL)
		return net_addr_parse(a, "127.0.0.1", 0);
	if (ifname != NULL && *ifname != '\0')
		return ifsel_pick(ifname, AF_UNSPEC, a, name, sizeof name);
	/* Every address, both families (net_listen makes "::" dual-stack). */
	return net_addr_parse(a, "::", 0);
}

static int
job_system_dir(const char *bin)
{
	static const char *const sys[] = { "/bin", "/usr/bin", "/usr/local/bin", "/sbin",
	    "/usr/sbin", "/usr/local/sbin", NULL };

	for (int i = 0; sys[i] != NULL; i++)
		if (strcmp(bin, sys[i]) == 0)
			return 1;
	return 0;
}

/*
 * Where the remote agent and the ranks' PATH and LD_LIBRARY_PATH come from,
 * as Open MPI does it: --prefix DIR names an installation (DIR/bin,
 * DIR/lib); a collrun started by a path stands for the installation it is
 * in, so `/opt/coll/bin/collrun -H ... collcheck` finds /opt/coll/bin's
 * collcheck there. A collrun found through PATH, or installed in the system's
 * own bin, leaves the remote PATH be.
 */
static void
job_install_dirs(const struct job_opts *o, struct launch_opts *lo)
{
	static char self[4096], bin[4096], agent[sizeof bin + 16], lib[4096], sibling[4096 + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	self[n > 0 ? n : 0] = '\0';
	lo->agent = self;
	/* Another tool (collcheck) has collrun beside it, in the same installation. */
	if ((slash = strrchr(self, '/')) != NULL && strcmp(slash + 1, "collrun") != 0) {
		snprintf(sibling, sizeof sibling, "%.*s/collrun", (int)(slash - self), self);
		lo->agent = sibling;
	}
	if (o->prefix != NULL) {
		snprintf(bin, sizeof bin, "%s/bin", o->prefix);
		snprintf(agent, sizeof agent, "%s/collrun", bin);
		snprintf(lib, sizeof lib, "%s/%s", o->prefix, COLL_LIBDIR);
		lo->agent = agent;
	} else if (o->by_path && (slash = strrchr(self, '/')) != NULL) {
		snprintf(bin, sizeof bin, "%.*s", (int)(slash - self), self);
		/* The system's own dirs are in every PATH already: putting them first would
		 * hide a user's venv python or their own libnccl behind the system's. */
		if (job_system_dir(bin))
			return;
		slash = strrchr(bin, '/');
		snprintf(lib, sizeof lib, "%.*s/%s", slash ? (int)(slash - bin) : 0, bin, COLL_LIBDIR);
	} else {
		return;
	}
	lo->bindir = bin;
	lo->libdir = lib;
}

/*
 * Between two ranks of the start: a signal of the user's stops it (the
 * launcher kills what it started); a long start says how far it is.
 */
static int
job_starting(void *arg, int started, int total)
{
	struct job *j = arg;
	uint64_t now;

	if (job_last_sig != 0) {
		j->user_sig = job_last_sig;
		j->forwarded = 1;
		return 1;
	}
	if (started % 64 != 0 || job_quiet(j) || (now = clock_now_ms()) < j->progress_at)
		return 0;
	if (j->progress_at != 0)
		fprintf(stderr, "%s: started %d of %d ranks\n", j->o->tool, started, total);
	j->progress_at = (j->progress_at == 0 ? j->start_at + JOB_PROGRESS_AFTER_MS : now +
	    JOB_PROGRESS_EVERY_MS);
	return 0;
}

/* One line for the ranks a signal of the user's stopped, however many (the exit code too). */
static void
job_say_stopped(struct job *j, const char *when)
{
	if (!job_quiet(j))
		fprintf(stderr, "%s: %s by SIG%s%s; %d rank%s stopped\n", j->o->tool,
		    j->user_sig == SIGINT ? "interrupted" : "stopped",
		    sigabbrev_np(j->user_sig) ? sigabbrev_np(j->user_sig) : "?", when, j->nstopped,
		    j->nstopped == 1 ? "" : "s");
	if (j->exit_code == 0)
		j->exit_code = 128 + j->user_sig;
}

static int
job_start(struct job *j, struct root **root, struct coll_uid *uid, char *path, size_t len)
{
	struct launch_cb cb = { job_output, job_exited, job_host_failed, j, job_starting };
	struct launch_opts lo;
	struct net_addr a;
	static char cwd[4096];
	int r;

	if (j->o->kind == LAUNCH_LOCAL && launch_resolve(j->o->argv[0], path, len) != COLL_OK) {
		fprintf(stderr, "%s: cannot find program '%s': not an executable path and not in "
		    "PATH\n", j->o->tool, j->o->argv[0]);
		return EXIT_CANNOT;
	}
	if (job_root_addr(j->o, &a) != COLL_OK) {
		fprintf(stderr, "%s: COLL_SOCKET_IFNAME=%s matches no interface that is up\n",
		    j->o->tool, getenv("COLL_SOCKET_IFNAME"));
		return EXIT_CANNOT;
	}
	r = root_start(root, &a, j->o->nranks, j->o->join_timeout_ms, uid);
	if (r != COLL_OK && a.ss.ss_family == AF_INET6 && net_addr_is_loopback(&a) == 0 &&
	    net_addr_parse(&a, "0.0.0.0", 0) == COLL_OK)
		r = root_start(root, &a, j->o->nranks, j->o->join_timeout_ms, uid);	/* no IPv6 here */
	if (r != COLL_OK) {
		fprintf(stderr, "%s: cannot start the rendezvous service: %s: %s\n", j->o->tool,
		    coll_strerror(r), strerror(errno));
		return EXIT_CANNOT;
	}
	lo = (struct launch_opts){ .kind = j->o->kind, .nranks = j->o->nranks,
	    .path = j->o->kind == LAUNCH_LOCAL ? path : j->o->argv[0], .argv = j->o->argv,
	    .uid = uid, .master_addr = "127.0.0.1", .master_port = job_master_port(),
	    .keep_stdin = 1, .env = j->o->env, .nhosts = j->o->nhosts, .hosts = j->o->hosts,
	    .rank_host = j->o->rank_host,
	    .cwd = getcwd(cwd, sizeof cwd), .ssh_config = j->o->ssh_config,
	    .connect_timeout_ms = j->o->connect_timeout_ms, .fanout = j->o->fanout,
	    .tree = j->o->tree,
	    .accept_new = j->o->accept_new, .nodelist = j->o->nodelist,
	    .jobid = j->o->slurm_jobid,
	    .per_host = j->o->per_host, .cyclic = j->o->cyclic,
	    .keep_going = j->o->keep_going };
	job_install_dirs(j->o, &lo);
	j->start_at = clock_now_ms();
	if ((r = launch_start(&j->l, &lo, &cb)) == COLL_EABORTED) {
		job_say_stopped(j, " while starting");
		return j->exit_code;
	}
	if (r != COLL_OK) {
		fprintf(stderr, "%s: cannot start the ranks: %s\n", j->o->tool,
		    r == COLL_ENOTFOUND ? "srun is not in PATH: install slurm-client or use "
		    "another --launcher" : strerror(errno));
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

static void
job_summary(struct job *j)
{
	if (j->user_sig != 0)
		job_say_stopped(j, "");
	if (j->nfailed_hosts == 0)
		return;
	j->exit_code = JOB_EXIT_UNREACHABLE;
	if (job_quiet(j))
		return;
	fprintf(stderr, "%s: %d of %d hosts could not be used:\n", j->o->tool, j->nfailed_hosts,
	    j->o->nhosts);
	for (int h = 0; h < j->o->nhosts; h++)
		if (j->host_why[h] != NULL)
			fprintf(stderr, "  %s: %s\n", j->o->hosts[h], j->host_why[h]);
}

static void
job_loop(struct job *j, const struct coll_uid *uid, char *recpath, size_t len)
{
	uint64_t deadline = 0;

	if (j->o->timeout_s > 0)
		deadline = clock_now_ms() + (uint64_t)(j->o->timeout_s * 1000);
	while (!j->give_up && launch_poll(j->l, job_timers(j, deadline), job_sigpipe[0]) > 0) {
		job_handle_signals(j);
		if (!j->recorded)
			job_record(j, uid, recpath, len);
		if (!j->broken_stdout && fflush(stdout) != 0)
			job_stdout_failed(j, errno);
		fflush(stderr);
	}
}

int
job_run(const struct job_opts *o)
{
	struct job j = { .o = o, .failed_rank = -1 };
	struct root *root = NULL;
	struct coll_uid uid = { 0 };
	char recpath[4200] = "", path[4096];
	int code;

	job_raise_fd_limit();
	if (job_signals_init() == -1) {
		fprintf(stderr, "%s: cannot create a pipe: %s\n", o->tool, strerror(errno));
		return EXIT_CANNOT;
	}
	for (int s = LAUNCH_STDOUT; s <= LAUNCH_STDERR; s++)
		j.label[s] = o->label == JOB_LABEL_TTY ? isatty(s) : o->label;
	j.host_why = xcalloc((size_t)o->nhosts + 1, sizeof *j.host_why);
	if (o->gather)
		j.gather = gather_new(o->nranks);
	if ((code = job_start(&j, &root, &uid, path, sizeof path)) == EXIT_OK) {
		j.root = root;
		if (o->hooks != NULL && o->hooks->started != NULL) {
			char us[UID_STR_LEN];

			uid_format(&uid, us, sizeof us);
			o->hooks->started(o->hooks->arg, us);
		}
		job_record(&j, &uid, recpath, sizeof recpath);
		job_loop(&j, &uid, recpath, sizeof recpath);
		if (j.gather != NULL)
			gather_print(j.gather, stdout, o->nhosts ? o->hosts : NULL, o->rank_host);
		if (!j.broken_stdout && fflush(stdout) != 0)
			job_stdout_failed(&j, errno);
		job_summary(&j);
		code = j.exit_code;
	}
	/* Said (or, for a closed pipe, not to be said): the caller's check stays quiet. */
	if (j.stdout_errno != 0) {
		__fpurge(stdout);
		clearerr(stdout);
	}
	status_remove_job(uid.jobid);
	if (recpath[0] != '\0')
		unlink(recpath);
	launch_free(j.l);
	root_stop(root);
	gather_free(j.gather);
	for (int h = 0; h < o->nhosts; h++)
		free(j.host_why[h]);
	free(j.host_why);
	return code;
}
