/*
 * Launchers are known by their command line and name: torchrun as a script
 * or as python -m torch.distributed.run, Open MPI's and MPICH's launchers and
 * daemons under their Debian names, Slurm's, DeepSpeed's, Accelerate's and
 * coll's; a rank's own command line (python train.py, a program called run)
 * is none, nor is accelerate without "launch". A process's identity comes
 * from the launcher nearest it: torchrun's RANK over srun's SLURM_PROCID,
 * Open MPI's rank over a Slurm allocation's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"

#include "stack.h"

static const char *
launcher_of(const char *comm, const char *cmdline)
{
	struct stack_pinfo pi;

	memset(&pi, 0, sizeof pi);
	pi.pid = -1;		/* no /proc/PID/exe to read */
	pi.state = 'S';
	snprintf(pi.comm, sizeof pi.comm, "%s", comm);
	snprintf(pi.cmdline, sizeof pi.cmdline, "%s", cmdline);
	return stack_launcher_name(&pi);
}

static void
expect(const char *comm, const char *cmdline, const char *name)
{
	const char *got = launcher_of(comm, cmdline);

	if (name == NULL && got != NULL)
		fail_msg("'%s' (%s) taken as launcher %s", cmdline, comm, got);
	if (name != NULL && (got == NULL || strcmp(got, name) != 0))
		fail_msg("'%s' (%s): %s, not %s", cmdline, comm, got ? got : "none", name);
}

static void
test_launcher_torch(void **state)
{
	(void)state;
	expect("torchrun", "/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 4 t.py",
	    "torchrun");
	expect("python3", "python3 -m torch.distributed.run --nproc_per_node=4 t.py", "torchrun");
	expect("python3", "/usr/bin/python3.11 -u -X faulthandler -m torch.distributed.launch t.py",
	    "torchrun");
	expect("python", "python -mtorch.distributed.run t.py", "torchrun");
	expect("pt_main_thread", "/usr/bin/python3 -u t.py --local-rank 0", NULL);
	expect("python3", "python3 -m torch.distributed.runner", NULL);
	expect("python3", "python3 -c import torch.distributed.run", NULL);
	expect("python3", "python3 run.py", NULL);
}

static void
test_launcher_mpi(void **state)
{
	(void)state;
	expect("mpirun", "mpirun -np 4 --oversubscribe ./a.out", "mpirun");
	expect("mpirun", "mpirun.openmpi -np 4 a.out", "mpirun");
	expect("orterun", "", "mpirun");
	expect("prterun", "prterun -np 2 a.out", "mpirun");
	expect("orted", "orted -mca ess env", "orted");
	expect("prted", "prted --prtemca ess", "prted");
	expect("mpiexec.hydra", "/usr/bin/mpiexec.hydra -n 4 ./a.out", "mpiexec");
	expect("hydra_pmi_proxy", "/usr/bin/hydra_pmi_proxy --control-port h:1", "hydra_pmi_proxy");
	expect("a.out", "./a.out", NULL);
}

static void
test_launcher_others(void **state)
{
	struct stack_pinfo pi = { .pid = -1, .state = 'S', .comm = "collcheck",
		.cmdline = "collcheck allreduce -b 8", .rank = 1, .rank_var = "COLL_RANK" };

	(void)state;
	assert_null(stack_launcher_name(&pi));	/* a rank of collrun's job */
	expect("srun", "srun -N2 torchrun t.py", "srun");
	expect("slurmstepd", "slurmstepd: [12.0]", "slurmstepd");
	expect("deepspeed", "/usr/bin/python3 /usr/local/bin/deepspeed t.py", "deepspeed");
	expect("python3", "python3 -u -m deepspeed.launcher.launch --world_info=x t.py",
	    "deepspeed");
	expect("accelerate", "/usr/bin/python3 /usr/local/bin/accelerate launch t.py",
	    "accelerate");
	expect("accelerate", "/usr/bin/python3 /usr/local/bin/accelerate config", NULL);
	expect("collrun", "collrun --agent 3 -- ./a.out", "collrun");
	expect("collcheck", "collcheck -n 4", "collcheck");
	expect("sh", "sh -c ./a.out", NULL);
	expect("", "", NULL);
}

/* A process with this environment, read as collstack reads it. */
static void
ident_of(char *const *env, struct stack_pinfo *pi)
{
	char *const argv[] = { "sleep", "30", NULL };
	int fd[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fd[0]);	/* the read end sees EOF at the exec */
		fcntl(fd[1], F_SETFD, FD_CLOEXEC);
		execve("/bin/sleep", argv, env);
		_exit(127);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &c, 1), 0);
	close(fd[0]);
	assert_int_equal(stack_pinfo_read(pid, pi), COLL_OK);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void
test_launcher_ident(void **state)
{
	char *const torch[] = { "SLURM_PROCID=1", "SLURM_LOCALID=0", "SLURM_NTASKS=2",
		"SLURM_JOB_ID=77", "SLURM_STEP_ID=3", "RANK=6", "LOCAL_RANK=2", "GROUP_RANK=1",
		"WORLD_SIZE=8", "TORCHELASTIC_RUN_ID=run-9", NULL };
	char *const ompi[] = { "SLURM_PROCID=0", "SLURM_NTASKS=1", "OMPI_COMM_WORLD_RANK=3",
		"OMPI_COMM_WORLD_LOCAL_RANK=3", "OMPI_COMM_WORLD_SIZE=4", NULL };
	char *const pmix[] = { "PMIX_RANK=5", "PMI_SIZE=6", NULL };
	/* torchrun under collrun: the workers inherit the node's COLL_RANK. */
	char *const nested[] = { "COLL_RANK=1", "COLL_SIZE=2", "COLL_LOCAL_RANK=0", "RANK=5",
		"LOCAL_RANK=1", "WORLD_SIZE=8", "TORCHELASTIC_RUN_ID=x", NULL };
	struct stack_pinfo pi;

	(void)state;
	ident_of(torch, &pi);
	assert_int_equal(pi.rank, 6);
	assert_string_equal(pi.rank_var, "RANK");
	assert_int_equal(pi.local_rank, 2);
	assert_int_equal(pi.group_rank, 1);
	assert_int_equal(pi.size, 8);
	assert_int_equal(pi.slurm_step, 3);
	assert_string_equal(pi.slurm_job, "77");
	assert_string_equal(pi.run_id, "run-9");
	ident_of(ompi, &pi);
	assert_int_equal(pi.rank, 3);
	assert_string_equal(pi.rank_var, "OMPI_COMM_WORLD_RANK");
	assert_int_equal(pi.local_rank, 3);
	assert_int_equal(pi.size, 4);
	assert_int_equal(pi.group_rank, -1);
	ident_of(pmix, &pi);
	assert_int_equal(pi.rank, 5);
	assert_int_equal(pi.size, 6);
	assert_int_equal(pi.local_rank, -1);
	ident_of(nested, &pi);
	assert_int_equal(pi.rank, 5);
	assert_string_equal(pi.rank_var, "RANK");
	assert_int_equal(pi.local_rank, 1);
	assert_int_equal(pi.size, 8);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launcher_torch),
		cmocka_unit_test(test_launcher_mpi),
		cmocka_unit_test(test_launcher_others),
		cmocka_unit_test(test_launcher_ident),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
