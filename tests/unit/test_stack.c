/*
 * The stack module on a real process (tests/stack/stack_target.c: threads
 * blocked in a mutex, a condition variable, read on a pipe, nanosleep, one
 * spinning, main in pause): every thread is found with its name, its own
 * function, the source line, the inlined frame and the system call it waits
 * in; a running process runs on after the snapshot and a stopped one stays
 * stopped; a process that is gone or a zombie is said to be so. Rank sets
 * fold and parse, and the tree packs and parses back to the same text,
 * refusing malformed lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "stack.h"
#include "stack_elf.h"
#include "stack_impl.h"

static pid_t target_pid;

/* Start the target and wait for its "ready" line. */
static pid_t
target_start(const char *path)
{
	int fd[2];
	char buf[64] = "";
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Dies with the test, even one a failed assertion cut short. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd[1], 1);
		close(fd[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_true(strncmp(buf, "ready", 5) == 0);
	return pid;
}

static void
target_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static char
proc_state(pid_t pid)
{
	struct stack_pinfo pi;

	return stack_pinfo_read(pid, &pi) == COLL_OK ? pi.state : 0;
}

static const struct stack_thread *
thread_named(const struct stack_proc *p, const char *name)
{
	for (int i = 0; i < p->nthreads; i++)
		if (strcmp(p->threads[i].name, name) == 0)
			return &p->threads[i];
	fail_msg("no thread named %s", name);
	return NULL;
}

/* The index of func in t's frames, or -1. */
static int
frame_of(const struct stack_thread *t, const char *func)
{
	for (int i = 0; i < t->nframes; i++)
		if (t->frames[i].func != NULL && strcmp(t->frames[i].func, func) == 0)
			return i;
	return -1;
}

static void
expect_in(const struct stack_thread *t, const char *func, const char *syscall)
{
	int i = frame_of(t, func);

	if (i < 0)
		fail_msg("thread %s has no frame %s", t->name, func);
	assert_true(t->stopped);
	assert_string_equal(t->frames[i].file, "stack_target.c");
	assert_true(t->frames[i].line > 0);
	assert_string_equal(t->frames[i].module, "stack_target");
	assert_true(frame_of(t, "main") < 0 || strcmp(t->name, "stack_target") == 0);
	if (syscall != NULL)
		assert_string_equal(stack_syscall_name(t->syscall), syscall);
}

static void
test_stack_threads(void **state)
{
	struct stack_syms *sy = stack_syms_new();
	struct stack_opts o = { 0 };
	struct stack_proc p;
	const struct stack_thread *t;
	int nap;

	(void)state;
	target_pid = target_start(STACK_TARGET);
	assert_int_equal(stack_read(sy, target_pid, &o, &p), COLL_OK);
	assert_int_equal(p.nthreads, 6);
	expect_in(thread_named(&p, "t-mutex"), "target_mutex_wait", "futex");
	expect_in(thread_named(&p, "t-cond"), "target_cond_wait", "futex");
	expect_in(thread_named(&p, "t-read"), "target_pipe_read", "read");
	expect_in(thread_named(&p, "t-spin"), "target_spin", NULL);
	assert_int_equal(thread_named(&p, "t-spin")->frames[0].func[0], 't');	/* innermost */
	expect_in(thread_named(&p, "stack_target"), "main", NULL);
	/* target_nap is inlined into target_sleep: two frames, one pc. */
	t = thread_named(&p, "t-sleep");
	expect_in(t, "target_sleep", NULL);
	nap = frame_of(t, "target_nap");
	assert_true(nap >= 0);
	assert_int_equal(t->frames[nap].kind, STACK_FRAME_INLINED);
	assert_int_equal(frame_of(t, "target_sleep"), nap + 1);
	assert_int_equal(t->frames[nap].offset, t->frames[nap + 1].offset);
	assert_true(p.pause_ms >= 0);
	stack_proc_free(&p);
	/* It runs on: not left in a trace stop. */
	assert_true(proc_state(target_pid) != 't' && proc_state(target_pid) != 'T');
	target_stop(target_pid);
	stack_syms_free(sy);
}

/* A second read of the same binary finds its names in the cache. */
static void
test_stack_cache(void **state)
{
	struct stack_syms *sy = stack_syms_new();
	struct stack_opts o = { 0 };
	struct stack_proc p;
	uint64_t h1, m1, h2, m2;
	pid_t a = target_start(STACK_TARGET), b = target_start(STACK_TARGET);

	(void)state;
	assert_int_equal(stack_read(sy, a, &o, &p), COLL_OK);
	stack_proc_free(&p);
	stack_syms_stats(sy, &h1, &m1);
	assert_int_equal(stack_read(sy, b, &o, &p), COLL_OK);
	stack_syms_stats(sy, &h2, &m2);
	assert_true(m1 > 0);
	assert_true(h2 - h1 > m2 - m1);	/* mostly hits */
	expect_in(thread_named(&p, "t-read"), "target_pipe_read", "read");
	stack_proc_free(&p);
	target_stop(a);
	target_stop(b);
	stack_syms_free(sy);
}

static void
test_stack_stopped(void **state)
{
	struct stack_syms *sy = stack_syms_new();
	struct stack_opts o = { 0 };
	struct stack_proc p;
	pid_t pid = target_start(STACK_TARGET);
	int st;

	(void)state;
	kill(pid, SIGSTOP);
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_int_equal(stack_read(sy, pid, &o, &p), COLL_OK);
	expect_in(thread_named(&p, "t-read"), "target_pipe_read", NULL);
	stack_proc_free(&p);
	/* Still stopped, as it was: SIGCONT is the user's to send. */
	assert_int_equal(proc_state(pid), 'T');
	target_stop(pid);
	stack_syms_free(sy);
}

static void
test_stack_gone(void **state)
{
	struct stack_syms *sy = stack_syms_new();
	struct stack_opts o = { 0 };
	struct stack_proc p;
	pid_t z = fork();

	(void)state;
	if (z == 0)
		_exit(0);
	/* A zombie: exited, not yet reaped. */
	while (proc_state(z) != 'Z')
		usleep(1000);
	assert_int_not_equal(stack_read(sy, z, &o, &p), COLL_OK);
	assert_non_null(strstr(p.why, "zombie"));
	stack_proc_free(&p);
	waitpid(z, NULL, 0);
	assert_int_equal(stack_read(sy, z, &o, &p), COLL_ENOTFOUND);
	assert_non_null(strstr(p.why, "gone"));
	stack_proc_free(&p);
	stack_syms_free(sy);
}

static void
test_stack_rankset(void **state)
{
	struct rankset s = { 0 }, u = { 0 };
	char buf[64];
	int order[] = { 5, 0, 1, 3, 2, 9, 7, 8 };

	(void)state;
	for (size_t i = 0; i < sizeof order / sizeof *order; i++)
		rankset_add(&s, order[i]);
	rankset_fold(&s, buf, sizeof buf);
	assert_string_equal(buf, "0-3,5,7-9");
	assert_int_equal(rankset_count(&s), 8);
	assert_true(rankset_has(&s, 8));
	assert_false(rankset_has(&s, 4));
	assert_int_equal(rankset_parse(&u, "4,6", 3), COLL_OK);
	rankset_union(&s, &u);
	rankset_fold(&s, buf, sizeof buf);
	assert_string_equal(buf, "0-9");
	rankset_free(&u);
	assert_int_equal(rankset_parse(&u, "3,1", 3), COLL_EPROTO);
	rankset_free(&u);
	assert_int_equal(rankset_parse(&u, "1,2", 3), COLL_EPROTO);	/* not folded */
	rankset_free(&u);
	assert_int_equal(rankset_parse(&u, "5-2", 3), COLL_EPROTO);
	rankset_free(&u);
	assert_int_equal(rankset_parse(&u, "99999999", 8), COLL_EPROTO);
	rankset_free(&u);
	assert_int_equal(rankset_parse(&u, "1,", 2), COLL_EPROTO);
	rankset_free(&u);
	rankset_free(&s);
}

static struct stack_frame f_main = { "main", "a.c", "prog", 10, 0x10, 0 };
static struct stack_frame f_wait = { "wait_all", "a.c", "prog", 20, 0x20, 0 };
static struct stack_frame f_work = { "work", "b.c", "prog", 30, 0x30, 0 };

static void
test_stack_tree(void **state)
{
	struct stack_frame s1[] = { f_wait, f_main }, s2[] = { f_work, f_main };
	struct stack_thread t1 = { .stopped = 1, .nframes = 2, .frames = s1, .syscall = -1 };
	struct stack_thread t2 = { .stopped = 1, .nframes = 2, .frames = s2, .syscall = 202 };
	struct stack_node a, b, c;
	char *pa, *pc, err[128];
	size_t la, lc;

	(void)state;
	stack_tree_init(&a);
	stack_tree_init(&b);
	for (int r = 0; r < 4; r++)
		stack_tree_add(r < 2 ? &a : &b, r, r == 2 ? &t2 : &t1);
	stack_tree_merge(&a, &b);
	assert_int_equal(a.nkids, 1);
	assert_string_equal(a.kids[0]->func, "main");
	assert_int_equal(rankset_count(&a.kids[0]->ranks), 4);
	assert_int_equal(a.kids[0]->nkids, 2);
	pa = stack_tree_pack(&a, &la);
	assert_non_null(strstr(pa, "0 4 0 10 10 0-3\tmain\ta.c\tprog\n"));
	assert_non_null(strstr(pa, "1 3 0 20 20 0-1,3\twait_all\ta.c\tprog\n"));
	stack_tree_init(&c);
	assert_int_equal(stack_tree_parse(&c, pa, la, err, sizeof err), COLL_OK);
	pc = stack_tree_pack(&c, &lc);
	assert_string_equal(pa, pc);
	free(pc);
	stack_tree_free(&c);
	free(pa);
	stack_tree_free(&a);
	stack_tree_free(&b);
}

static void
test_stack_tree_bad(void **state)
{
	static const char *const bad[] = {
		"1 1 0 1 0 0\tf\t\tm\n",		/* depth jumps */
		"0 0 0 1 0 0\tf\t\tm\n",		/* no threads */
		"0 1 0 1 0 2,1\tf\t\tm\n",		/* ranks not ascending */
		"0 1 0 1 0 0\tf\t\tm",			/* no newline */
		"0 1 0 1 0 0\tf\tm\n",			/* a field short */
		"0 1 0 1 0 0\t\t\t\n",			/* no name at all */
		"0 1 0 1 0 0\tf\x1b[2J\t\tm\n",		/* a control byte */
		"0 1 3 1 0 0\tf\t\tm\n",		/* kind is 0, 1 or 2 */
		"0 99999999999 0 1 0 0\tf\t\tm\n",	/* too many digits */
		"0 1 0 1 0 0\tf\t\tm\n0 1 0 1 0 1\tf\t\tm\n",	/* the same frame twice */
	};
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct stack_node t;

		stack_tree_init(&t);
		if (stack_tree_parse(&t, bad[i], strlen(bad[i]), err, sizeof err) != COLL_EPROTO)
			fail_msg("accepted bad tree %zu", i);
		stack_tree_free(&t);
	}
}

/*
 * A frame in no module (what a thread caught being born unwinds to) and a
 * stack deeper than the packed form: the tree packs, and the pack parses.
 */
static void
test_stack_tree_odd(void **state)
{
	struct stack_frame nomod = { NULL, NULL, NULL, -5, 0x7f0000000b7f, 0 };
	struct stack_frame s1[] = { nomod, f_main };
	struct stack_frame *deep = calloc(5000, sizeof *deep);
	struct stack_thread t1 = { .stopped = 1, .nframes = 2, .frames = s1, .syscall = -1 };
	struct stack_thread t2 = { .stopped = 1, .nframes = 5000, .frames = deep, .syscall = 7 };
	struct stack_node a, c;
	char *pa, err[128];
	size_t la;

	(void)state;
	for (int i = 0; i < 5000; i++)
		deep[i] = (struct stack_frame){ .module = "m", .offset = (uint64_t)i };
	stack_tree_init(&a);
	stack_tree_add(&a, 0, &t1);
	stack_tree_add(&a, 1, &t2);
	pa = stack_tree_pack(&a, &la);
	assert_non_null(strstr(pa, "1 1 0 0 7f0000000b7f 0\t\t\t?\n"));
	stack_tree_init(&c);
	if (stack_tree_parse(&c, pa, la, err, sizeof err) != COLL_OK)
		fail_msg("%s", err);
	stack_tree_free(&c);
	free(pa);
	stack_tree_free(&a);
	free(deep);
}

/* An ELF header, nsym symbol tables over its first 64 KiB (the last past its end if far). */
static void
stack_test_elf(const char *path, int nsym, int far)
{
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
		ELFDATA2LSB, EV_CURRENT }, .e_type = ET_DYN, .e_machine = EM_X86_64,
		.e_version = EV_CURRENT, .e_shoff = 4096, .e_ehsize = sizeof eh,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (Elf64_Half)(nsym + 1) };
	Elf64_Shdr sh = { .sh_type = SHT_SYMTAB, .sh_size = 65520, .sh_entsize = 24,
		.sh_addralign = 8 }, zero = { 0 };
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(&eh, sizeof eh, 1, f), 1);
	assert_int_equal(fseek(f, 4096, SEEK_SET), 0);
	assert_int_equal(fwrite(&zero, sizeof zero, 1, f), 1);
	for (int i = 0; i < nsym; i++) {
		sh.sh_offset = far && i == nsym - 1 ? 1u << 30 : 0;
		assert_int_equal(fwrite(&sh, sizeof sh, 1, f), 1);
	}
	assert_int_equal(ftruncate(fileno(f), 4096 + 64 * (nsym + 1) > 65536 ?
	    4096 + 64 * (nsym + 1) : 65536), 0);
	fclose(f);
}

/* One ELF through stack__elf_open and stack__elf_begin: NULL when refused, with why. */
static int
stack_test_elf_ok(const char *path, char *why, size_t len)
{
	int fd = stack__elf_open(getpid(), path, why, len);
	Elf *e = fd == -1 ? NULL : stack__elf_begin(fd, getpid(), path, why, len);

	if (e != NULL)
		elf_end(e);
	if (fd != -1)
		close(fd);
	return e != NULL;
}

/* What a target names is opened without blocking, and only a bounded ELF is used. */
static void
test_stack_elf_refused(void **state)
{
	char dir[] = "/tmp/test_stack.XXXXXX", path[128], why[384] = "";
	uint64_t t0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/libpython3.11.so (deleted)", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	t0 = clock_now_ns();
	assert_int_equal(stack__elf_open(getpid(), path, why, sizeof why), -1);
	assert_true(clock_now_ns() - t0 < 1000000000u);
	assert_non_null(strstr(why, "is a FIFO, not a regular file: not read"));
	assert_non_null(strstr(why, "libpython3.11.so (deleted)'"));
	unlink(path);
	snprintf(path, sizeof path, "%s/many.so", dir);
	stack_test_elf(path, 1000, 0);
	assert_false(stack_test_elf_ok(path, why, sizeof why));
	assert_non_null(strstr(why, "many.so' has more symbol tables than a linker writes"));
	stack_test_elf(path, 8, 0);
	assert_false(stack_test_elf_ok(path, why, sizeof why));
	assert_non_null(strstr(why, "many.so' has more symbol tables than a linker writes"));
	stack_test_elf(path, 2, 1);
	assert_false(stack_test_elf_ok(path, why, sizeof why));
	assert_non_null(strstr(why, "has a section past its end"));
	stack_test_elf(path, 2, 0);
	assert_true(stack_test_elf_ok(path, why, sizeof why));
	unlink(path);
	assert_true(stack_test_elf_ok(STACK_TARGET, why, sizeof why));
	rmdir(dir);
}

/* A small file at dir/rel, mode mode, made with the directories above it. */
static void
stack_test_put(const char *dir, const char *rel, mode_t mode)
{
	char path[512];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0755) == 0)
			assert_int_equal(chmod(path, 0755), 0);	/* whatever the umask */
		*p = '/';
	}
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1);
	assert_int_equal(write(fd, "debug", 5), 5);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* stack__unwind_debug with root dir/debug and build id ab cd id2: found (its path checked) or not. */
static bool
stack_test_debug(const char *dir, unsigned char id2, const char *file, const char *link,
    const char *want)
{
	unsigned char id[] = { 0xab, 0xcd, id2 };
	char root[256], path[8192] = "", end[256];
	int fd;

	snprintf(root, sizeof root, "%s/debug", dir);
	fd = stack__unwind_debug(root, geteuid(), id, 3, file, link, path, sizeof path);
	if (fd == -1)
		return false;
	close(fd);
	snprintf(end, sizeof end, "%s", want);
	assert_true(strlen(path) >= strlen(end));
	assert_string_equal(path + strlen(path) - strlen(end), end);
	return true;
}

/*
 * Separate debug files: a build-id entry that is a link into the debug
 * tree (Fedora's) is taken, one linking out of it, or to a file anybody may
 * write, or another user's, is not; a debug link next to the caller's own
 * module is taken, next to a module in a directory anybody may write is not.
 */
static void
test_stack_debug_lookup(void **state)
{
	char dir[] = "/tmp/test_stack.XXXXXX", p[512], q[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	stack_test_put(dir, "debug/usr/lib/libx.so.debug", 0644);
	stack_test_put(dir, "debug/usr/lib/ww.debug", 0666);
	stack_test_put(dir, "outside.debug", 0644);
	stack_test_put(dir, "debug/.build-id/ab/cd00.debug", 0644);
	snprintf(p, sizeof p, "%s/debug/.build-id/ab/cd01.debug", dir);
	assert_int_equal(symlink("../../usr/lib/libx.so.debug", p), 0);
	snprintf(p, sizeof p, "%s/debug/.build-id/ab/cd02.debug", dir);
	snprintf(q, sizeof q, "%s/outside.debug", dir);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof p, "%s/debug/.build-id/ab/cd03.debug", dir);
	assert_int_equal(symlink("../../usr/lib/ww.debug", p), 0);
	assert_true(stack_test_debug(dir, 0, NULL, NULL, "/debug/.build-id/ab/cd00.debug"));
	assert_true(stack_test_debug(dir, 1, NULL, NULL, "/debug/.build-id/ab/cd01.debug"));
	assert_false(stack_test_debug(dir, 2, NULL, NULL, ""));
	assert_false(stack_test_debug(dir, 3, NULL, NULL, ""));
	assert_true(stack_test_debug(dir, 9, "/usr/lib/libx.so", "libx.so.debug",
	    "/debug/usr/lib/libx.so.debug"));
	if (geteuid() == 0) {
		snprintf(p, sizeof p, "%s/debug/usr/lib/libx.so.debug", dir);
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_false(stack_test_debug(dir, 1, NULL, NULL, ""));
	}
	/* Next to the module: its own .debug/, taken; refused once others may write there. */
	stack_test_put(dir, "venv/lib/libm.so", 0755);
	stack_test_put(dir, "venv/lib/.debug/libm.so.debug", 0644);
	snprintf(p, sizeof p, "%s/venv/lib/libm.so", dir);
	assert_true(stack_test_debug(dir, 9, p, "libm.so.debug", "/venv/lib/.debug/libm.so.debug"));
	snprintf(q, sizeof q, "%s/venv/lib/.debug", dir);
	assert_int_equal(chmod(q, 0777), 0);
	assert_false(stack_test_debug(dir, 9, p, "libm.so.debug", ""));
	assert_int_equal(chmod(q, 0755), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_false(stack_test_debug(dir, 9, p, "libm.so.debug", ""));
	}
	snprintf(p, sizeof p, "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

/* The caller's own file and root's are mapped; another user's, or one others may write, is not. */
static void
test_stack_elf_mmap(void **state)
{
	struct stat st = { .st_uid = 1000, .st_mode = S_IFREG | 0755 };

	(void)state;
	assert_int_equal(stack__elf_cmd(&st, 1000), ELF_C_READ_MMAP);
	assert_int_equal(stack__elf_cmd(&st, 0), ELF_C_READ);
	assert_int_equal(stack__elf_cmd(&st, 1001), ELF_C_READ);
	st.st_uid = 0;
	assert_int_equal(stack__elf_cmd(&st, 1000), ELF_C_READ_MMAP);
	st.st_mode = S_IFREG | 0777;
	assert_int_equal(stack__elf_cmd(&st, 0), ELF_C_READ);
	st.st_uid = 1000;
	st.st_mode = S_IFREG | 0775;
	assert_int_equal(stack__elf_cmd(&st, 1000), ELF_C_READ);
}

/* Is pid's command name comm (its exec done)? */
static int
is_comm(pid_t pid, const char *comm)
{
	char path[64], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return strcmp(buf, comm) == 0;
}

/* Whose environment names the dump pipe twice: the one read, whichever comes first. */
static void
pipe_of(char *const envp[], const char *want)
{
	struct stack_pinfo pi;
	char buf[16] = "";
	int fd[2];
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fd), 0);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd[1], 1);
		close(fd[0]);
		execle("/bin/sh", "sh", "-c", "echo ready; exec sleep 30", (char *)NULL, envp);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	assert_non_null(fgets(buf, sizeof buf, f));	/* its environment is the one given */
	fclose(f);
	/* Read once sh has become sleep: mid-exec, /proc/PID/environ can read empty. */
	for (int i = 0; i < 5000 && !is_comm(pid, "sleep"); i++)
		usleep(1000);
	assert_int_equal(stack_pinfo_read(pid, &pi), COLL_OK);
	assert_string_equal(pi.fr_pipe, want);
	target_stop(pid);
}

/* PyTorch reads TORCH_FR_DEBUG_INFO_PIPE_FILE first, TORCH_NCCL_DEBUG_INFO_PIPE_FILE as fallback. */
static void
test_stack_fr_pipe_names(void **state)
{
	char *newer_last[] = { "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/old_",
		"TORCH_FR_DEBUG_INFO_PIPE_FILE=/new_", NULL };
	char *newer_first[] = { "TORCH_FR_DEBUG_INFO_PIPE_FILE=/new_",
		"TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/old_", NULL };
	char *older_only[] = { "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/old_", NULL };

	(void)state;
	pipe_of(newer_last, "/new_");
	pipe_of(newer_first, "/new_");
	pipe_of(older_only, "/old_");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_threads),
		cmocka_unit_test(test_stack_cache),
		cmocka_unit_test(test_stack_stopped),
		cmocka_unit_test(test_stack_gone),
		cmocka_unit_test(test_stack_rankset),
		cmocka_unit_test(test_stack_tree),
		cmocka_unit_test(test_stack_tree_bad),
		cmocka_unit_test(test_stack_tree_odd),
		cmocka_unit_test(test_stack_elf_refused),
		cmocka_unit_test(test_stack_debug_lookup),
		cmocka_unit_test(test_stack_elf_mmap),
		cmocka_unit_test(test_stack_fr_pipe_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
