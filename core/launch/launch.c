/* The launcher front: pick the backend, and build what every backend gives a rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "launch.h"
#include "xmalloc.h"

/* As execvp finds it: an executable file, not a directory that is searchable. */
static int
launch_runnable(const char *path)
{
	struct stat sb;

	return access(path, X_OK) == 0 && stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

int
launch_resolve(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(prog, '/') != NULL) {
		snprintf(out, len, "%s", prog);
		return launch_runnable(out) ? COLL_OK : COLL_ENOTFOUND;
	}
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		snprintf(out, len, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", prog);
		if (prog[0] != '\0' && launch_runnable(out))
			return COLL_OK;
	}
	return COLL_ENOTFOUND;
}

/* Local rank: position among the ranks of the same host, in rank order. */
void
launch_place(const struct launch_opts *o, int rank, int *lrank, int *lsize)
{
	int host = o->rank_host ? o->rank_host[rank] : 0;

	*lrank = *lsize = 0;
	for (int r = 0; r < o->nranks; r++) {
		if ((o->rank_host ? o->rank_host[r] : 0) != host)
			continue;
		if (r < rank)
			(*lrank)++;
		(*lsize)++;
	}
}

/* Does one of the n variables of env have the name of var ("NAME=value")? */
static int
launch_env_has(char *const *env, int n, const char *var)
{
	size_t len = strcspn(var, "=");

	for (int i = 0; i < n; i++)
		if (strncmp(env[i], var, len) == 0 && env[i][len] == '=')
			return 1;
	return 0;
}

char **
launch_env_vars(const struct launch_opts *o, int rank, int lrank, int lsize, const char *uidstr)
{
	int host = o->rank_host ? o->rank_host[rank] : 0, k = 0, ours;
	size_t nextra = 0;
	char **env;

	while (o->env != NULL && o->env[nextra] != NULL)
		nextra++;
	env = xcalloc(16 + nextra, sizeof *env);

	env[k++] = xasprintf("COLL_UNIQUE_ID=%s", uidstr);
	env[k++] = xasprintf("COLL_RANK=%d", rank);
	env[k++] = xasprintf("COLL_SIZE=%d", o->nranks);
	env[k++] = xasprintf("COLL_LOCAL_RANK=%d", lrank);
	env[k++] = xasprintf("COLL_LOCAL_SIZE=%d", lsize);
	env[k++] = xasprintf("COLL_JOBID=%016llx", (unsigned long long)o->uid->jobid);
	env[k++] = xasprintf("RANK=%d", rank);
	env[k++] = xasprintf("WORLD_SIZE=%d", o->nranks);
	env[k++] = xasprintf("LOCAL_RANK=%d", lrank);
	env[k++] = xasprintf("LOCAL_WORLD_SIZE=%d", lsize);
	env[k++] = xasprintf("GROUP_RANK=%d", host);
	env[k++] = xasprintf("MASTER_ADDR=%s", o->master_addr);
	env[k++] = xasprintf("MASTER_PORT=%d", o->master_port);
	ours = k;
	for (size_t i = 0; i < nextra; i++)
		if (!launch_env_has(env, ours, o->env[i]))
			env[k++] = xstrdup(o->env[i]);
	return env;
}

void
launch_env_free(char **env)
{
	for (char **e = env; e != NULL && *e != NULL; e++)
		free(*e);
	free(env);
}

int
launch_start(struct launch **out, const struct launch_opts *o, const struct launch_cb *cb)
{
	struct launch *l = xcalloc(1, sizeof *l);
	int r;

	l->ops = o->kind == LAUNCH_SSH ? &launch_ssh_ops :
	    o->kind == LAUNCH_SLURM ? &launch_slurm_ops : &launch_local_ops;
	l->cb = *cb;
	l->nranks = o->nranks;
	if ((r = l->ops->start(l, o)) != COLL_OK) {
		free(l);
		return r;
	}
	*out = l;
	return COLL_OK;
}

int
launch_poll(struct launch *l, int timeout_ms, int wake_fd)
{
	return l->ops->poll(l, timeout_ms, wake_fd);
}

void
launch_signal(struct launch *l, int sig)
{
	l->ops->signal(l, sig);
}

int
launch_running(const struct launch *l)
{
	return l->ops->running(l);
}

pid_t
launch_pid(const struct launch *l, int rank)
{
	return l->ops->pid(l, rank);
}

void
launch_free(struct launch *l)
{
	if (l == NULL)
		return;
	l->ops->free(l);
	free(l);
}
