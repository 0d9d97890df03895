/*
 * Why ptrace refused, and what to do about it: another user's process, a
 * debugger already attached, Yama's ptrace_scope, a container without
 * CAP_SYS_PTRACE, or a process that is not dumpable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stack.h"
#include "stack_impl.h"

/* Has this process CAP_SYS_PTRACE (bit 19) in its effective set? */
static int
stack_cap_ptrace(void)
{
	char buf[4096], *p;
	unsigned long long cap = 0;

	if (stack__read_file("/proc/self/status", buf, sizeof buf) <= 0 ||
	    (p = strstr(buf, "\nCapEff:")) == NULL || sscanf(p + 8, "%llx", &cap) != 1)
		return 0;
	return (cap >> 19) & 1;
}

static int
stack_yama(void)
{
	char buf[16];

	if (stack__read_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf);
}

/*
 * What lets a process without CAP_SYS_PTRACE trace under Yama: root, unless
 * it is root already (a container that dropped the capability).
 */
static const char *
stack_perm_fix(int yama)
{
	if (geteuid() == 0)
		return "this process lacks CAP_SYS_PTRACE (a container?): run it with that "
		    "capability, e.g. docker run --cap-add=SYS_PTRACE";
	return yama == 2 ? "run collstack as root" :
	    "run collstack as root, or sysctl kernel.yama.ptrace_scope=0";
}

void
stack_perm_why(pid_t pid, int err, char *buf, size_t len)
{
	struct stack_pinfo pi;
	int yama = stack_yama(), cap = stack_cap_ptrace();

	if (err != EPERM) {
		snprintf(buf, len, "cannot trace pid %d: %s", (int)pid, strerror(err));
		return;
	}
	if (stack_pinfo_read(pid, &pi) != 0)
		snprintf(buf, len, "pid %d is gone", (int)pid);
	else if (pi.tracer > 0)
		snprintf(buf, len, "pid %d is already traced by pid %d: detach that debugger "
		    "(gdb, strace, py-spy) and run again", (int)pid, (int)pi.tracer);
	else if (yama == 3)
		snprintf(buf, len, "ptrace is disabled on this host until reboot "
		    "(kernel.yama.ptrace_scope=3)");
	else if (pi.uid != geteuid() && geteuid() != 0)
		snprintf(buf, len, "pid %d belongs to uid %u: run collstack as that user or as "
		    "root", (int)pid, (unsigned)pi.uid);
	else if (cap)
		/* Root (or a tracer with the capability): "run as root" would send it in a circle. */
		snprintf(buf, len, "ptrace of pid %d was refused though collstack %s "
		    "CAP_SYS_PTRACE: the kernel or a security module (SELinux, AppArmor, a "
		    "sandbox) forbids tracing it", (int)pid, geteuid() == 0 ? "runs as root with" :
		    "has");
	else if (yama == 2 || yama == 1)
		snprintf(buf, len, "kernel.yama.ptrace_scope=%d lets only %s: %s", yama,
		    yama == 2 ? "a process with CAP_SYS_PTRACE trace" :
		    "a parent trace its children", stack_perm_fix(yama));
	else if (geteuid() == 0)
		snprintf(buf, len, "this process lacks CAP_SYS_PTRACE (a container?): run it "
		    "with that capability, e.g. docker run --cap-add=SYS_PTRACE");
	else
		snprintf(buf, len, "ptrace of pid %d was refused (not dumpable, or a security "
		    "module): run collstack as root", (int)pid);
}

const char *
stack_syscall_name(long nr)
{
	static const struct { long nr; const char *name; } t[] = {
#define S(x) { SYS_##x, #x }
		S(read), S(write), S(close), S(ioctl), S(futex), S(nanosleep), S(clock_nanosleep),
		S(ppoll), S(pselect6), S(epoll_pwait), S(wait4), S(waitid), S(accept4),
		S(recvfrom), S(sendto), S(recvmsg), S(sendmsg), S(connect), S(openat), S(readv),
		S(writev), S(rt_sigtimedwait), S(rt_sigsuspend), S(sched_yield), S(exit_group),
		S(io_getevents), S(msgrcv), S(semtimedop), S(restart_syscall),
#if defined(__x86_64__)
		S(poll), S(select), S(epoll_wait), S(pause), S(accept), S(rt_sigreturn),
#endif
#undef S
	};

	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		if (t[i].nr == nr)
			return t[i].name;
	return NULL;
}
