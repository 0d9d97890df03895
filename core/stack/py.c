/*
 * Python frames: finding the interpreter, walking each thread's frames while
 * the process is stopped, naming them after (see stack_py.h for the shape).
 *
 * Everything read is the target's memory and may be anything: each read is
 * bounded, every count has a limit, and the type of each object named is
 * checked against PyCode_Type and PyUnicode_Type before it is believed. A
 * chain that stops making sense ends there; the native frames stay.
 */
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "stack.h"
#include "stack_elf.h"
#include "stack_impl.h"
#include "stack_py.h"
#include "xmalloc.h"

#define STACK_PY_INTERPS 16	/* subinterpreters looked at */
#define STACK_PY_TSTATES 4096	/* thread states looked at, over all of them */
#define STACK_PY_NAME_MAX 512	/* bytes of a name read */
#define STACK_PY_TABLE_MAX (256u << 10)	/* bytes of a location table read */
#define STACK_PY_CODES 1024	/* code objects named per process */
#define STACK_PY_TABLES_MAX (16u << 20)	/* bytes of location tables kept per process */

static int
stack_py_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (addr == 0)
		return -1;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static uint64_t
stack_py_u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof v);
	return v;
}

static int
stack_py_ptr(pid_t pid, uint64_t addr, uint64_t *out)
{
	return stack_py_read(pid, addr, out, sizeof *out);
}

/* 3.minor from "python3.11", "libpython3.12.so.1.0"; -1 if the name is neither. */
static int
stack_py_name_minor(const char *base)
{
	const char *v;
	char *end;
	long minor;

	if (strncmp(base, "libpython3.", 11) == 0)
		v = base + 11;
	else if (strncmp(base, "python3.", 8) == 0)
		v = base + 8;
	else
		return -1;
	minor = strtol(v, &end, 10);
	if (end == v || minor < 0 || minor > 99)
		return -1;
	/* A debug (d) or free-threaded (t) build adds letters: taken, and said later. */
	while (*end == 'd' || *end == 't')
		end++;
	if (base[0] == 'p' && *end != '\0')
		return -1;
	if (base[0] == 'l' && strncmp(end, ".so", 3) != 0)
		return -1;
	return (int)minor;
}


/* Symbols wanted from libpython: names[i]'s address goes in vals[i]. */
struct stack_py_want {
	const char *const *names;
	uint64_t *vals;
	int n;
	uint64_t deadline_ns;	/* the target's time: the scan stops there */
};


/* Symbols looked at in one file, over all its tables: a linker's libpython has 20000. */
#define STACK_PY_SYMS_MAX (4u << 20)

int
stack__py_map(const char *maps, struct stack_py_mod *m)
{
	char line[PATH_MAX + 128];
	int found = 0;

	for (const char *s = maps, *nl; *s != '\0' && found < STACK_PY_MODS; s = nl ? nl + 1 : "") {
		unsigned long long a, b, off;
		int at = 0;
		char *p, *base;

		nl = strchr(s, '\n');
		snprintf(line, sizeof line, "%.*s", (int)(nl ? nl - s : (ptrdiff_t)strlen(s)), s);
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &a, &b, &off, &at) != 3 ||
		    at == 0 || off != 0 || line[at] != '/')
			continue;
		p = line + at;
		base = strrchr(p, '/') + 1;
		if (stack_py_name_minor(base) < 0 || strlen(p) >= sizeof m->path)
			continue;
		memcpy(m[found].path, p, strlen(p) + 1);
		m[found++].lo = a;
	}
	return found;
}

/* The bias of the mapping at lo: where the segment at file offset 0 went; -1 if none. */
static int
stack_py_bias(Elf *elf, uint64_t lo, uint64_t *bias)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph) != 0)
		return -1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD &&
		    ph.p_offset == 0) {
			*bias = lo - (ph.p_vaddr & ~(uint64_t)0xfff);
			return 0;
		}
	}
	return -1;
}

/* Look names up in one symbol table; *budget counts symbols down, the deadline the time. */
static void
stack_py_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
    const struct stack_py_want *w, uint64_t *budget)
{
	Elf_Data *d = elf_getdata(scn, NULL);

	if (d == NULL)
		return;
	for (size_t k = 0; k < sh->sh_size / sh->sh_entsize && *budget > 0; k++, --*budget) {
		GElf_Sym sym;
		const char *nm;

		if ((k & 0xffff) == 0 && clock_now_ns() > w->deadline_ns) {
			*budget = 0;
			return;
		}
		if (gelf_getsym(d, (int)k, &sym) == NULL || sym.st_value == 0 ||
		    (nm = elf_strptr(elf, sh->sh_link, sym.st_name)) == NULL)
			continue;
		for (int j = 0; j < w->n; j++)
			if (w->vals[j] == 0 && strcmp(nm, w->names[j]) == 0)
				w->vals[j] = sym.st_value + bias;
	}
}

/*
 * Addresses of the symbols in names (0: not there), from the file's own
 * tables; -1 if the file cannot be used (why says so where it was refused).
 */
static int
stack_py_syms(pid_t pid, const struct stack_py_mod *m, const struct stack_py_want *w,
    char *why, size_t len)
{
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	uint64_t bias = 0, budget = STACK_PY_SYMS_MAX;
	int fd = stack__elf_open(pid, m->path, why, len), r = -1;

	if (fd == -1)
		return -1;
	if ((elf = stack__elf_begin(fd, pid, m->path, why, len)) == NULL ||
	    stack_py_bias(elf, m->lo, &bias) != 0)
		goto out;
	while ((scn = elf_nextscn(elf, scn)) != NULL && budget > 0) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) != NULL && (sh.sh_type == SHT_DYNSYM ||
		    sh.sh_type == SHT_SYMTAB) && sh.sh_entsize != 0)
			stack_py_symtab(elf, scn, &sh, bias, w, &budget);
	}
	r = 0;
out:
	if (elf != NULL)
		elf_end(elf);
	close(fd);
	return r;
}

int
stack__py_find(pid_t pid, const char *maps, uint64_t deadline_ns, struct stack_py *py)
{
	static const char *const names[] = { "_PyRuntime", "PyCode_Type", "PyUnicode_Type",
		"Py_Version" };
	struct stack_py_mod *m = xcalloc(STACK_PY_MODS, sizeof *m);
	uint64_t vals[4], ver = 0;
	struct stack_py_want w = { names, vals, 4, deadline_ns };
	uint8_t dbg[STACK_PY_DEBUG_LEN];
	char base[NAME_MAX + 1] = "", refused[sizeof py->why] = "";
	int nm = stack__py_map(maps, m), i;

	memset(py, 0, sizeof *py);
	for (i = 0; i < nm; i++) {
		memset(vals, 0, sizeof vals);
		snprintf(base, sizeof base, "%s", strrchr(m[i].path, '/') + 1);
		if (stack_py_syms(pid, &m[i], &w, refused, sizeof refused) == 0 && vals[0] != 0)
			break;
	}
	free(m);
	if (nm == 0)
		return 0;
	py->found = 1;
	if (i == nm && refused[0] != '\0') {
		/* A file we would not open says more than the symbols it did not give. */
		snprintf(py->why, sizeof py->why, "Python frames not read: %.230s", refused);
		return 1;
	}
	if (i == nm || vals[1] == 0 || vals[2] == 0) {
		snprintf(py->why, sizeof py->why, "Python frames not read: no _PyRuntime, "
		    "PyCode_Type or PyUnicode_Type symbol in %.40s", base);
		return 1;
	}
	py->minor = stack_py_name_minor(base);
	if (strstr(base + 6, "d.so") != NULL || (base[0] == 'p' && base[strlen(base) - 1] == 'd')) {
		/* A debug build's objects carry more fields: none of our layouts. */
		snprintf(py->why, sizeof py->why, "%.40s is a debug build of Python: its frames "
		    "are not read", base);
		return 1;
	}
	/* Py_VERSION_HEX, where the interpreter says it (3.11 on): 0x030c04f0 is 3.12.4. */
	if (vals[3] != 0 && stack_py_ptr(pid, vals[3], &ver) == 0 && (ver >> 24) == 3)
		py->minor = (int)((ver >> 16) & 0xff);
	py->runtime = vals[0];
	py->code_type = vals[1];
	py->str_type = vals[2];
	if (py->minor >= 13) {
		/* It says where its fields are: believe it over our table. */
		if (stack_py_read(pid, py->runtime, dbg, sizeof dbg) != 0)
			snprintf(py->why, sizeof py->why, "Python 3.%d: its _PyRuntime cannot be "
			    "read", py->minor);
		else if (stack__py_debug_offsets(dbg, sizeof dbg, &py->own, py->why,
		    sizeof py->why) == 0)
			py->l = &py->own;
	} else if ((py->l = stack__py_layout(py->minor)) == NULL) {
		snprintf(py->why, sizeof py->why, "Python 3.%d: its frames are not read (collstack "
		    "reads 3.11 to 3.13)", py->minor);
	}
	return 1;
}

static struct stack_snap_thread *
stack_py_thread(struct stack_snap *s, uint64_t tid)
{
	for (int i = 0; i < s->n; i++)
		if ((uint64_t)s->t[i].tid == tid && s->t[i].have_regs && s->t[i].npy == 0)
			return &s->t[i];
	return NULL;
}

/* The frames of one thread state, innermost first. */
static void
stack_py_chain(pid_t pid, const struct stack_py_layout *l, uint64_t cframe,
    struct stack_snap_thread *t)
{
	uint8_t fr[STACK_PY_FR_READ];
	uint64_t f, prev = 0;
	int n = 0;

	if (l->fr_size > sizeof fr)
		return;
	if (l->cf_current < 0)
		f = cframe;	/* the thread state points at its frame itself (3.13) */
	else if (stack_py_ptr(pid, cframe + (uint64_t)l->cf_current, &f) != 0)
		return;
	if (f == 0)
		return;
	if (t->py == NULL)
		t->py = xcalloc(STACK_MAX_FRAMES, sizeof *t->py);
	/* Frames visited are bounded too: entry shims are not kept, and a chain may loop. */
	for (int steps = 0; f != 0 && f != prev && n < STACK_MAX_FRAMES &&
	    steps < 2 * STACK_MAX_FRAMES && stack_py_read(pid, f, fr, l->fr_size) == 0; steps++) {
		uint8_t owner = fr[l->fr_owner];

		prev = f;
		f = stack_py_u64(fr, l->fr_previous);
		if (l->owner_cstack >= 0 && owner == l->owner_cstack) {
			/* An entry shim: the frames since the last one ran in one C call. */
			if (n > 0)
				t->py[n - 1].seg_end = 1;
			continue;
		}
		t->py[n] = (struct stack_pyframe){ stack_py_u64(fr, l->fr_code),
			stack_py_u64(fr, l->fr_instr), owner,
			l->fr_entry >= 0 && fr[l->fr_entry] != 0 };
		n++;
	}
	if (n > 0)
		t->py[n - 1].seg_end = 1;
	t->npy = n;
}

void
stack__py_walk(const struct stack_py *py, struct stack_snap *s)
{
	const struct stack_py_layout *l = py->l;
	uint64_t interp, ts;
	uint8_t tb[STACK_PY_TS_READ];
	int nts = 0;

	if (l == NULL || l->ts_size > sizeof tb || stack_py_ptr(s->pid, py->runtime + l->rt_interp_head, &interp) != 0)
		return;
	for (int ni = 0; interp != 0 && ni < STACK_PY_INTERPS; ni++) {
		if (stack_py_ptr(s->pid, interp + l->is_threads_head, &ts) != 0)
			return;
		while (ts != 0 && nts++ < STACK_PY_TSTATES &&
		    stack_py_read(s->pid, ts, tb, l->ts_size) == 0) {
			struct stack_snap_thread *t = stack_py_thread(s,
			    stack_py_u64(tb, l->ts_native_tid));

			if (t != NULL)
				stack_py_chain(s->pid, l, stack_py_u64(tb, l->ts_cframe), t);
			ts = stack_py_u64(tb, l->ts_next);
		}
		if (stack_py_ptr(s->pid, interp + l->is_next, &interp) != 0)
			return;
	}
}

/* A code object, named. */
struct stack_py_code {
	uint64_t addr;
	int ok;
	const char *func, *file, *module;
	int firstline, traceable;
	uint8_t *tab;
	size_t tablen;
};

struct stack_py_names {
	pid_t pid;
	const struct stack_py *py;
	struct stack_syms *sy;
	struct stack_py_code c[STACK_PY_CODES];
	int n;
	size_t tables;		/* bytes of location tables held */
};

/* A str object as UTF-8 into out; -1 if it is not one we can read. */
static int
stack_py_str(struct stack_py_names *nm, uint64_t addr, char *out, size_t len)
{
	const struct stack_py_layout *l = nm->py->l;
	uint8_t h[STACK_PY_HDR_READ], data[STACK_PY_NAME_MAX * 4];
	uint64_t n;
	uint32_t state;
	int kind;
	size_t o = 0;

	if (l->str_ascii_size > sizeof h || l->str_compact_size > sizeof h ||
	    stack_py_read(nm->pid, addr, h, l->str_ascii_size) != 0 ||
	    stack_py_u64(h, l->ob_type) != nm->py->str_type)
		return -1;
	n = stack_py_u64(h, l->str_length);
	memcpy(&state, h + l->str_state, sizeof state);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -1;	/* not compact: names always are */
	if (n > STACK_PY_NAME_MAX)
		n = STACK_PY_NAME_MAX;
	if (stack_py_read(nm->pid, addr + ((state >> 6) & 1 ? l->str_ascii_size :
	    l->str_compact_size), data, (size_t)n * (size_t)kind) != 0)
		return -1;
	for (uint64_t i = 0; i < n && o + 5 < len; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ?
		    (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8 :
		    (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
		    (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;

		if (c < 0x80) {
			out[o++] = (char)c;
		} else if (c < 0x800) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 63));
		} else if (c < 0x10000) {
			out[o++] = (char)(0xe0 | c >> 12);
			out[o++] = (char)(0x80 | ((c >> 6) & 63));
			out[o++] = (char)(0x80 | (c & 63));
		} else if (c < 0x110000) {
			out[o++] = (char)(0xf0 | c >> 18);
			out[o++] = (char)(0x80 | ((c >> 12) & 63));
			out[o++] = (char)(0x80 | ((c >> 6) & 63));
			out[o++] = (char)(0x80 | (c & 63));
		}
	}
	out[o] = '\0';
	return 0;
}

static void
stack_py_code_read(struct stack_py_names *nm, struct stack_py_code *c)
{
	const struct stack_py_layout *l = nm->py->l;
	uint8_t h[STACK_PY_CODE_READ], bh[STACK_PY_HDR_READ];
	char name[STACK_PY_NAME_MAX * 4 + 8], file[STACK_PY_NAME_MAX * 4 + 8];
	int32_t first, trace;
	uint64_t tlen;
	const char *base;

	if (l->co_code > sizeof h || stack_py_read(nm->pid, c->addr, h, l->co_code) != 0 ||
	    stack_py_u64(h, l->ob_type) != nm->py->code_type)
		return;
	if (stack_py_str(nm, stack_py_u64(h, l->co_qualname), name, sizeof name) != 0 &&
	    stack_py_str(nm, stack_py_u64(h, l->co_name), name, sizeof name) != 0)
		return;
	if (stack_py_str(nm, stack_py_u64(h, l->co_filename), file, sizeof file) != 0)
		snprintf(file, sizeof file, "?");
	memcpy(&first, h + l->co_firstlineno, sizeof first);
	memcpy(&trace, h + l->co_firsttraceable, sizeof trace);
	base = strrchr(file, '/');
	c->func = stack__intern(nm->sy, name);
	c->module = stack__intern(nm->sy, file);
	c->file = stack__intern(nm->sy, base ? base + 1 : file);
	c->firstline = first;
	c->traceable = trace;
	c->ok = 1;
	/* The location table is a bytes object; a code object without one has no lines. */
	if (l->bytes_data > sizeof bh ||
	    stack_py_read(nm->pid, stack_py_u64(h, l->co_linetable), bh, l->bytes_data) != 0)
		return;
	tlen = stack_py_u64(bh, l->bytes_size);
	if (tlen == 0 || tlen > STACK_PY_TABLE_MAX || nm->tables + tlen > STACK_PY_TABLES_MAX)
		return;	/* no line, rather than unbounded memory */
	nm->tables += (size_t)tlen;
	c->tab = xmalloc((size_t)tlen);
	if (stack_py_read(nm->pid, stack_py_u64(h, l->co_linetable) + l->bytes_data, c->tab,
	    (size_t)tlen) != 0) {
		free(c->tab);
		c->tab = NULL;
		return;
	}
	c->tablen = (size_t)tlen;
}

static struct stack_py_code *
stack_py_code(struct stack_py_names *nm, uint64_t addr)
{
	struct stack_py_code *c;

	for (int i = 0; i < nm->n; i++)
		if (nm->c[i].addr == addr)
			return &nm->c[i];
	if (nm->n == STACK_PY_CODES)
		return NULL;
	c = &nm->c[nm->n++];
	c->addr = addr;
	stack_py_code_read(nm, c);
	return c;
}

/* The evaluation loop's own frame (a compiler may split off its .cold part). */
static int
stack_py_eval_frame(const char *func)
{
	static const char ev[] = "_PyEval_EvalFrameDefault";

	return func != NULL && strncmp(func, ev, sizeof ev - 1) == 0 &&
	    (func[sizeof ev - 1] == '\0' || func[sizeof ev - 1] == '.');
}

/*
 * One thread: its Python frames named, each run of them in place of one
 * evaluation-loop frame, innermost first; runs left over (the native unwind
 * stopped early) go outermost.
 */
static void
stack_py_thread_merge(struct stack_py_names *nm, struct stack_snap_thread *st,
    struct stack_thread *th)
{
	const struct stack_py_layout *l = nm->py->l;
	struct stack_frame *pf = xcalloc((size_t)st->npy, sizeof *pf), *out;
	uint8_t *end = xcalloc((size_t)st->npy, 1), *keep = xcalloc((size_t)st->npy, 1);
	int np = 0, no = 0, k = 0;

	for (int i = 0; i < st->npy; i++) {
		const struct stack_pyframe *f = &st->py[i];
		struct stack_py_code *c = stack_py_code(nm, f->code);
		int64_t lasti;

		if (c == NULL || !c->ok)
			break;	/* not a code object: the chain moved on or is not what we think */
		lasti = ((int64_t)(f->instr - (f->code + l->co_code))) / 2;
		end[np] = f->seg_end;
		/* A frame not started yet (its arguments still being set up) is not shown. */
		keep[np] = f->owner == l->owner_generator || lasti >= c->traceable;
		pf[np] = (struct stack_frame){ .func = c->func, .file = c->file,
			.module = c->module, .kind = STACK_FRAME_PYTHON,
			.line = c->tab ? stack__py_line(c->tab, c->tablen, c->firstline,
			    (int)(lasti < 0 || lasti > INT32_MAX ? -1 : lasti)) : -1 };
		if (pf[np].line < 0)
			pf[np].line = 0;
		np++;
	}
	if (np > 0)
		end[np - 1] = 1;
	out = xcalloc((size_t)(th->nframes + np), sizeof *out);
	for (int i = 0; i < th->nframes; i++) {
		const struct stack_frame *f = &th->frames[i];

		if (k < np && stack_py_eval_frame(f->func)) {
			do {
				if (keep[k])
					out[no++] = pf[k];
			} while (!end[k++] && k < np);
			continue;
		}
		out[no++] = *f;
	}
	for (; k < np; k++)
		if (keep[k])
			out[no++] = pf[k];
	free(th->frames);
	th->frames = out;
	th->nframes = no;
	free(pf);
	free(end);
	free(keep);
}

void
stack__py_merge(struct stack_syms *sy, const struct stack_py *py, struct stack_snap *s,
    struct stack_proc *p)
{
	struct stack_py_names *nm;

	if (py->l == NULL)
		return;
	nm = xcalloc(1, sizeof *nm);
	nm->pid = s->pid;
	nm->py = py;
	nm->sy = sy;
	for (int i = 0; i < s->n; i++) {
		struct stack_snap_thread *st = &s->t[i];

		if (st->npy == 0)
			continue;
		for (int k = 0; k < p->nthreads; k++)
			if (p->threads[k].tid == st->tid)
				stack_py_thread_merge(nm, st, &p->threads[k]);
	}
	for (int i = 0; i < nm->n; i++)
		free(nm->c[i].tab);
	free(nm);
}
