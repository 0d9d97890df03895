/*
 * The pieces under the launchers: shell quoting (checked by a real sh),
 * the ssh_config reader, line splitting, per-rank variables, rank folding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "ranges.h"
#include "launch.h"
#include "linebuf.h"
#include "shquote.h"
#include "sshconf.h"
#include "uid.h"

static const char *const hostile[] = {
	"plain", "a b", "it's", "''", "\"q\"", "$(touch /nonexistent/x)", "`id`", "a;b|c&d",
	"*", "~", "-n", "", "line\nbreak", "\\", "$HOME", "!x", "tab\there",
};

/* Every word, quoted and handed to sh, comes back byte for byte. */
static void
test_shquote_roundtrip(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
		struct shbuf b = { 0 };
		char out[256] = "";
		size_t n;
		FILE *p;

		shquote_raw(&b, "printf %s");
		shquote_word(&b, hostile[i]);
		p = popen(b.p, "r");
		assert_non_null(p);
		n = fread(out, 1, sizeof out - 1, p);
		out[n] = '\0';
		assert_int_equal(pclose(p), 0);
		assert_string_equal(out, hostile[i]);
		shquote_free(&b);
	}
}

static void
test_shquote_words_are_separate(void **state)
{
	struct shbuf b = { 0 };

	(void)state;
	shquote_word(&b, "a");
	shquote_word(&b, "b c");
	shquote_word(&b, "d'e");
	assert_string_equal(b.p, "'a' 'b c' 'd'\\''e'");
	shquote_free(&b);
}

static const char conf[] =
	"# comment\n"
	"Host *.gpu !bad.gpu\n"
	"  User gpuuser\n"
	"  Port 2222\n"
	"Host node?? \n"
	"  HostName %h.cluster\n"
	"  IdentityFile ~/.ssh/node_key\n"
	"  IdentityFile=/etc/k2\n"
	"  StrictHostKeyChecking accept-new\n"
	"Match exec \"true\"\n"
	"  User matched\n"
	"Host *\n"
	"  User fallback\n"
	"  UserKnownHostsFile /tmp/kh\n"
	"  ConnectTimeout 7\n"
	"  StrictHostKeyChecking no\n";

static const struct {
	const char *host, *user, *hostname;
	int port, strict, nids;
} conf_rows[] = {
	{ "a.gpu", "gpuuser", "a.gpu", 2222, SSH_STRICT_NO, 3 },
	{ "bad.gpu", "fallback", "bad.gpu", 22, SSH_STRICT_NO, 3 },
	{ "node01", "fallback", "node01.cluster", 22, SSH_STRICT_ACCEPT_NEW, 2 },
	{ "node001", "fallback", "node001", 22, SSH_STRICT_NO, 3 },
};

static void
test_sshconf_first_value_wins(void **state)
{
	(void)state;
	setenv("HOME", "/home/t", 1);
	for (size_t i = 0; i < sizeof conf_rows / sizeof *conf_rows; i++) {
		struct sshconf sc = { 0 };

		sshconf_apply_text(&sc, conf_rows[i].host, conf);
		sshconf_defaults(&sc, conf_rows[i].host);
		assert_string_equal(sc.user, conf_rows[i].user);
		assert_string_equal(sc.hostname, conf_rows[i].hostname);
		assert_int_equal(sc.port, conf_rows[i].port);
		assert_int_equal(sc.strict, conf_rows[i].strict);
		assert_int_equal(sc.nids, conf_rows[i].nids);
		assert_string_equal(sc.known_hosts, "/tmp/kh");
		assert_int_equal(sc.connect_timeout, 7);
		assert_non_null(strstr(sc.note, "Match"));
	}
}

static const struct {
	const char *pat, *host;
	int match;
} glob_rows[] = {
	{ "node*", "node01", 1 }, { "node??", "node01", 1 }, { "node??", "node001", 0 },
	{ "*", "", 1 }, { "", "", 1 }, { "", "a", 0 }, { "*.gpu", "a.gpu", 1 },
	{ "*.gpu", "a.cpu", 0 }, { "N*E", "node", 1 }, { "a*b*c", "aXbYc", 1 },
	{ "a*b*c", "aXbYd", 0 }, { "*a*", "bab", 1 },
};

static void
test_sshconf_glob(void **state)
{
	char host[4001];

	(void)state;
	for (size_t i = 0; i < sizeof glob_rows / sizeof *glob_rows; i++)
		assert_int_equal(sshconf_match(glob_rows[i].pat, glob_rows[i].host),
		    glob_rows[i].match);
	/* Many stars against a long near-miss must not take exponential time. */
	memset(host, 'a', 4000);
	host[4000] = '\0';
	assert_int_equal(sshconf_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", host), 0);
}

static void
test_sshconf_identity_expansion(void **state)
{
	struct sshconf sc = { 0 };

	(void)state;
	setenv("HOME", "/home/t", 1);
	sshconf_apply_text(&sc, "node07", conf);
	assert_string_equal(sc.ids[0], "/home/t/.ssh/node_key");
	assert_string_equal(sc.ids[1], "/etc/k2");
	sshconf_apply_text(&sc, "x", "");
	memset(&sc, 0, sizeof sc);
	sshconf_defaults(&sc, "x");
	assert_string_equal(sc.ids[0], "/home/t/.ssh/id_ed25519");
	assert_string_equal(sc.known_hosts, "/home/t/.ssh/known_hosts");
	assert_int_equal(sc.strict, SSH_STRICT_YES);
}

struct lines {
	int n;
	char got[8][128];
};

static void
collect(void *arg, const char *line, size_t len)
{
	struct lines *l = arg;

	if (l->n < 8)
		snprintf(l->got[l->n], sizeof l->got[0], "%.*s", (int)len, line);
	l->n++;
}

static void
test_linebuf_whole_lines_only(void **state)
{
	struct linebuf lb = { 0 };
	struct lines l = { 0 };

	(void)state;
	linebuf_feed(&lb, "ab", 2, collect, &l);
	assert_int_equal(l.n, 0);
	linebuf_feed(&lb, "c\nde\n\nf", 7, collect, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.got[0], "abc");
	assert_string_equal(l.got[1], "de");
	assert_string_equal(l.got[2], "");
	linebuf_flush(&lb, collect, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.got[3], "f");
	linebuf_free(&lb);
}

static void
count_bytes(void *arg, const char *line, size_t len)
{
	(void)line;
	*(size_t *)arg += len;
}

static void
test_linebuf_long_line_keeps_every_byte(void **state)
{
	struct linebuf lb = { 0 };
	size_t total = 0, n = 3 * LINEBUF_MAX + 17;
	char *big = malloc(n);

	(void)state;
	memset(big, 'x', n);
	linebuf_feed(&lb, big, n, count_bytes, &total);
	linebuf_flush(&lb, count_bytes, &total);
	assert_int_equal(total, n);
	linebuf_free(&lb);
	free(big);
}

static const char *
env_get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (char **e = env; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static void
test_env_local_ranks_follow_hosts(void **state)
{
	static const int rank_host[] = { 0, 1, 0, 1, 1 };
	struct coll_uid uid = { .version = 1, .jobid = 0xab };
	struct launch_opts o = { .nranks = 5, .uid = &uid, .master_addr = "10.0.0.1",
	    .master_port = 29500, .rank_host = rank_host };
	static const char *want_lr[] = { "0", "0", "1", "1", "2" };
	static const char *want_ls[] = { "2", "3", "2", "3", "3" };

	(void)state;
	for (int r = 0; r < 5; r++) {
		int lr, ls;
		char **env;

		launch_place(&o, r, &lr, &ls);
		env = launch_env_vars(&o, r, lr, ls, "coll1:x");
		assert_string_equal(env_get(env, "LOCAL_RANK"), want_lr[r]);
		assert_string_equal(env_get(env, "LOCAL_WORLD_SIZE"), want_ls[r]);
		assert_string_equal(env_get(env, "COLL_LOCAL_RANK"), want_lr[r]);
		assert_string_equal(env_get(env, "WORLD_SIZE"), "5");
		assert_string_equal(env_get(env, "MASTER_ADDR"), "10.0.0.1");
		assert_string_equal(env_get(env, "COLL_UNIQUE_ID"), "coll1:x");
		assert_string_equal(env_get(env, "COLL_JOBID"), "00000000000000ab");
		launch_env_free(env);
	}
}

/* collrun -x: every backend builds a rank's variables here, coll's own first and kept. */
static void
test_env_user_variables_reach_every_rank(void **state)
{
	static char *const user[] = { "NCCL_DEBUG=INFO", "COLL_RANK=9", "EMPTY=", NULL };
	struct coll_uid uid = { .version = 1, .jobid = 0xab };
	struct launch_opts o = { .nranks = 2, .uid = &uid, .master_addr = "10.0.0.1",
	    .env = user };
	char **env = launch_env_vars(&o, 1, 1, 2, "coll1:x");
	int n = 0;

	(void)state;
	assert_string_equal(env_get(env, "NCCL_DEBUG"), "INFO");
	assert_string_equal(env_get(env, "EMPTY"), "");
	assert_string_equal(env_get(env, "COLL_RANK"), "1");
	for (char **e = env; *e != NULL; e++)
		n += strncmp(*e, "COLL_RANK=", 10) == 0;
	assert_int_equal(n, 1);
	launch_env_free(env);
}

static void
test_fold_ranks(void **state)
{
	static const int a[] = { 0, 1, 2, 3, 7, 9, 10 }, b[] = { 5 };
	char out[64];

	(void)state;
	ranges_fold(a, 7, out, sizeof out);
	assert_string_equal(out, "0-3,7,9-10");
	ranges_fold(b, 1, out, sizeof out);
	assert_string_equal(out, "5");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shquote_roundtrip),
		cmocka_unit_test(test_shquote_words_are_separate),
		cmocka_unit_test(test_sshconf_first_value_wins),
		cmocka_unit_test(test_sshconf_identity_expansion),
		cmocka_unit_test(test_sshconf_glob),
		cmocka_unit_test(test_linebuf_whole_lines_only),
		cmocka_unit_test(test_linebuf_long_line_keeps_every_byte),
		cmocka_unit_test(test_env_local_ranks_follow_hosts),
		cmocka_unit_test(test_env_user_variables_reach_every_rank),
		cmocka_unit_test(test_fold_ranks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
