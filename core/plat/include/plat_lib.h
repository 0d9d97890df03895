/*
 * What the platform loaders share (plat_nvml, plat_cuda, plat_nccl,
 * plat_ibv): a library found with dlopen at run time, so that coll builds and
 * runs where none is installed, and a table of its functions bound by name.
 * Each library is loaded once per process, by its own loader, and kept: the
 * driver libraries are costly to start and NCCL leaves threads behind.
 */
#ifndef COLL_PLAT_LIB_H
#define COLL_PLAT_LIB_H

#include <stddef.h>

/* A function of a dlopen'ed library and where its pointer goes in a table. */
struct plat_sym {
	const char *name;
	size_t off;
	int optional;
	const char *alt;	/* the older name, tried when name is absent; or NULL */
};

#define PLAT_SYM(type, field, name) { name, offsetof(type, field), 0, NULL }
#define PLAT_OPT(type, field, name) { name, offsetof(type, field), 1, NULL }
#define PLAT_ALT(type, field, name, alt, opt) { name, offsetof(type, field), opt, alt }

/*
 * The library named by the variable var when it is set and not empty, else
 * dflt; which one into *name. The handle, or NULL with dlerror's text in why.
 */
void *plat_lib_open(const char *var, const char *dflt, int flags, const char **name,
    char *why, size_t len);
/* Fill the table at t from h; NULL, or the name of the first required function h lacks. */
const char *plat_lib_bind(void *t, void *h, const struct plat_sym *syms, size_t n);
/* The file the loader took for h, into path; 0, or -1 (path untouched). */
int plat_lib_path(void *h, char *path, size_t len);

#endif
