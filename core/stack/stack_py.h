/*
 * Python frames of a CPython process (py.c), read from its memory as
 * py-spy does, without running anything in it: the interpreter is found
 * through the _PyRuntime symbol of python3.X or libpython3.X, each thread's
 * PyThreadState by its native thread id, and the chain of interpreter
 * frames from there. The chain is walked while the process is stopped (it
 * changes as soon as the thread runs); the code objects it points at are
 * named after the process runs again. Each C-level call of the evaluation
 * loop (_PyEval_EvalFrameDefault) runs one or more Python frames: they take
 * that native frame's place, so native and Python frames interleave.
 *
 * The layouts of the structures read are fixed per minor version
 * (py_layout.c); a version we do not know is said, not guessed at.
 */
#ifndef COLL_STACK_PY_H
#define COLL_STACK_PY_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct stack_syms;
struct stack_snap;
struct stack_proc;

/* Field offsets of one CPython minor version (x86-64 and aarch64, release build). */
struct stack_py_layout {
	int minor;		/* 3.minor */
	uint16_t rt_interp_head;	/* _PyRuntimeState.interpreters.head */
	uint16_t is_next, is_threads_head;	/* PyInterpreterState */
	uint16_t ts_next, ts_native_tid, ts_cframe, ts_size;	/* PyThreadState (ts_size: bytes read) */
	int16_t cf_current;	/* _PyCFrame.current_frame; -1: ts_cframe is the frame itself */
	uint16_t fr_code, fr_previous, fr_instr, fr_owner, fr_size;	/* _PyInterpreterFrame */
	int16_t fr_entry;	/* its is_entry flag (3.11); -1: none, entry shims instead */
	int16_t owner_cstack;	/* owner value of an entry shim (3.12); -1: none */
	uint8_t owner_generator;
	uint16_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
	uint16_t co_firsttraceable, co_code;	/* PyCodeObject; co_code: its first instruction */
	uint16_t str_length, str_state, str_ascii_size, str_compact_size;	/* PyUnicodeObject */
	uint16_t bytes_size, bytes_data;	/* PyBytesObject */
	uint16_t ob_type;
};

/* The layout of 3.minor; NULL if we have none. */
const struct stack_py_layout *stack__py_layout(int minor);
/*
 * A 3.13 layout from the _Py_DebugOffsets the interpreter publishes (buf:
 * the start of _PyRuntime); -1 with why if it is not one we can use.
 */
int stack__py_debug_offsets(const uint8_t *buf, size_t len, struct stack_py_layout *l,
    char *why, size_t whylen);
#define STACK_PY_DEBUG_LEN 584	/* bytes of it read */

/* The most read of each object: a layout whose fields lie further is refused. */
#define STACK_PY_TS_READ 512	/* a thread state */
#define STACK_PY_FR_READ 128	/* an interpreter frame */
#define STACK_PY_CODE_READ 256	/* a code object, up to its first instruction */
#define STACK_PY_HDR_READ 128	/* a str's or bytes' header */

/* The line of the code unit lasti in a location table (co_linetable, 3.11+); -1 if none. */
int stack__py_line(const uint8_t *tab, size_t len, int firstline, int lasti);

/* A process's interpreter, as found before the stop. */
struct stack_py {
	int found;		/* it runs CPython (possibly one we cannot read: see why) */
	int minor;
	const struct stack_py_layout *l;	/* NULL: found but not readable */
	struct stack_py_layout own;	/* l, where it came from the process itself */
	uint64_t runtime;	/* &_PyRuntime */
	uint64_t code_type, str_type;	/* &PyCode_Type, &PyUnicode_Type: to check what we read */
	char why[256];		/* found but unreadable: why */
};

/* One Python frame as the walk found it, named later. */
struct stack_pyframe {
	uint64_t code;		/* its PyCodeObject */
	uint64_t instr;		/* its last instruction */
	uint8_t owner;
	uint8_t seg_end;	/* the outermost frame of one evaluation-loop call */
};

#define STACK_PY_MODS 4

struct stack_py_mod {
	char path[PATH_MAX];
	uint64_t lo;		/* where its file offset 0 is mapped */
};

/*
 * The interpreter modules in maps (a /proc/PID/maps text): python3.X and
 * libpython3.X.so (the first holds the interpreter only when it was linked
 * statically); their count, at most STACK_PY_MODS.
 */
int stack__py_map(const char *maps, struct stack_py_mod *m);
/*
 * Look for CPython in pid, whose /proc/PID/maps is maps, giving up on its
 * symbols at deadline_ns; 0 if it runs none (py->found says).
 */
int stack__py_find(pid_t pid, const char *maps, uint64_t deadline_ns, struct stack_py *py);
/* While s's threads are stopped: each thread's chain of Python frames. */
void stack__py_walk(const struct stack_py *py, struct stack_snap *s);
/* After: name the frames and put them in place of p's evaluation-loop frames. */
void stack__py_merge(struct stack_syms *sy, const struct stack_py *py, struct stack_snap *s,
    struct stack_proc *p);

/* The interned copy of str, living as long as sy (sym.c). */
const char *stack__intern(struct stack_syms *sy, const char *str);

#endif
