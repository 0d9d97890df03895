/*
 * The GPUs of each host through NVML (core/sample's reader), for the verdict
 * below the host: a kernel that waits on a peer keeps its GPU busy at low
 * power. A worker samples them only where a process of the job has an NCCL
 * page; a host without NVML sends nothing and the verdict leaves it out.
 */
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "sample.h"

/* A task's JSON has an NCCL communicator's page. */
static int
stk_gpu_wanted(json_t *tasks)
{
	json_t *t, *pg;
	size_t i, k;

	json_array_foreach(tasks, i, t)
		json_array_foreach(json_object_get(t, "pages"), k, pg)
			if (json_object_get(pg, "nccl") != NULL)
				return 1;
	return 0;
}

/* Worker: this host's GPUs into blob ("gpus"), each as NVML gave it; -1 where it did not. */
void
stk_gpu_here(json_t *tasks, json_t *blob)
{
	struct sample_host s;
	json_t *a;

	if (!stk_gpu_wanted(tasks))
		return;
	sample_host_read(&s, "", 1);
	a = json_array();
	for (int i = 0; i < s.ngpu; i++)
		json_array_append_new(a, json_pack("{s:i, s:i, s:I, s:I}", "index", s.gpu[i].index,
		    "util", s.gpu[i].util_gpu, "power_mw", (json_int_t)s.gpu[i].power_mw,
		    "limit_mw", (json_int_t)s.gpu[i].power_limit_mw));
	if (s.ngpu > 0)
		json_object_set_new(blob, "gpus", a);
	else
		json_decref(a);
	sample_host_free(&s);
}

/* One GPU as a worker or the record sent it: every field a number in range. */
static json_t *
stk_gpu_checked(json_t *g)
{
	static const char *const k[] = { "index", "util", "power_mw", "limit_mw" };
	static const json_int_t hi[] = { 1023, 100, 1 << 24, 1 << 24 };
	json_t *o = json_object();

	for (int i = 0; i < 4; i++) {
		json_t *x = json_object_get(g, k[i]);

		if (!json_is_integer(x) || json_integer_value(x) < -1 ||
		    json_integer_value(x) > hi[i]) {
			json_decref(o);
			return NULL;
		}
		json_object_set_new(o, k[i], json_integer(json_integer_value(x)));
	}
	return o;
}

/* Rank 0 (a worker's blob) and the front end (the record): host's GPUs added to r->gpus. */
void
stk_gpu_keep(struct stk_result *r, json_t *gpus, const char *host)
{
	json_t *a = json_array(), *g, *c;
	size_t i;
	char *h;

	json_array_foreach(gpus, i, g)
		if (i < 64 && (c = stk_gpu_checked(g)) != NULL)
			json_array_append_new(a, c);
	if (json_array_size(a) == 0 || host == NULL) {
		json_decref(a);
		return;
	}
	if (r->gpus == NULL)
		r->gpus = json_array();
	h = strdup(host);
	stk_clean_here(h);
	json_array_append_new(r->gpus, json_pack("{s:s?, s:o}", "host", h, "gpus", a));
	free(h);
}
