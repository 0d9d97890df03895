/*
 * Naming frames: function, source file and line from DWARF where the module
 * has it (with the functions inlined at that pc as frames of their own, each
 * at the line it was called from), the ELF symbol where it has only a symbol
 * table, module+offset where it has neither.
 *
 * Results are cached by (module path, offset) for the whole host: the
 * processes of a job run the same binaries, so after the first process most
 * pcs are found here and their DWARF is never opened again. Names live in an
 * intern table freed with the cache. One mutex guards both; the DWARF lookups
 * run outside it, in the calling thread's own Dwfl.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stack.h"
#include "stack_py.h"
#include "stack_sym.h"
#include "xmalloc.h"

#define STACK_SYM_BUCKETS 4096

struct stack_sym_ent {
	struct stack_sym_ent *next;
	const char *path;	/* interned */
	uint64_t off;
	int n;
	struct stack_frame f[];
};

struct stack_str {
	struct stack_str *next;
	char s[];
};

struct stack_syms {
	pthread_mutex_t mu;
	struct stack_sym_ent *b[STACK_SYM_BUCKETS];
	struct stack_str *str[STACK_SYM_BUCKETS];
	uint64_t hits, misses;
};

static uint64_t
stack_hash(const char *s, uint64_t h)
{
	for (; s != NULL && *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The interned copy of s; call with the lock held. */
static const char *
stack_intern(struct stack_syms *sy, const char *s)
{
	struct stack_str **b, *e;
	size_t len;

	if (s == NULL)
		return NULL;
	b = &sy->str[stack_hash(s, 14695981039346656037ull) % STACK_SYM_BUCKETS];
	for (e = *b; e != NULL; e = e->next)
		if (strcmp(e->s, s) == 0)
			return e->s;
	len = strlen(s);
	e = xmalloc(sizeof *e + len + 1);
	memcpy(e->s, s, len + 1);
	e->next = *b;
	*b = e;
	return e->s;
}

const char *
stack__intern(struct stack_syms *sy, const char *s)
{
	const char *r;

	pthread_mutex_lock(&sy->mu);
	r = stack_intern(sy, s);
	pthread_mutex_unlock(&sy->mu);
	return r;
}

struct stack_syms *
stack_syms_new(void)
{
	struct stack_syms *sy = xcalloc(1, sizeof *sy);

	pthread_mutex_init(&sy->mu, NULL);
	return sy;
}

void
stack_syms_free(struct stack_syms *sy)
{
	if (sy == NULL)
		return;
	for (int i = 0; i < STACK_SYM_BUCKETS; i++) {
		for (struct stack_sym_ent *e = sy->b[i], *n; e != NULL; e = n) {
			n = e->next;
			free(e);
		}
		for (struct stack_str *e = sy->str[i], *n; e != NULL; e = n) {
			n = e->next;
			free(e);
		}
	}
	pthread_mutex_destroy(&sy->mu);
	free(sy);
}

void
stack_syms_stats(struct stack_syms *sy, uint64_t *hits, uint64_t *misses)
{
	pthread_mutex_lock(&sy->mu);
	*hits = sy->hits;
	*misses = sy->misses;
	pthread_mutex_unlock(&sy->mu);
}

static const char *
stack_base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static const char *
stack_die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

/* Where an inlined function was called from: its call_file and call_line. */
static void
stack_call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	Dwarf_Files *files;
	size_t nf;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &w) == 0)
		*line = (int)w;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &w) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nf) == 0 && w < nf)
		*file = stack_base(dwarf_filesrc(files, w, NULL, NULL));
}

/*
 * The frames DWARF gives for pc: its function and the ones inlined into it.
 * dwarf_getscopes follows an inlined function into its abstract definition,
 * not into its caller, so the chain of callers is the chain of DIEs that
 * contain the innermost scope (dwarf_getscopes_die), as eu-addr2line -i does.
 */
static int
stack_sym_dwarf(Dwfl_Module *mod, uint64_t pc, const char *symname, struct stack_frame *out,
    int max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias), *sc = NULL, *chain = NULL;
	Dwfl_Line *ln = dwfl_module_getsrc(mod, pc);
	int nsc = cu ? dwarf_getscopes(cu, pc - bias, &sc) : 0, n = 0;
	int nch = nsc > 0 ? dwarf_getscopes_die(&sc[0], &chain) : 0;

	if (ln != NULL) {
		out[0].file = stack_base(dwfl_lineinfo(ln, NULL, &out[0].line, NULL, NULL, NULL));
		if (out[0].file == NULL)
			out[0].line = 0;
	}
	out[0].func = symname;
	for (int i = 0; i < nch && n < max; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		out[n].func = stack_die_name(&chain[i]) ? stack_die_name(&chain[i]) : symname;
		if (tag == DW_TAG_subprogram) {
			n++;
			break;
		}
		/* The next (outer) frame is at this one's call site. */
		out[n].kind = STACK_FRAME_INLINED;
		if (n + 1 < max)
			stack_call_site(cu, &chain[i], &out[n + 1].file, &out[n + 1].line);
		n++;
	}
	free(chain);
	free(sc);
	if (n > 0 && out[n - 1].kind == STACK_FRAME_INLINED)
		out[n - 1].kind = STACK_FRAME_NATIVE;	/* its outer function was not found: no caller to show */
	return n > 0 ? n : 1;
}

/* libstdc++'s demangler (the C++ ABI's own, present wherever C++ code runs). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* A C++ symbol's readable name, malloc'ed; NULL if name is not one. */
static char *
stack_demangle(const char *name)
{
	int st = 0;
	char *d;

	if (name == NULL || strncmp(name, "_Z", 2) != 0)
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &st);
	if (st != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* Look pc up in mod, outside the lock; names point into the module's data. */
static int
stack_sym_lookup(Dwfl_Module *mod, uint64_t pc, uint64_t start, const char *path,
    struct stack_frame *out, int max)
{
	GElf_Off soff;
	GElf_Sym sym;
	const char *symname = dwfl_module_addrinfo(mod, pc, &soff, &sym, NULL, NULL, NULL);
	int n;

	memset(out, 0, sizeof *out * (size_t)max);
	n = stack_sym_dwarf(mod, pc, symname, out, max);
	for (int i = 0; i < n; i++) {
		out[i].module = stack_base(path);
		out[i].offset = pc - start;
		if (out[i].file == NULL)
			out[i].line = 0;
	}
	return n;
}

static struct stack_sym_ent *
stack_sym_find(struct stack_syms *sy, const char *path, uint64_t off, size_t *bucket)
{
	*bucket = stack_hash(path, 14695981039346656037ull ^ off) % STACK_SYM_BUCKETS;
	for (struct stack_sym_ent *e = sy->b[*bucket]; e != NULL; e = e->next)
		if (e->off == off && strcmp(e->path, path) == 0)
			return e;
	return NULL;
}

int
stack__sym(struct stack_syms *sy, Dwfl_Module *mod, uint64_t pc, struct stack_frame *out,
    int max)
{
	Dwarf_Addr start = 0;
	const char *path = mod ? dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL,
	    NULL) : NULL;
	struct stack_sym_ent *e;
	char *dm[STACK_SYM_INLINE_MAX] = { NULL };
	size_t b;
	int n;

	if (path == NULL) {
		memset(out, 0, sizeof *out);
		out->offset = pc;
		return 1;
	}
	pthread_mutex_lock(&sy->mu);
	if ((e = stack_sym_find(sy, path, pc - start, &b)) != NULL) {
		sy->hits++;
		n = e->n < max ? e->n : max;
		memcpy(out, e->f, sizeof *out * (size_t)n);
		pthread_mutex_unlock(&sy->mu);
		return n;
	}
	sy->misses++;
	pthread_mutex_unlock(&sy->mu);
	n = stack_sym_lookup(mod, pc, start, path, out, max);
	for (int i = 0; i < n; i++)
		if ((dm[i] = stack_demangle(out[i].func)) != NULL)
			out[i].func = dm[i];
	pthread_mutex_lock(&sy->mu);
	for (int i = 0; i < n; i++) {
		out[i].func = stack_intern(sy, out[i].func);
		free(dm[i]);
		out[i].file = stack_intern(sy, out[i].file);
		out[i].module = stack_intern(sy, out[i].module);
	}
	/* Another thread may have named it meanwhile: keep the first. */
	if (stack_sym_find(sy, path, pc - start, &b) == NULL) {
		e = xmalloc(sizeof *e + sizeof *e->f * (size_t)n);
		e->path = stack_intern(sy, path);
		e->off = pc - start;
		e->n = n;
		memcpy(e->f, out, sizeof *out * (size_t)n);
		e->next = sy->b[b];
		sy->b[b] = e;
	}
	pthread_mutex_unlock(&sy->mu);
	return n;
}
