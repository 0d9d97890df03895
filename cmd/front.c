/*
 * The shared part of the front ends: the workers' job and argv, and rank 0's
 * record (front.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "launch.h"
#include "xmalloc.h"

int
front_prepare(const struct cmd *cmd, struct hostopt *ho, double timeout_s)
{
	char err[512];

	/* Remote workers run this very file: its installation's bin and lib go first there. */
	ho->jo.by_path = 1;
	ho->jo.label = 1;
	ho->jo.timeout_s = timeout_s;
	if (hostopt_prepare(ho, err, sizeof err) != 0)
		return cmd_usage_error(cmd, err);
	return EXIT_OK;
}

static int
front_argv_count(const char *const *v, int most)
{
	int n = 0;

	while (n < most && v[n] != NULL)
		n++;
	return n;
}

char **
front_argv(const struct cmd *cmd, const struct front_argv *w, int argc, char **argv)
{
	int nfirst = front_argv_count(w->first, 3), nlast = front_argv_count(w->last, 3), k = 0;
	char **v = xcalloc((size_t)argc + (size_t)(nfirst + nlast) + 3, sizeof *v);

	if ((v[k++] = cmd_self()) == NULL) {
		fprintf(stderr, "%s: cannot find its own executable\n", cmd->tool);
		free(v);
		return NULL;
	}
	if (w->sub != NULL)
		v[k++] = (char *)w->sub;
	v[k++] = "--worker";
	for (int i = 0; i < nfirst; i++)
		v[k++] = (char *)w->first[i];
	for (int i = 1; i < argc; i++)
		v[k++] = argv[i];
	for (int i = 0; i < nlast; i++)
		v[k++] = (char *)w->last[i];
	return v;
}

void
front_argv_free(char **wargv)
{
	if (wargv != NULL)
		free(wargv[0]);
	free(wargv);
}

void
front_record_add(struct front_record *r, const char *line, size_t len)
{
	if (r->len + len + 1 > r->max) {
		r->overflow = 1;
		return;
	}
	if (r->len + len + 1 > r->cap) {
		r->cap = (r->len + len + 1) * 2;
		r->buf = xreallocarray(r->buf, r->cap, 1);
	}
	memcpy(r->buf + r->len, line, len);
	r->len += len;
}

int
front_record_take(struct front_record *r, int rank, int stream, const char *line, size_t len)
{
	if (rank != 0 || stream != LAUNCH_STDOUT)
		return 0;
	front_record_add(r, line, len);
	return 1;
}

void
front_record_free(struct front_record *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
}
