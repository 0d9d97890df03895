/*
 * Processes as /proc shows them: state, owner, command line, who its
 * launcher said it is (rank, local rank, node rank, size, job and step ids)
 * and which host it belongs to (its UTS namespace: hosts made of namespaces
 * on one machine share /proc).
 *
 * Launchers nest, and each sets its own variables: a torchrun under srun
 * gives its workers RANK while srun's SLURM_PROCID, which they inherit, is
 * the node's; an mpirun inside a Slurm allocation leaves SLURM_PROCID of the
 * batch step (0 on every rank). So the launcher nearest the rank wins: coll's
 * own, then torch elastic's and DeepSpeed's (RANK), then MPI's (Open MPI,
 * PMIx, MPICH's PMI, MVAPICH), and Slurm's last.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "plat_file.h"
#include "stack.h"
#include "stack_impl.h"
#include "xmalloc.h"

#define STACK_ENV_MAX (1u << 20)
#define STACK_ENV_STRANGER_MAX (64u << 10)

/* Each list in order of precedence: the first one present wins. */
static const char *const stack_rank_vars[] = { "COLL_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
	"PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID", NULL };
static const char *const stack_local_vars[] = { "COLL_LOCAL_RANK", "LOCAL_RANK",
	"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
	"SLURM_LOCALID", NULL };
static const char *const stack_size_vars[] = { "COLL_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
	"PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS", NULL };
static const char *const stack_group_vars[] = { "GROUP_RANK", NULL };
static const char *const stack_step_vars[] = { "SLURM_STEP_ID", "SLURM_STEPID", NULL };

/*
 * How far down each list the value found so far came from: a later variable
 * wins only above it. torch elastic's own (RANK, LOCAL_RANK, WORLD_SIZE, with
 * its TORCHELASTIC_RUN_ID) are kept aside: a torchrun under collrun gives its
 * workers those over the COLL_RANK they inherit, which is the node's.
 */
struct stack_env_best {
	int rank, local, size, group, step;
	int t_rank, t_local, t_size;
};

/*
 * A small /proc file whole, at most len - 1 bytes; the length, or -1. Always
 * the host's own /proc, never a fixture root: the pids read here are the ones
 * that are then traced.
 */
ssize_t
stack__read_file(const char *path, char *buf, size_t len)
{
	return plat_file_read(NULL, path, buf, len);
}

static int
stack_parse_int(const char *s, size_t len, int *out)
{
	long v = 0;

	if (len == 0 || len > 9)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = (int)v;
	return 0;
}

static void
stack_copy_value(char *dst, size_t len, const char *v, size_t vlen)
{
	if (vlen >= len)
		vlen = len - 1;
	memcpy(dst, v, vlen);
	dst[vlen] = '\0';
}

/* Is NAME (nl bytes) in list above *best? Its value as a number into *out then. */
static int
stack_env_int(const char *const *list, const char *e, size_t nl, const char *v, size_t vl,
    int *best, int *out)
{
	int x;

	for (int i = 0; list[i] != NULL && i < *best; i++)
		if (strlen(list[i]) == nl && memcmp(e, list[i], nl) == 0 &&
		    stack_parse_int(v, vl, &x) == 0 && x < STACK_RANK_MAX) {
			*best = i;
			*out = x;
			return 1;
		}
	return 0;
}

/* The numbers that say who the process is. */
static void
stack_env_ident(struct stack_pinfo *pi, const char *e, size_t nl, const char *v, size_t vl,
    struct stack_env_best *b)
{
	int skip = 1 << 30;

	if (nl == 4 && memcmp(e, "RANK", 4) == 0)
		(void)stack_env_int(stack_rank_vars + 1, e, nl, v, vl, &skip, &b->t_rank);
	else if (nl == 10 && memcmp(e, "LOCAL_RANK", 10) == 0)
		(void)stack_env_int(stack_local_vars + 1, e, nl, v, vl, &skip, &b->t_local);
	else if (nl == 10 && memcmp(e, "WORLD_SIZE", 10) == 0)
		(void)stack_env_int(stack_size_vars + 1, e, nl, v, vl, &skip, &b->t_size);
	if (stack_env_int(stack_rank_vars, e, nl, v, vl, &b->rank, &pi->rank))
		stack_copy_value(pi->rank_var, sizeof pi->rank_var, e, nl);
	else if (!stack_env_int(stack_local_vars, e, nl, v, vl, &b->local, &pi->local_rank) &&
	    !stack_env_int(stack_size_vars, e, nl, v, vl, &b->size, &pi->size) &&
	    !stack_env_int(stack_group_vars, e, nl, v, vl, &b->group, &pi->group_rank))
		(void)stack_env_int(stack_step_vars, e, nl, v, vl, &b->step, &pi->slurm_step);
}

/* One NAME=value of the environment. */
static void
stack_env_var(struct stack_pinfo *pi, const char *e, size_t len, struct stack_env_best *b)
{
	const char *eq = memchr(e, '=', len);
	size_t nl, vl;

	if (eq == NULL)
		return;
	nl = (size_t)(eq - e);
	vl = len - nl - 1;
	stack_env_ident(pi, e, nl, eq + 1, vl, b);
	if (nl == 10 && memcmp(e, "COLL_JOBID", 10) == 0)
		stack_copy_value(pi->jobid, sizeof pi->jobid, eq + 1, vl);
	else if (nl == 15 && memcmp(e, "COLL_STATUS_DIR", 15) == 0)
		stack_copy_value(pi->status_dir, sizeof pi->status_dir, eq + 1, vl);
	else if (nl == 12 && memcmp(e, "SLURM_JOB_ID", 12) == 0)
		stack_copy_value(pi->slurm_job, sizeof pi->slurm_job, eq + 1, vl);
	else if (nl == 19 && memcmp(e, "TORCHELASTIC_RUN_ID", 19) == 0)
		stack_copy_value(pi->run_id, sizeof pi->run_id, eq + 1, vl);
	/* PyTorch's newer names win over the older ones it still reads. */
	else if (nl == 29 && memcmp(e, "TORCH_FR_DEBUG_INFO_PIPE_FILE", 29) == 0)
		stack_copy_value(pi->fr_pipe, sizeof pi->fr_pipe, eq + 1, vl);
	else if (nl == 31 && memcmp(e, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", 31) == 0 &&
	    pi->fr_pipe[0] == '\0')
		stack_copy_value(pi->fr_pipe, sizeof pi->fr_pipe, eq + 1, vl);
	else if (nl == 23 && memcmp(e, "TORCH_FR_DUMP_TEMP_FILE", 23) == 0)
		stack_copy_value(pi->fr_file, sizeof pi->fr_file, eq + 1, vl);
	else if (nl == 31 && memcmp(e, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", 31) == 0 &&
	    pi->fr_file[0] == '\0')
		stack_copy_value(pi->fr_file, sizeof pi->fr_file, eq + 1, vl);
	else if (nl == 20 && memcmp(e, "TORCH_FR_BUFFER_SIZE", 20) == 0)
		pi->fr_buffer_new = stack_parse_int(eq + 1, vl, &pi->fr_buffer) == 0;
	else if (nl == 28 && memcmp(e, "TORCH_NCCL_TRACE_BUFFER_SIZE", 28) == 0 &&
	    !pi->fr_buffer_new)
		(void)stack_parse_int(eq + 1, vl, &pi->fr_buffer);
	if (pi->fr_buffer < -1)
		pi->fr_buffer = 0;
}

static void
stack_pinfo_env(struct stack_pinfo *pi, size_t max)
{
	char path[64], *buf = xmalloc(max);
	ssize_t n;
	struct stack_env_best best = { 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, -1, -1, -1 };

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pi->pid);
	n = stack__read_file(path, buf, max);
	pi->env_read = n >= 0;
	for (ssize_t i = 0; i < n;) {
		size_t l = strnlen(buf + i, (size_t)(n - i));

		stack_env_var(pi, buf + i, l, &best);
		i += (ssize_t)l + 1;
	}
	free(buf);
	if (pi->run_id[0] != '\0' && best.t_rank >= 0) {
		pi->rank = best.t_rank;
		snprintf(pi->rank_var, sizeof pi->rank_var, "RANK");
		pi->local_rank = best.t_local >= 0 ? best.t_local : pi->local_rank;
		pi->size = best.t_size >= 0 ? best.t_size : pi->size;
	}
}

/* A main thread that exited leaves the process 'Z' while its other threads run. */
static char
stack_live_state(char state, int nthreads)
{
	return state == 'Z' && nthreads > 1 ? 'S' : state;
}

static int
stack_status_threads(const char *buf)
{
	const char *p = strstr(buf, "\nThreads:");
	int t = 0;

	return p != NULL && sscanf(p + 9, "%d", &t) == 1 ? t : 0;
}

static void
stack_pinfo_status(struct stack_pinfo *pi)
{
	char path[64], buf[4096], *p;
	unsigned r, u;
	int t;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pi->pid);
	if (stack__read_file(path, buf, sizeof buf) < 0)
		return;
	if ((p = strstr(buf, "\nUid:")) != NULL && sscanf(p + 5, "%u %u", &r, &u) == 2) {
		pi->ruid = r;
		pi->uid = u;	/* the effective uid: what ptrace compares */
	}
	if ((p = strstr(buf, "\nTracerPid:")) != NULL && sscanf(p + 11, "%d", &t) == 1)
		pi->tracer = t;
	pi->nthreads = stack_status_threads(buf);
	snprintf(path, sizeof path, "/proc/%d/syscall", (int)pi->pid);
	if (stack__read_file(path, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9')
		pi->syscall = strtol(buf, NULL, 10);
}

static void
stack_pinfo_cmdline(struct stack_pinfo *pi)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pi->pid);
	n = stack__read_file(path, pi->cmdline, sizeof pi->cmdline);
	for (ssize_t i = 0; i < n; i++)
		if (pi->cmdline[i] == '\0' || !isprint((unsigned char)pi->cmdline[i]))
			pi->cmdline[i] = ' ';
	while (n > 0 && pi->cmdline[n - 1] == ' ')
		pi->cmdline[--n] = '\0';
}

/* State, parent and name from /proc/PID/stat ("pid (comm) S ppid ..."). */
int
stack__stat(const char *path, char *state, pid_t *ppid, char *comm, size_t commlen)
{
	char buf[1024], *l, *r;
	int pp = 0;

	if (stack__read_file(path, buf, sizeof buf) <= 0)
		return COLL_ENOTFOUND;
	if ((l = strchr(buf, '(')) == NULL || (r = strrchr(buf, ')')) == NULL || r < l ||
	    sscanf(r + 1, " %c %d", state, &pp) != 2)
		return COLL_EPROTO;
	if (comm != NULL)
		stack_copy_value(comm, commlen, l + 1, (size_t)(r - l - 1));
	if (ppid != NULL)
		*ppid = pp;
	return COLL_OK;
}

static uint64_t
stack_ns_inode(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

uint64_t
stack_self_uts(void)
{
	return stack_ns_inode("/proc/self/ns/uts");
}

char
stack_state(pid_t pid, pid_t *ppid)
{
	char path[64], buf[4096], state = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (stack__stat(path, &state, ppid, NULL, 0) != COLL_OK)
		return 0;
	if (state != 'Z')
		return state;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	return stack__read_file(path, buf, sizeof buf) < 0 ? state :
	    stack_live_state(state, stack_status_threads(buf));
}

int
stack_pinfo_read(pid_t pid, struct stack_pinfo *pi)
{
	return stack_pinfo_read_of(pid, (uid_t)-1, pi);
}

int
stack_pinfo_read_of(pid_t pid, uid_t owner, struct stack_pinfo *pi)
{
	char path[64];
	int r;

	memset(pi, 0, sizeof *pi);
	pi->pid = pid;
	pi->rank = pi->local_rank = pi->group_rank = pi->slurm_step = -1;
	pi->fr_buffer = -1;
	pi->uid = pi->ruid = (uid_t)-1;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((r = stack__stat(path, &pi->state, &pi->ppid, pi->comm, sizeof pi->comm)) != COLL_OK) {
		pi->state = 0;
		return r;
	}
	pi->syscall = -1;
	stack_pinfo_status(pi);
	pi->state = stack_live_state(pi->state, pi->nthreads);
	stack_pinfo_cmdline(pi);
	/*
	 * Another user's environment is read only far enough to say what it
	 * claims: thousands of a stranger's processes with megabytes each
	 * would otherwise cost a reader of every process seconds.
	 */
	stack_pinfo_env(pi, owner == (uid_t)-1 || (pi->uid == owner && pi->ruid == owner) ?
	    STACK_ENV_MAX : STACK_ENV_STRANGER_MAX);
	snprintf(path, sizeof path, "/proc/%d/ns/uts", (int)pid);
	pi->uts_ns = stack_ns_inode(path);
	return COLL_OK;
}

static int
stack_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int
stack__list_ids(const char *dir, pid_t **out)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0, cap = 64, v;

	*out = xcalloc((size_t)cap, sizeof **out);
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (stack_parse_int(de->d_name, strlen(de->d_name), &v) != 0 || v <= 0)
			continue;
		if (n == cap) {
			cap *= 2;
			*out = xreallocarray(*out, (size_t)cap, sizeof **out);
		}
		(*out)[n++] = v;
	}
	closedir(d);
	qsort(*out, (size_t)n, sizeof **out, stack_pid_cmp);
	return n;
}

int
stack_pids(pid_t **out)
{
	int n = stack__list_ids("/proc", out);

	return n < 0 ? COLL_ESYS : n;
}
