/*
 * Stacks of live processes, for collstack: find the processes (proc.c), take
 * one consistent snapshot of every thread of a process (snap.c: all threads
 * stopped together through ptrace, registers and the live part of each stack
 * copied, then resumed at once, so the process pauses for well under a
 * millisecond per thread), unwind the copies with elfutils' libdwfl
 * (unwind.c), name the frames with a symbol cache shared by the processes of
 * a host, which usually run the same binaries (sym.c), and merge stacks into
 * a prefix tree labelled by rank sets (tree.c, rankset.c).
 *
 * The tracer is PTRACE_SEIZE: nothing is sent to the process, a process that
 * was stopped stays stopped, and if we die mid-snapshot the kernel detaches
 * us and the process runs on.
 */
#ifndef COLL_STACK_H
#define COLL_STACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rankset.h"

#define STACK_MAX_FRAMES 256
#define STACK_RANK_MAX RANKSET_MAX

/* A process as /proc shows it. */
struct stack_pinfo {
	pid_t pid, ppid;
	uid_t uid;		/* effective: what ptrace compares */
	uid_t ruid;		/* real: who started it (a setuid program keeps its caller's) */
	char state;		/* /proc state letter (R S D T t Z X); 0: gone */
	char comm[16];
	char cmdline[256];	/* arguments joined by spaces, cut short */
	/*
	 * Who it is in its job, from the variables its launcher set (proc.c
	 * says which win): its rank in the world, its rank on its node, its
	 * node's rank (torchrun's GROUP_RANK), the world's size.
	 */
	int rank;		/* -1: none there */
	char rank_var[24];	/* the variable that gave it */
	int local_rank;		/* -1: none */
	int group_rank;		/* -1: none */
	int size;		/* 0: none */
	char jobid[24];		/* COLL_JOBID; "" none */
	char slurm_job[24];	/* SLURM_JOB_ID; "" none */
	int slurm_step;		/* SLURM_STEP_ID; -1 none */
	char run_id[40];	/* TORCHELASTIC_RUN_ID: torchrun's rendezvous; "" none */
	char status_dir[256];	/* COLL_STATUS_DIR; "" none */
	/* PyTorch's flight recorder: where it takes dump requests and writes dumps; "" none. */
	char fr_pipe[256];	/* TORCH_FR_DEBUG_INFO_PIPE_FILE or TORCH_NCCL_DEBUG_INFO_PIPE_FILE */
	char fr_file[256];	/* TORCH_FR_DUMP_TEMP_FILE or TORCH_NCCL_DEBUG_INFO_TEMP_FILE */
	int fr_buffer;		/* TORCH_FR_BUFFER_SIZE or TORCH_NCCL_TRACE_BUFFER_SIZE; 0 off;
				   -1 unset: PyTorch's default, on in 2.11 (tests/gpu/README.md) */
	int fr_buffer_new;	/* it came from TORCH_FR_BUFFER_SIZE, which wins */
	uint64_t uts_ns;	/* inode of its UTS namespace: which host it belongs to */
	pid_t tracer;		/* TracerPid: another debugger attached */
	int nthreads;
	long syscall;		/* the main thread's system call; -1 none or unknown */
	int env_read;		/* its environment could be read */
};

/* Read pid's facts; COLL_ENOTFOUND if it is gone. */
int stack_pinfo_read(pid_t pid, struct stack_pinfo *pi);
/* The same, reading the environment of a process not owner's (real and effective) only in part. */
int stack_pinfo_read_of(pid_t pid, uid_t owner, struct stack_pinfo *pi);
/* pid's state letter (a process whose main thread alone exited is not 'Z'); 0: gone. */
char stack_state(pid_t pid, pid_t *ppid);
/* Every pid under /proc, ascending; the count or a negative error. */
int stack_pids(pid_t **out);
/* Inode of this process's UTS namespace (0 if unknown). */
uint64_t stack_self_uts(void);
/*
 * launcher.c: is pi a launcher or agent that starts ranks without being one
 * (torchrun or torch.distributed.run/launch, mpirun/mpiexec/orterun/orted,
 * prterun/prted, hydra, srun/slurmstepd, deepspeed, accelerate launch,
 * collrun, collcheck)? Its short name ("torchrun", "mpirun"), or NULL. From
 * its command line, name and /proc/PID/exe: anyone can take such a name, so
 * it may only keep a process out of the ranks, never make one trusted.
 */
const char *stack_launcher_name(const struct stack_pinfo *pi);

/* What a frame is: machine code, a function inlined into it, or a Python function. */
#define STACK_FRAME_NATIVE 0
#define STACK_FRAME_INLINED 1
#define STACK_FRAME_PYTHON 2	/* func: qualified name, file: script base name, module: its path */

struct stack_frame {
	const char *func;	/* NULL: no symbol (then module+offset) */
	const char *file;	/* base name of the source file; NULL: no line */
	const char *module;	/* base name of the module; NULL: not in one */
	int line;
	uint64_t offset;	/* pc - the module's load address */
	int kind;		/* STACK_FRAME_*: native, inlined into the next (outer) frame, Python */
};

struct stack_thread {
	pid_t tid;
	char name[16];
	char state;		/* /proc state letter before the snapshot */
	char wchan[48];		/* kernel function it sleeps in; "" unknown */
	long syscall;		/* the system call it is in; -1: none or unknown */
	int stopped;		/* it was in the snapshot */
	int nframes;
	struct stack_frame *frames;	/* innermost first */
	char err[96];		/* why it has no stack */
};

struct stack_proc {
	pid_t pid;
	int nthreads;
	struct stack_thread *threads;
	double pause_ms;	/* first thread stopped to last resumed */
	int err;		/* COLL_OK, or why nothing was read (see why) */
	char why[256];		/* the cause and what to do */
	char note[384];		/* read, but something is missing (frames of a Python we cannot read) */
};

struct stack_opts {
	int max_frames;		/* per thread, up to STACK_MAX_FRAMES */
	int stop_wait_ms;	/* how long a thread may take to stop (D state) */
	int hold_ms;		/* tests: keep the process stopped this long */
	/*
	 * Per process, from its first read to its last name (0: 10 s): past it
	 * the files it names are not scanned further and its frames not
	 * named, so that a hostile process costs its own time, no one else's.
	 */
	int budget_ms;
	/* stack_read_many: a process not begun by then (clock_now_ns) is not read; 0: none. */
	uint64_t deadline_ns;
};

/* The symbol cache of a host: shared by threads, freed with every name it gave. */
struct stack_syms;
struct stack_syms *stack_syms_new(void);
void stack_syms_free(struct stack_syms *s);
/* Cache lookups and misses so far. */
void stack_syms_stats(struct stack_syms *s, uint64_t *hits, uint64_t *misses);

/* Snapshot, unwind and name every thread of pid. */
int stack_read(struct stack_syms *s, pid_t pid, const struct stack_opts *o, struct stack_proc *out);
/* stack_read over n processes, nthreads at a time. */
void stack_read_many(struct stack_syms *s, const pid_t *pids, int n, int nthreads,
    const struct stack_opts *o, struct stack_proc *out);
void stack_proc_free(struct stack_proc *p);
/* Why ptrace(2) refused pid (errno err): the cause and the fix, in one line. */
void stack_perm_why(pid_t pid, int err, char *buf, size_t len);
/* Name of a system call of this architecture ("futex"); NULL if not known. */
const char *stack_syscall_name(long nr);

/* The merged tree: the root's children are outermost frames. */
struct stack_node {
	char *func, *file, *module;
	int line;		/* -1: the ranks here are at different lines */
	uint64_t offset;	/* where func is NULL */
	int kind;		/* STACK_FRAME_* */
	struct rankset ranks;
	uint32_t threads;	/* threads through this frame */
	int nkids, capkids;
	struct stack_node **kids;
};

#define STACK_TREE_MAX_NODES (1 << 22)

void stack_tree_init(struct stack_node *root);
void stack_tree_free(struct stack_node *root);
/*
 * Add one thread's stack under rank; a thread that was not stopped, or is
 * in a system call, gets a last frame saying so.
 */
void stack_tree_add(struct stack_node *root, int rank, const struct stack_thread *t);
/* Merge src into dst; src is emptied. */
void stack_tree_merge(struct stack_node *dst, struct stack_node *src);
/* The tree as text lines, preorder; malloc'ed, *len without the NUL. */
char *stack_tree_pack(const struct stack_node *root, size_t *len);
/* Read stack_tree_pack's text into an empty tree; COLL_EPROTO with err on bad input. */
int stack_tree_parse(struct stack_node *root, const char *buf, size_t len, char *err,
    size_t errlen);
/* The label of a frame: "func" or "module+0x1f". */
void stack_node_name(const struct stack_node *n, char *buf, size_t len);

#endif
