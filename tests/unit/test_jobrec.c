/*
 * The job record directory (COLL_JOB_DIR, in a mkdtemp dir): a fresh one is
 * created 0700 whatever the umask; an existing one is refused when it is not
 * a directory of this user that only this user may write (collstack trusts
 * the records in it), and then no record is written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "jobrec.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static char top[64];

static int
group_setup(void **state)
{
	snprintf(top, sizeof top, "/tmp/coll-test-jobrec.XXXXXX");
	return mkdtemp(top) == NULL ? -1 : 0;
}

static int
group_teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	return system(cmd);
}

/* A missing directory is created exactly 0700, even under a umask that would cut it. */
static void
test_jobrec_dir_fresh(void **state)
{
	static const mode_t masks[] = { 022, 077, 0277 };

	for (size_t i = 0; i < ARRAY_LEN(masks); i++) {
		char want[128], got[256];
		struct stat sb;
		mode_t old = umask(masks[i]);

		snprintf(want, sizeof want, "%s/fresh%zu", top, i);
		assert_int_equal(setenv("COLL_JOB_DIR", want, 1), 0);
		assert_int_equal(jobrec_dir(got, sizeof got), COLL_OK);
		umask(old);
		assert_string_equal(got, want);
		assert_int_equal(lstat(want, &sb), 0);
		assert_true(S_ISDIR(sb.st_mode));
		assert_int_equal(sb.st_mode & 07777, 0700);
		assert_int_equal(sb.st_uid, geteuid());
	}
}

enum kind { DIR_MODE, LINK, PLAIN_FILE, OTHER_USER };

/* Existing directories: which are used and which refused. */
static void
test_jobrec_dir_existing(void **state)
{
	static const struct {
		const char *name;
		enum kind kind;
		mode_t mode;
		int want;
	} rows[] = {
		{ "mode 700", DIR_MODE, 0700, COLL_OK },
		{ "mode 755", DIR_MODE, 0755, COLL_OK },
		{ "mode 777", DIR_MODE, 0777, COLL_EUNSAFE },
		{ "mode 1777", DIR_MODE, 01777, COLL_EUNSAFE },
		{ "mode 770", DIR_MODE, 0770, COLL_EUNSAFE },
		{ "mode 702", DIR_MODE, 0702, COLL_EUNSAFE },
		{ "link to a 700 dir", LINK, 0700, COLL_EUNSAFE },
		{ "plain file", PLAIN_FILE, 0600, COLL_EUNSAFE },
		{ "owned by nobody", OTHER_USER, 0700, COLL_EOWNER },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char path[128], real[140], got[256], rec[512];
		const char *argv[] = { "x", NULL };
		struct jobrec j = { 0x1234, "local", 1, (char *const *)argv, 0, NULL };

		if (rows[i].kind == OTHER_USER && geteuid() != 0) {
			print_message("not root: skipping '%s'\n", rows[i].name);
			continue;
		}
		snprintf(path, sizeof path, "%s/d%zu", top, i);
		snprintf(real, sizeof real, "%s.real", path);
		if (rows[i].kind == PLAIN_FILE) {
			FILE *f = fopen(path, "w");

			assert_non_null(f);
			fclose(f);
		} else {
			assert_int_equal(mkdir(rows[i].kind == LINK ? real : path, 0700), 0);
			assert_int_equal(chmod(rows[i].kind == LINK ? real : path, rows[i].mode), 0);
		}
		if (rows[i].kind == LINK)
			assert_int_equal(symlink(real, path), 0);
		if (rows[i].kind == OTHER_USER)
			assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(setenv("COLL_JOB_DIR", path, 1), 0);
		if (jobrec_dir(got, sizeof got) != rows[i].want)
			fail_msg("%s: jobrec_dir = %d, want %d", rows[i].name,
			    jobrec_dir(got, sizeof got), rows[i].want);
		assert_string_equal(got, path);
		assert_int_equal(jobrec_write(&j, rec, sizeof rec), rows[i].want);
		/* A refused directory is named back, for the one-line warning. */
		if (rows[i].want != COLL_OK)
			assert_string_equal(rec, path);
		snprintf(rec, sizeof rec, "%s/%016x.json", path, 0x1234);
		assert_int_equal(access(rec, F_OK) == 0, rows[i].want == COLL_OK);
	}
}

/* A record name that would not fit is refused, never written cut short. */
static void
test_jobrec_write_too_long(void **state)
{
	static char *const argv[] = { "true", NULL };
	struct jobrec j = { 0x1234, "local", 1, argv, 0, NULL };
	char dir[] = "/tmp/coll-test-jobrec-long.XXXXXX", rec[40];

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(setenv("COLL_JOB_DIR", dir, 1), 0);
	assert_int_equal(jobrec_write(&j, rec, sizeof rec), COLL_ETOOBIG);
	assert_int_equal(rmdir(dir), 0);	/* nothing was written in it */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobrec_dir_fresh),
		cmocka_unit_test(test_jobrec_dir_existing),
		cmocka_unit_test(test_jobrec_write_too_long),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
