#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "err.h"
#include "plat_ibv.h"
#include "plat_lib.h"

#define S(f, n) PLAT_SYM(struct plat_ibv, f, n)

static const struct plat_sym plat_ibv_syms[] = {
	S(get_list, "ibv_get_device_list"), S(free_list, "ibv_free_device_list"),
	S(name, "ibv_get_device_name"), S(open, "ibv_open_device"),
	S(close, "ibv_close_device"), S(query_port, "ibv_query_port"),
};

static struct {
	struct plat_ibv t;
	int rc;
	char why[512];
} plat_ibv;
static pthread_once_t plat_ibv_once = PTHREAD_ONCE_INIT;

static void
plat_ibv_open(void)
{
	const char *name, *missing;
	void *h = plat_lib_open(NULL, PLAT_IBV_LIB, RTLD_NOW | RTLD_LOCAL, &name, plat_ibv.why,
	    sizeof plat_ibv.why);

	plat_ibv.rc = COLL_ENOTFOUND;
	if (h == NULL)
		return;
	if ((missing = plat_lib_bind(&plat_ibv.t, h, plat_ibv_syms, sizeof plat_ibv_syms /
	    sizeof *plat_ibv_syms)) != NULL) {
		snprintf(plat_ibv.why, sizeof plat_ibv.why, "%s has no %s", name, missing);
		plat_ibv.rc = COLL_EVERSION;
		dlclose(h);
		return;
	}
	plat_ibv.rc = COLL_OK;
}

int
plat_ibv_load(const struct plat_ibv **t, char *why, size_t len)
{
	pthread_once(&plat_ibv_once, plat_ibv_open);
	*t = plat_ibv.rc == COLL_OK ? &plat_ibv.t : NULL;
	if (plat_ibv.rc != COLL_OK)
		snprintf(why, len, "%s", plat_ibv.why);
	return plat_ibv.rc;
}
