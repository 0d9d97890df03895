#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plat_lib.h"

void *
plat_lib_open(const char *var, const char *dflt, int flags, const char **name, char *why,
    size_t len)
{
	const char *v = var != NULL ? getenv(var) : NULL, *e;
	void *h;

	*name = v != NULL && *v != '\0' ? v : dflt;
	if ((h = dlopen(*name, flags)) == NULL) {
		e = dlerror();
		snprintf(why, len, "%s", e != NULL ? e : "not found");
	}
	return h;
}

const char *
plat_lib_bind(void *t, void *h, const struct plat_sym *syms, size_t n)
{
	const char *missing = NULL;

	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, syms[i].name);

		if (f == NULL && syms[i].alt != NULL)
			f = dlsym(h, syms[i].alt);
		if (f == NULL && !syms[i].optional && missing == NULL)
			missing = syms[i].name;
		/* A function pointer kept as the object pointer dlsym returns (POSIX allows it). */
		memcpy((char *)t + syms[i].off, &f, sizeof f);
	}
	return missing;
}

int
plat_lib_path(void *h, char *path, size_t len)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || lm->l_name == NULL ||
	    lm->l_name[0] == '\0')
		return -1;
	snprintf(path, len, "%s", lm->l_name);
	return 0;
}
