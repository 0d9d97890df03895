/*
 * core/plat: the one reader of small sysfs/proc files (under a fixture root
 * that stands for "/", bounded, missing files, a FIFO that never blocks, the
 * sorted and bounded listing) and the loaders' failure paths (a library that
 * is not there says which, and for NCCL which variable to set). This machine
 * has no GPU stack; where one is found, the absent-library checks are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "plat_cuda.h"
#include "plat_file.h"
#include "plat_ibv.h"
#include "plat_lib.h"
#include "plat_nccl.h"
#include "plat_nvml.h"

static char root[256];

static void
put(const char *path, const char *text)
{
	char full[1024], *s;
	FILE *f;

	snprintf(full, sizeof full, "%s%s", root, path);
	for (s = full + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(full, 0755);
		*s = '/';
	}
	f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int
setup(void **state)
{
	char fifo[512];

	(void)state;
	snprintf(root, sizeof root, "/tmp/coll-plat.XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	put("/sys/class/net/eth0/mtu", "9000\n");
	put("/sys/class/net/eth0/operstate", "up\nsecond line\n");
	put("/sys/class/net/eth0/junk", "x12\n");
	put("/proc/version", "Linux version 6.1  \t\n\n");
	put("/sys/class/net/b/x", "");
	put("/sys/class/net/a/x", "");
	put("/sys/class/net/.hidden/x", "");
	snprintf(fifo, sizeof fifo, "%s/sys/fifo", root);
	return mkfifo(fifo, 0600);
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The root stands for "/": the same absolute path reads the fixture's file. */
static void
test_file_root(void **state)
{
	char buf[64];
	uint64_t v = 1;

	(void)state;
	assert_int_equal(plat_file_read(root, "/sys/class/net/eth0/mtu", buf, sizeof buf), 5);
	assert_string_equal(buf, "9000\n");
	assert_int_equal(plat_file_u64(root, "/sys/class/net/eth0/mtu", &v), 0);
	assert_true(v == 9000);
	assert_int_equal(plat_file_line(root, "/sys/class/net/eth0/operstate", buf, sizeof buf), 0);
	assert_string_equal(buf, "up");
	assert_int_equal(plat_file_text(root, "/proc/version", buf, sizeof buf), 17);
	assert_string_equal(buf, "Linux version 6.1");
	/* NULL and "" are the host's own files. */
	assert_true(plat_file_read(NULL, "/proc/self/stat", buf, sizeof buf) > 0);
	assert_true(plat_file_read("", "/proc/self/stat", buf, sizeof buf) > 0);
	assert_int_equal(plat_file_u64(root, "/sys/class/net/eth0/junk", &v), -1);
	assert_true(v == 0);
}

/* The variable tests set: unset or empty is the host's own. */
static void
test_file_root_var(void **state)
{
	(void)state;
	unsetenv(PLAT_FILE_ROOT_VAR);
	assert_null(plat_file_root());
	setenv(PLAT_FILE_ROOT_VAR, "", 1);
	assert_null(plat_file_root());
	setenv(PLAT_FILE_ROOT_VAR, root, 1);
	assert_string_equal(plat_file_root(), root);
	unsetenv(PLAT_FILE_ROOT_VAR);
}

/* A read stops at the caller's bound, NUL-terminated, whatever the file holds. */
static void
test_file_bounds(void **state)
{
	char buf[4], path[5000];

	(void)state;
	memset(buf, 'z', sizeof buf);
	assert_int_equal(plat_file_read(root, "/sys/class/net/eth0/mtu", buf, sizeof buf), 3);
	assert_string_equal(buf, "900");
	assert_int_equal(plat_file_read(root, "/sys/class/net/eth0/mtu", buf, 1), 0);
	assert_string_equal(buf, "");
	assert_int_equal(plat_file_read(root, "/sys/class/net/eth0/mtu", buf, 0), -1);
	/* A path that does not fit is refused, not read cut short. */
	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	assert_int_equal(plat_file_read(root, path, buf, sizeof buf), -1);
}

/* Missing files and directories are -1, never an empty success; a FIFO never blocks. */
static void
test_file_missing(void **state)
{
	char buf[16], **names = (char **)1;
	uint64_t v = 7;

	(void)state;
	assert_int_equal(plat_file_read(root, "/sys/nothing", buf, sizeof buf), -1);
	assert_int_equal(plat_file_line(root, "/sys/nothing", buf, sizeof buf), -1);
	assert_int_equal(plat_file_text(root, "/sys/nothing", buf, sizeof buf), -1);
	assert_int_equal(plat_file_u64(root, "/sys/nothing", &v), -1);
	assert_true(v == 0);
	assert_int_equal(plat_file_list(root, "/sys/nothing", PLAT_FILE_LIST_ALL, &names), -1);
	assert_null(names);
	/* No writer: the read finds nothing at once, rather than waiting for one. */
	assert_true(plat_file_read(root, "/sys/fifo", buf, sizeof buf) <= 0);
}

/* Sorted by bytes, dot files left out, the first max kept. */
static void
test_file_list(void **state)
{
	char **names;
	int n;

	(void)state;
	n = plat_file_list(root, "/sys/class/net", PLAT_FILE_LIST_ALL, &names);
	assert_int_equal(n, 3);
	assert_string_equal(names[0], "a");
	assert_string_equal(names[1], "b");
	assert_string_equal(names[2], "eth0");
	plat_file_list_free(names, n);
	n = plat_file_list(root, "/sys/class/net", 2, &names);
	assert_int_equal(n, 2);
	assert_string_equal(names[1], "b");
	plat_file_list_free(names, n);
}

/* Whether the loader can find a library here (then its absence cannot be tested). */
static int
present(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (h != NULL)
		dlclose(h);
	return h != NULL;
}

/* The shared opener: the variable wins over the default, and its failure names the file. */
static void
test_lib_open(void **state)
{
	const char *name;
	char why[512];

	(void)state;
	setenv("COLL_TEST_PLAT_LIB", "/nonexistent/libnothing.so.9", 1);
	assert_null(plat_lib_open("COLL_TEST_PLAT_LIB", "libc.so.6", RTLD_NOW, &name, why,
	    sizeof why));
	assert_string_equal(name, "/nonexistent/libnothing.so.9");
	assert_non_null(strstr(why, "/nonexistent/libnothing.so.9"));
	unsetenv("COLL_TEST_PLAT_LIB");
}

/* NCCL named by COLL_NCCL_LIBRARY: not there, the error names the file and the variable. */
static void
test_nccl_absent(void **state)
{
	const struct nccl_api *t = (const struct nccl_api *)1;
	char why[1024], path[64];
	const char *name;
	int v = 5;

	(void)state;
	setenv(PLAT_NCCL_VAR, "/nonexistent/libnccl.so.2", 1);
	setenv(PLAT_NCCL_VAR_OLD, "/nonexistent/old-libnccl.so.2", 1);
	assert_int_equal(plat_nccl_load(&t, why, sizeof why), COLL_ENOTFOUND);
	assert_null(t);
	assert_non_null(strstr(why, "cannot load NCCL (/nonexistent/libnccl.so.2): "));
	assert_non_null(strstr(why, "; install it or set COLL_NCCL_LIBRARY to its path"));
	assert_int_equal(plat_nccl_version(&v, &name, path, sizeof path), COLL_ENOTFOUND);
	assert_string_equal(name, "/nonexistent/libnccl.so.2");
	assert_int_equal(v, 0);
}

static void
test_nvml_absent(void **state)
{
	const struct plat_nvml *t = (const struct plat_nvml *)1;
	char why[512];

	(void)state;
	if (present(PLAT_NVML_LIB))
		skip();
	assert_int_equal(plat_nvml_load(&t, why, sizeof why), COLL_ENOTFOUND);
	assert_null(t);
	assert_non_null(strstr(why, "libnvidia-ml.so.1"));
	/* Loaded once: the second answer is the first. */
	assert_int_equal(plat_nvml_load(&t, why, sizeof why), COLL_ENOTFOUND);
}

static void
test_cuda_absent(void **state)
{
	const struct cu_api *t = (const struct cu_api *)1;
	char why[512];
	int v = 5;

	(void)state;
	if (present(PLAT_CUDA_LIB))
		skip();
	assert_int_equal(plat_cuda_load(&t, why, sizeof why), COLL_ENOTFOUND);
	assert_null(t);
	assert_true(strncmp(why, "no CUDA driver (libcuda.so.1): ", 31) == 0);
	assert_int_equal(plat_cuda_driver_version(&v), -1);
	assert_int_equal(v, 0);
}

static void
test_ibv_absent(void **state)
{
	const struct plat_ibv *t = (const struct plat_ibv *)1;
	char why[512];

	(void)state;
	if (present(PLAT_IBV_LIB))
		skip();
	assert_int_equal(plat_ibv_load(&t, why, sizeof why), COLL_ENOTFOUND);
	assert_null(t);
	assert_non_null(strstr(why, "libibverbs.so.1"));
}

/* Binding: a required function missing is named, an optional one left NULL, an old name taken. */
struct fake {
	void *a, *b, *c, *d;
};

static void
test_lib_bind(void **state)
{
	static const struct plat_sym syms[] = {
		PLAT_SYM(struct fake, a, "malloc"),
		PLAT_OPT(struct fake, b, "coll_no_such_function"),
		PLAT_ALT(struct fake, c, "coll_no_such_new_name", "free", 0),
		PLAT_SYM(struct fake, d, "coll_no_such_required"),
	};
	struct fake f;
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
	const char *missing;

	(void)state;
	assert_non_null(h);
	missing = plat_lib_bind(&f, h, syms, 4);
	assert_non_null(missing);
	assert_string_equal(missing, "coll_no_such_required");
	assert_non_null(f.a);
	assert_null(f.b);
	assert_non_null(f.c);
	assert_null(plat_lib_bind(&f, h, syms, 3));
	dlclose(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_root),
		cmocka_unit_test(test_file_root_var),
		cmocka_unit_test(test_file_bounds),
		cmocka_unit_test(test_file_missing),
		cmocka_unit_test(test_file_list),
		cmocka_unit_test(test_lib_open),
		cmocka_unit_test(test_lib_bind),
		cmocka_unit_test(test_nccl_absent),
		cmocka_unit_test(test_nvml_absent),
		cmocka_unit_test(test_cuda_absent),
		cmocka_unit_test(test_ibv_absent),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
