/*
 * How the communication stack is told to behave: the variables NCCL, CUDA,
 * UCX, Open MPI and PyTorch read, and NCCL's configuration files
 * (/etc/nccl.conf, then ~/.nccl.conf or NCCL_CONF_FILE, whose settings a
 * variable in the environment overrides). A variable set on one host and not
 * on the others is a classic cause of hangs, so each is its own fact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "plat_file.h"

static const char *const facts_env_prefixes[] = { "NCCL_", "CUDA_", "UCX_", "OMPI_", "TORCH_" };

static int
facts_env_wanted(const char *name)
{
	for (size_t i = 0; i < sizeof facts_env_prefixes / sizeof facts_env_prefixes[0]; i++)
		if (strncmp(name, facts_env_prefixes[i], strlen(facts_env_prefixes[i])) == 0)
			return 1;
	return 0;
}

/* "NAME=value" lines, '#' comments, as NCCL reads them. */
static void
facts_read_conf(struct facts *f, const char *tag, const char *root, const char *path)
{
	char buf[65536], key[FACTS_KEY_MAX + 32], what[FACTS_KEY_MAX];
	int n = 0;

	snprintf(what, sizeof what, "ncclconf.%s", tag);
	if (plat_file_text(root, path, buf, sizeof buf) < 0) {
		facts_add(f, what, "absent (%s)", path);
		return;
	}
	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *eq;

		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '#' || (eq = strchr(line, '=')) == NULL || eq == line)
			continue;
		*eq = '\0';
		snprintf(key, sizeof key, "ncclconf.%s.%s", tag, line);
		facts_add(f, key, "%s", eq + 1);
		n++;
	}
	facts_add(f, what, "%s (%d settings)", path, n);
}

void
facts_read_env(struct facts *f, const struct facts_roots *r, char *const *envp)
{
	char key[FACTS_KEY_MAX], home[4096];
	const char *conf = NULL;

	for (char *const *e = envp; e != NULL && *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		size_t len = eq != NULL ? (size_t)(eq - *e) : 0;

		if (len == 0 || len + 5 >= sizeof key || !facts_env_wanted(*e))
			continue;
		snprintf(key, sizeof key, "env.%.*s", (int)len, *e);
		facts_add(f, key, "%s", eq + 1);
		if (strncmp(*e, "NCCL_CONF_FILE=", 15) == 0)
			conf = eq + 1;
	}
	facts_read_conf(f, "etc", r->root, "/etc/nccl.conf");
	if (conf != NULL) {
		facts_read_conf(f, "user", NULL, conf);
	} else if (r->home != NULL) {
		snprintf(home, sizeof home, "%s/.nccl.conf", r->home);
		facts_read_conf(f, "user", NULL, home);
	}
}
