/*
 * Launchers and agents: the processes that start a job's ranks and wait for
 * them (torchrun's elastic agent, mpirun and its daemons, Slurm's srun and
 * slurmstepd, DeepSpeed's and Accelerate's launchers, coll's own). They carry
 * a job's variables without being one of its ranks, so a tool that takes
 * them as ranks loses every rank's number and may blame a launcher, which is
 * never in a collective.
 *
 * A process is known by the program it runs: its name (comm, argv[0]), or,
 * for a Python launcher, the script or module Python was given (torchrun is
 * "python3 /usr/bin/torchrun", or "python -m torch.distributed.run"), and the
 * file /proc/PID/exe names. A name is anyone's to choose: this only ever
 * takes a process out of the ranks, it never makes one trusted.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stack.h"

struct stack_launcher {
	const char *prog;	/* the program's base name, or a Python module */
	const char *name;	/* what it is shown as */
	int sub;		/* it launches only with a "launch" subcommand */
};

/* Programs; a name also stands for NAME.suffix and NAME-suffix (mpirun.openmpi, slurmstepd-wlm). */
static const struct stack_launcher stack_launchers[] = {
	{ "torchrun", "torchrun", 0 },
	{ "mpirun", "mpirun", 0 },
	{ "mpiexec", "mpiexec", 0 },
	{ "orterun", "mpirun", 0 },
	{ "prterun", "mpirun", 0 },
	{ "orted", "orted", 0 },
	{ "prted", "prted", 0 },
	{ "prte", "prte", 0 },
	{ "hydra_pmi_proxy", "hydra_pmi_proxy", 0 },
	{ "srun", "srun", 0 },
	{ "slurmstepd", "slurmstepd", 0 },
	{ "deepspeed", "deepspeed", 0 },
	{ "accelerate-launch", "accelerate", 0 },
	{ "accelerate", "accelerate", 1 },
	{ "collrun", "collrun", 0 },
	{ "collcheck", "collcheck", 0 },
};

/* Python modules run with -m. */
static const struct stack_launcher stack_py_launchers[] = {
	{ "torch.distributed.run", "torchrun", 0 },
	{ "torch.distributed.launch", "torchrun", 0 },
	{ "deepspeed.launcher.launch", "deepspeed", 0 },
	{ "deepspeed.launcher.runner", "deepspeed", 0 },
	{ "accelerate.commands.launch", "accelerate", 0 },
	{ "accelerate.commands.accelerate_cli", "accelerate", 1 },
};

#define STACK_NLAUNCHERS (sizeof stack_launchers / sizeof *stack_launchers)
#define STACK_NPY_LAUNCHERS (sizeof stack_py_launchers / sizeof *stack_py_launchers)

/* Is word (len bytes) prog, or prog followed by '.' or '-' and a suffix? */
static int
stack_launcher_is(const char *word, size_t len, const char *prog)
{
	size_t n = strlen(prog);

	return len >= n && memcmp(word, prog, n) == 0 &&
	    (len == n || word[n] == '.' || word[n] == '-');
}

/* The next space-separated word of s from *pos; its length, 0 at the end. */
static size_t
stack_launcher_word(const char *s, size_t *pos, const char **word)
{
	size_t p = *pos, n;

	while (s[p] == ' ')
		p++;
	*word = s + p;
	for (n = 0; s[p + n] != '\0' && s[p + n] != ' '; n++)
		;
	*pos = p + n;
	return n;
}

/* The base name of a path word. */
static void
stack_launcher_base(const char **word, size_t *len)
{
	for (size_t i = *len; i > 0; i--)
		if ((*word)[i - 1] == '/') {
			*word += i;
			*len -= i;
			return;
		}
}

/* Is the next word of the command line, after pos, "launch"? */
static int
stack_launcher_sub(const char *cmdline, size_t pos)
{
	const char *w;
	size_t n = stack_launcher_word(cmdline, &pos, &w);

	return n == 6 && memcmp(w, "launch", 6) == 0;
}

static const char *
stack_launcher_prog(const char *word, size_t len, const char *cmdline, size_t pos)
{
	stack_launcher_base(&word, &len);
	for (size_t i = 0; i < STACK_NLAUNCHERS; i++)
		if (stack_launcher_is(word, len, stack_launchers[i].prog) &&
		    (!stack_launchers[i].sub || stack_launcher_sub(cmdline, pos)))
			return stack_launchers[i].name;
	return NULL;
}

static const char *
stack_launcher_module(const char *word, size_t len, const char *cmdline, size_t pos)
{
	for (size_t i = 0; i < STACK_NPY_LAUNCHERS; i++)
		if (strlen(stack_py_launchers[i].prog) == len &&
		    memcmp(word, stack_py_launchers[i].prog, len) == 0 &&
		    (!stack_py_launchers[i].sub || stack_launcher_sub(cmdline, pos)))
			return stack_py_launchers[i].name;
	return NULL;
}

static int
stack_launcher_python(const char *word, size_t len)
{
	stack_launcher_base(&word, &len);
	return len >= 6 && memcmp(word, "python", 6) == 0;
}

/*
 * What Python was asked to run: "-m MODULE" or a script. Options before it
 * are skipped; -X and -W take a value, -c runs code (no launcher).
 */
static const char *
stack_launcher_py_args(const char *cmdline, size_t pos)
{
	const char *w;
	size_t n;

	while ((n = stack_launcher_word(cmdline, &pos, &w)) > 0) {
		if (w[0] != '-')
			return stack_launcher_prog(w, n, cmdline, pos);
		if (n >= 2 && w[1] == 'm') {
			if (n > 2)
				return stack_launcher_module(w + 2, n - 2, cmdline, pos);
			n = stack_launcher_word(cmdline, &pos, &w);
			return n > 0 ? stack_launcher_module(w, n, cmdline, pos) : NULL;
		}
		if (n == 2 && w[1] == 'c')
			return NULL;
		if (n == 2 && (w[1] == 'X' || w[1] == 'W'))
			(void)stack_launcher_word(cmdline, &pos, &w);
	}
	return NULL;
}

/* From the command line: argv[0], or what the Python in argv[0] runs. */
static const char *
stack_launcher_cmdline(const char *cmdline)
{
	const char *w;
	size_t pos = 0, n = stack_launcher_word(cmdline, &pos, &w);

	if (n == 0)
		return NULL;
	if (stack_launcher_python(w, n))
		return stack_launcher_py_args(cmdline, pos);
	return stack_launcher_prog(w, n, cmdline, pos);
}

/* From the file the process runs (a binary launcher started through a link of another name). */
static const char *
stack_launcher_exe(const struct stack_pinfo *pi)
{
	char path[64], exe[512];
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/exe", (int)pi->pid);
	if ((n = readlink(path, exe, sizeof exe - 1)) <= 0)
		return NULL;
	exe[n] = '\0';
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';
	return stack_launcher_prog(exe, strlen(exe), "", 0);
}

static const char *
stack_launcher_any(const struct stack_pinfo *pi)
{
	const char *name;

	if ((name = stack_launcher_cmdline(pi->cmdline)) != NULL)
		return name;
	/* A process whose command line is empty or rewritten: its name, then its file. */
	if ((name = stack_launcher_prog(pi->comm, strnlen(pi->comm, sizeof pi->comm), "", 0)) !=
	    NULL)
		return name;
	return pi->pid > 0 ? stack_launcher_exe(pi) : NULL;
}

const char *
stack_launcher_name(const struct stack_pinfo *pi)
{
	const char *name;

	if (pi->state == 0 && pi->cmdline[0] == '\0' && pi->comm[0] == '\0')
		return NULL;	/* nothing known of it (a pid that is gone) */
	name = stack_launcher_any(pi);
	/*
	 * collcheck is a rank of a job collrun (or a collcheck) started, and
	 * launches only its own: what coll gave a rank, COLL_RANK, says which.
	 */
	if (name != NULL && strcmp(name, "collcheck") == 0 && strcmp(pi->rank_var, "COLL_RANK") == 0)
		return NULL;
	return name;
}
