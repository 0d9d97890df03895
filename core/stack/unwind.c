/*
 * Unwind a snapshot with libdwfl, after the process was resumed: the
 * modules come from /proc/PID/maps, the call frame information from each
 * module's ELF, the registers from the snapshot, and stack memory from the
 * copy taken while the thread was stopped (anything outside the copy is
 * read from the live process, which is rarely needed and may have moved on).
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "stack.h"
#include "stack_elf.h"
#include "stack_impl.h"
#include "stack_sym.h"
#include "xmalloc.h"

struct stack_uw {
	struct stack_snap *s;
	char *note;		/* the process's note: the first file refused goes there */
	size_t notelen;
	int next;		/* next_thread's position */
	struct stack_snap_thread *cur;	/* the thread being unwound */
	uint64_t pcs[STACK_MAX_FRAMES];
	int npc, max;
};

/*
 * The unwind this thread runs: libdwfl's callbacks get no argument of ours,
 * and each reading thread unwinds one process at a time.
 */
static __thread struct stack_uw *stack_uw_self;

/* Keep the first refusal of a file for the process's note. */
static void
stack_uw_refused(const char *why)
{
	struct stack_uw *u = stack_uw_self;

	if (u != NULL && u->note[0] == '\0' && why[0] != '\0')
		snprintf(u->note, u->notelen, "%s", why);
}

/*
 * The module's ELF, opened through stack__elf_open instead of libdwfl's own
 * (which opens the name in maps blocking, and believes what it finds). A
 * name in maps ending " (deleted)" is not the file mapped, whatever is there
 * now: libdwfl reads that image from the process's memory, as it does the
 * vDSO's, when handed a name that is not a path.
 */
static int
stack_uw_find_elf(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base,
    char **file_name, Elf **elfp)
{
	struct stack_uw *u = stack_uw_self;
	const char *del = strstr(name, " (deleted)");
	char why[384] = "", mem[48];
	int fd;

	if (u == NULL || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, ud, name, base, file_name, elfp);
	if (del != NULL && del[10] == '\0') {
		snprintf(mem, sizeof mem, "[vdso: %d]", (int)u->s->pid);
		return dwfl_linux_proc_find_elf(mod, ud, mem, base, file_name, elfp);
	}
	if ((fd = stack__elf_open(u->s->pid, name, why, sizeof why)) == -1 ||
	    (*elfp = stack__elf_begin(fd, u->s->pid, name, why, sizeof why)) == NULL) {
		stack_uw_refused(why);
		if (fd != -1)
			close(fd);
		return -1;
	}
	*file_name = xstrdup(name);
	return fd;
}

/* fd is of type, belongs to owner or root, and nobody else may write it. */
static bool
stack_uw_trusted(int fd, mode_t type, uid_t owner)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == type &&
	    (st.st_uid == owner || st.st_uid == 0) && (st.st_mode & 022) == 0;
}

/* The directory dir, if trusted (see stack_uw_trusted); -1 if not. */
static int
stack_uw_dir(const char *dir, uid_t owner)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd != -1 && !stack_uw_trusted(fd, S_IFDIR, owner)) {
		close(fd);
		fd = -1;
		errno = EPERM;
	}
	return fd;
}

/* One component of a walk opened under dfd (closed), trusted; -1 keeps open's errno. */
static int
stack_uw_step(int dfd, const char *name, bool last, uid_t owner)
{
	int fd = openat(dfd, name, last ? O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
	    O_CLOEXEC : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = errno;

	close(dfd);
	if (fd != -1 && !stack_uw_trusted(fd, last ? S_IFREG : S_IFDIR, owner)) {
		close(fd);
		fd = -1;
		e = EPERM;
	}
	errno = e;
	return fd;
}

/*
 * The file rel under the directory dfd (closed), one component at a time,
 * following no link, every directory and the file trusted: nobody but
 * owner and root can change any of it between the check and the read.
 * -1 with errno ELOOP where a component is a symbolic link.
 */
static int
stack_uw_walk(int dfd, const char *rel, uid_t owner)
{
	char comp[256];
	size_t n;

	while (dfd != -1) {
		while (*rel == '/')
			rel++;
		n = strcspn(rel, "/");
		if (n == 0 || n >= sizeof comp || strncmp(rel, ".", n) == 0 ||
		    strncmp(rel, "..", n) == 0) {
			close(dfd);
			errno = EINVAL;
			return -1;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		rel += n;
		dfd = stack_uw_step(dfd, comp, *rel == '\0', owner);
		if (*rel == '\0')
			return dfd;
	}
	return -1;
}

/*
 * rel under the debug root: a regular file, or a symbolic link (Fedora's
 * and RHEL's .build-id entries link into the tree) whose resolved target
 * lies under the root too; walked as stack_uw_walk does both ways.
 */
static int
stack_uw_debug_open(const char *root, uid_t owner, const char *rel)
{
	char full[4096], real[PATH_MAX], rroot[PATH_MAX];
	int fd = stack_uw_walk(stack_uw_dir(root, owner), rel, owner);
	size_t n;

	if (fd != -1 || errno != ELOOP)
		return fd;
	if ((size_t)snprintf(full, sizeof full, "%s/%s", root, rel) >= sizeof full ||
	    realpath(full, real) == NULL || realpath(root, rroot) == NULL)
		return -1;
	n = strlen(rroot);
	if (strncmp(real, rroot, n) != 0 || real[n] != '/')
		return -1;
	return stack_uw_walk(stack_uw_dir(rroot, owner), real + n + 1, owner);
}

/*
 * The debug link next to the module, then in .debug/ there, as gdb looks:
 * only where the module, its directory and the debug file are ours or
 * root's and nobody else may write them (a user's own venv, for that user;
 * never a file another user could swap in for root to read).
 */
static int
stack_uw_debug_near(const char *file_name, const char *link, char *path, size_t len)
{
	const char *base = strrchr(file_name, '/') + 1;
	char dir[4096], rel[4096];
	struct stat st;
	int dfd, fd = -1;

	snprintf(dir, sizeof dir, "%.*s", (int)(base - file_name), file_name);
	if ((dfd = stack_uw_dir(dir, geteuid())) == -1)
		return -1;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_uid == geteuid() || st.st_uid == 0) && (st.st_mode & 022) == 0 &&
	    strcmp(base, link) != 0) {
		snprintf(rel, sizeof rel, "%s", link);
		if ((fd = stack_uw_walk(dup(dfd), rel, geteuid())) == -1) {
			snprintf(rel, sizeof rel, ".debug/%s", link);
			fd = stack_uw_walk(dup(dfd), rel, geteuid());
		}
	}
	close(dfd);
	if (fd != -1)
		snprintf(path, len, "%s%s", dir, rel);
	return fd;
}

int
stack__unwind_debug(const char *root, uid_t owner, const unsigned char *id, int n,
    const char *file_name, const char *link, char *path, size_t len)
{
	char rel[4096];
	int fd = -1, at;

	if (n > 1 && n <= 64) {
		at = snprintf(rel, sizeof rel, ".build-id/%02x/", id[0]);
		for (int i = 1; i < n; i++)
			at += snprintf(rel + at, sizeof rel - (size_t)at, "%02x", id[i]);
		snprintf(rel + at, sizeof rel - (size_t)at, ".debug");
		fd = stack_uw_debug_open(root, owner, rel);
	}
	if (fd != -1 || link == NULL || link[0] == '\0' || strchr(link, '/') != NULL ||
	    file_name == NULL || file_name[0] != '/' || strlen(file_name) >= 2048)
		goto out;
	if ((fd = stack_uw_debug_near(file_name, link, path, len)) != -1)
		return fd;
	snprintf(rel, sizeof rel, "%.*s%s", (int)(strrchr(file_name, '/') - file_name),
	    file_name + 1, link);
	fd = stack_uw_debug_open(root, owner, rel);
out:
	if (fd != -1)
		snprintf(path, len, "%s/%s", root, rel);
	return fd;
}

/*
 * Separate debug information: by build id under /usr/lib/debug, by the
 * module's debug link next to the module (when the module is ours or
 * root's) and under /usr/lib/debug; see stack__unwind_debug. libdwfl's
 * standard search believes whatever it finds next to the module, and asks
 * debuginfod servers (the network, for as long as they take): neither on a
 * target's behalf.
 */
static int
stack_uw_find_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base,
    const char *file_name, const char *link, GElf_Word crc, char **debuginfo_file_name)
{
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	char path[8192];
	int n = dwfl_module_build_id(mod, &id, &vaddr), fd;

	(void)ud;
	(void)modname;
	(void)base;
	(void)crc;
	fd = stack__unwind_debug(STACK_DEBUG_ROOT, 0, id, n, file_name, link, path, sizeof path);
	if (fd != -1)
		*debuginfo_file_name = xstrdup(path);
	return fd;
}

static const Dwfl_Callbacks stack_dwfl_cb = {
	.find_elf = stack_uw_find_elf,
	.find_debuginfo = stack_uw_find_debuginfo,
};

static pid_t
stack_uw_next(Dwfl *dwfl, void *arg, void **targ)
{
	struct stack_uw *u = arg;

	(void)dwfl;
	while (u->next < u->s->n && !u->s->t[u->next].have_regs)
		u->next++;
	if (u->next >= u->s->n)
		return 0;
	*targ = &u->s->t[u->next];
	return u->s->t[u->next++].tid;
}

static bool
stack_uw_get(Dwfl *dwfl, pid_t tid, void *arg, void **targ)
{
	struct stack_uw *u = arg;

	(void)dwfl;
	for (int i = 0; i < u->s->n; i++)
		if (u->s->t[i].tid == tid && u->s->t[i].have_regs) {
			*targ = &u->s->t[i];
			return true;
		}
	return false;
}

static bool
stack_uw_mem(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct stack_uw *u = arg;
	struct stack_snap_thread *t = u->cur;
	struct iovec local = { result, sizeof *result }, remote;

	(void)dwfl;
	/* addr comes from the target's registers and stack: no sum that can wrap. */
	if (t != NULL && t->stk != NULL && addr >= t->stk_lo && t->stk_len >= sizeof *result &&
	    addr - t->stk_lo <= t->stk_len - sizeof *result) {
		memcpy(result, t->stk + (addr - t->stk_lo), sizeof *result);
		return true;
	}
	remote = (struct iovec){ (void *)(uintptr_t)addr, sizeof *result };
	return process_vm_readv(u->s->pid, &local, 1, &remote, 1, 0) == sizeof *result;
}

static bool
stack_uw_regs(Dwfl_Thread *thread, void *targ)
{
	struct stack_snap_thread *t = targ;
	Dwarf_Word regs[STACK_NREGS];

	for (int i = 0; i < STACK_NREGS; i++)
		regs[i] = t->regs[i];
#if defined(__x86_64__)
	return dwfl_thread_state_registers(thread, 0, 17, regs);
#else
	if (!dwfl_thread_state_registers(thread, 0, 32, regs))
		return false;
	dwfl_thread_state_register_pc(thread, t->pc);
	return true;
#endif
}

static int
stack_uw_count(Dwfl_Module *m, void **ud, const char *name, Dwarf_Addr start, void *arg)
{
	(void)m;
	(void)ud;
	(void)name;
	(void)start;
	++*(int *)arg;
	return DWARF_CB_OK;
}

static const Dwfl_Thread_Callbacks stack_thread_cb = {
	.next_thread = stack_uw_next,
	.get_thread = stack_uw_get,
	.memory_read = stack_uw_mem,
	.set_initial_registers = stack_uw_regs,
};

static int
stack_uw_frame(Dwfl_Frame *state, void *arg)
{
	struct stack_uw *u = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act) || clock_now_ns() > u->s->deadline_ns)
		return DWARF_CB_ABORT;
	/* A return address points past the call: look up the call itself. */
	u->pcs[u->npc++] = act ? pc : pc - 1;
	return u->npc >= u->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static struct stack_thread *
stack_uw_thread(struct stack_proc *p, pid_t tid)
{
	for (int i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

/* Frames of one thread, named through the cache. */
static void
stack_uw_one(struct stack_syms *sy, Dwfl *dwfl, struct stack_uw *u, struct stack_thread *th)
{
	struct stack_frame f[STACK_SYM_INLINE_MAX];
	int cap;

	u->npc = 0;
	if (dwfl_getthread_frames(dwfl, th->tid, stack_uw_frame, u) != 0 && u->npc == 0) {
		snprintf(th->err, sizeof th->err, "cannot unwind: %s", dwfl_errmsg(-1));
		return;
	}
	cap = u->npc + 8;
	th->frames = xcalloc((size_t)cap, sizeof *th->frames);
	for (int i = 0; i < u->npc; i++) {
		/* Past the process's time: the rest are named by address alone. */
		int n = stack__sym(sy, clock_now_ns() > u->s->deadline_ns ? NULL :
		    dwfl_addrmodule(dwfl, u->pcs[i]), u->pcs[i], f, STACK_SYM_INLINE_MAX);

		if (th->nframes + n > cap) {
			cap = (th->nframes + n) * 2;
			th->frames = xreallocarray(th->frames, (size_t)cap, sizeof *th->frames);
		}
		for (int k = 0; k < n; k++)
			th->frames[th->nframes++] = f[k];
	}
}

int
stack__unwind(struct stack_syms *sy, struct stack_snap *s, struct stack_proc *p,
    const struct stack_opts *o)
{
	struct stack_uw *u = xcalloc(1, sizeof *u);
	Dwfl *dwfl = dwfl_begin(&stack_dwfl_cb);
	int r = COLL_OK, nmod = 0, rep;

	u->s = s;
	u->note = p->note;
	u->notelen = sizeof p->note;
	stack_uw_self = u;
	u->max = o->max_frames > 0 && o->max_frames < STACK_MAX_FRAMES ? o->max_frames :
	    STACK_MAX_FRAMES;
	dwfl_report_begin(dwfl);
	rep = dwfl_linux_proc_report(dwfl, s->pid);
	/* Its /proc entry gone (ENOENT, ESRCH) counts as no modules: it ended. */
	if (rep == 0 && dwfl_report_end(dwfl, NULL, NULL) == 0) {
		(void)dwfl_getmodules(dwfl, stack_uw_count, &nmod, 0);
	} else if (rep != ENOENT && rep != ESRCH) {
		snprintf(p->why, sizeof p->why, "cannot read the modules of pid %d: %s",
		    (int)s->pid, rep > 0 ? strerror(rep) : dwfl_errmsg(-1));
		r = COLL_EPROTO;
		goto out;
	}
	if (nmod == 0) {
		/* No mappings left: its address space went away, it ended while we read it. */
		snprintf(p->why, sizeof p->why, "pid %d ended while its stacks were read",
		    (int)s->pid);
		r = COLL_ENOTFOUND;
		goto out;
	}
	if (!dwfl_attach_state(dwfl, NULL, s->pid, &stack_thread_cb, u)) {
		snprintf(p->why, sizeof p->why, "cannot unwind pid %d: %s", (int)s->pid,
		    dwfl_errmsg(-1));
		r = COLL_EPROTO;
		goto out;
	}
	for (int i = 0; i < s->n; i++) {
		struct stack_thread *th = stack_uw_thread(p, s->t[i].tid);

		if (!s->t[i].have_regs || th == NULL)
			continue;
		u->cur = &s->t[i];
		stack_uw_one(sy, dwfl, u, th);
	}
	if (clock_now_ns() > s->deadline_ns && p->note[0] == '\0')
		snprintf(p->note, sizeof p->note, "pid %d ran past its time for naming frames: "
		    "some are addresses only", (int)s->pid);
out:
	dwfl_end(dwfl);
	stack_uw_self = NULL;
	free(u);
	return r;
}
