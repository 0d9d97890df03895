/*
 * --drain: each host with an ERROR finding is drained in Slurm, with a
 * Reason that names the finding ("collcheck: Xid 79 on GPU 3 (0000:3b:00),
 * 1 time"), through `scontrol update NodeName=... State=DRAIN Reason=...`
 * run by execve with its argv (never a shell). A host collcheck could not
 * check, and a host with warnings only, is never drained: a job would
 * otherwise lose nodes for a failed SSH login or a slow link. Neither is a
 * host whose ERROR every checked host shares on a fact compared across hosts
 * (two driver versions, no majority): that names no host in particular.
 *
 * The Reason comes from findings that quote kernel log lines: it is cut to
 * DRAIN_REASON_MAX bytes and every byte outside printable ASCII, and every
 * quote and backslash, becomes '?', so that nothing from the log reaches
 * scontrol's parser or the terminal of whoever reads sinfo.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "err.h"
#include "hostlist.h"
#include "launch.h"
#include "msg.h"
#include "xmalloc.h"

extern char **environ;

#define DRAIN_HEAD_MIN 20	/* a finding's head ends at its first ": " past this many bytes */
#define DRAIN_NODE_MAX 64	/* bytes of a node name */
#define DRAIN_OUT_MAX 4096	/* bytes of scontrol's words kept */
#define DRAIN_MS 30000		/* scontrol's answer awaited this long */

/*
 * Where the finding's head ends: its first ": " outside parentheses, past
 * DRAIN_HEAD_MIN and after a word, where the findings turn from what was
 * found to what it means ("Xid 79 on GPU 3 (0000:3b:00), 1 time: GPU has ...").
 */
static size_t
drain_head(const char *msg)
{
	int depth = 0;
	size_t i;

	for (i = 0; msg[i] != '\0'; i++) {
		if (msg[i] == '(')
			depth++;
		else if (msg[i] == ')' && depth > 0)
			depth--;
		else if (msg[i] == ':' && msg[i + 1] == ' ' && depth == 0 && i >= DRAIN_HEAD_MIN &&
		    !(msg[i - 1] >= '0' && msg[i - 1] <= '9'))	/* "is 1: DOWN" is a value */
			return i;
	}
	return i;
}

/* Printable ASCII that scontrol takes as it is; anything else '?'. */
static char
drain_clean_byte(unsigned char c)
{
	return c < 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '`' || c == '\\' ? '?' :
	    (char)c;
}

void
drain_reason(const char *msg, int more, char *out, size_t len)
{
	static const char pre[] = "collcheck: ";
	char tail[40] = "";
	size_t cap = len - 1 < DRAIN_REASON_MAX ? len - 1 : DRAIN_REASON_MAX, head = drain_head(msg),
	    room, n = 0, cut;

	if (len < sizeof pre) {	/* no room for a reason: none */
		if (len > 0)
			out[0] = '\0';
		return;
	}
	if (more > 0)
		snprintf(tail, sizeof tail, " (+%d more)", more);
	room = cap > sizeof pre - 1 + strlen(tail) ? cap - (sizeof pre - 1) - strlen(tail) : 0;
	cut = head;
	if (head > room) {
		/* At a word's end when one is near, then "...". */
		cut = room >= 3 ? room - 3 : 0;
		for (size_t i = cut; i > room / 2; i--)
			if (msg[i] == ' ') {
				cut = i;
				break;
			}
	}
	while (cut > 0 && strchr(" .,;", msg[cut - 1]) != NULL)
		cut--;
	n = (size_t)snprintf(out, len, "%s", pre);
	for (size_t i = 0; i < cut && n < len - 1; i++)
		out[n++] = drain_clean_byte((unsigned char)msg[i]);
	out[n] = '\0';
	if (cut < head)
		snprintf(out + n, len - n, "...");
	n = strlen(out);
	snprintf(out + n, len - n, "%s", tail);
}

int
drain_node_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > DRAIN_NODE_MAX || name[0] == '-' || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
		    name[i]) == NULL)
			return 0;
	return 1;
}

/* Every checked host has an ERROR on this compared fact: it names none of them. */
static int
drain_shared(const struct check_result *r, const char *key)
{
	int live = 0, with = 0;

	if (check_identity_key(key))
		return 0;
	for (int h = 0; h < r->nhosts; h++) {
		int has = 0;

		if (r->hosts[h].rank < 0)
			continue;
		live++;
		for (int i = 0; i < r->nfind && !has; i++)
			has = r->find[i].host == h && r->find[i].sev == SEV_ERROR &&
			    strcmp(r->find[i].key, key) == 0;
		with += has;
	}
	return live >= 2 && with == live;
}

/* Read scontrol's words to its end or the deadline; 0, or -1 if cut short. */
static int
drain_read(int fd, char *buf, size_t cap)
{
	uint64_t until = clock_now_ms() + DRAIN_MS;
	size_t n = 0;
	ssize_t k;
	char sink[256];	/* past cap: read on, so that scontrol never blocks writing */

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		uint64_t now = clock_now_ms();

		if (now >= until)
			break;
		if (poll(&p, 1, (int)(until - now)) < 0 && errno != EINTR)
			break;
		if (p.revents == 0)
			continue;
		k = n < cap - 1 ? read(fd, buf + n, cap - 1 - n) : read(fd, sink, sizeof sink);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			buf[n] = '\0';
			return 0;
		}
		if (n < cap - 1)
			n += (size_t)k;
	}
	buf[n] = '\0';
	return -1;
}

/* scontrol's first line, cleaned, for a message. */
static void
drain_first_line(char *buf)
{
	char *nl;

	while (*buf == '\n')
		memmove(buf, buf + 1, strlen(buf));
	if ((nl = strchr(buf, '\n')) != NULL)
		*nl = '\0';
	if (strlen(buf) > 300)
		buf[300] = '\0';
	msg_clean(buf);
}

/* scontrol update NodeName=node State=DRAIN Reason=reason: 0, or -1 with err. */
static int
drain_scontrol(const char *node, const char *reason, char *err, size_t len)
{
	char path[4096], nn[DRAIN_NODE_MAX + 16], rs[DRAIN_REASON_MAX + 16], out[DRAIN_OUT_MAX];
	char *argv[] = { "scontrol", "update", nn, "State=DRAIN", rs, NULL };
	int p[2], status = -1, r;
	pid_t pid;

	if (launch_resolve("scontrol", path, sizeof path) != COLL_OK) {
		snprintf(err, len, "--drain: scontrol is not in PATH (install slurm-client, or run "
		    "where Slurm's commands are)");
		return -1;
	}
	snprintf(nn, sizeof nn, "NodeName=%s", node);
	snprintf(rs, sizeof rs, "Reason=%s", reason);
	if (pipe2(p, O_CLOEXEC) == -1 || (pid = fork()) < 0) {
		snprintf(err, len, "--drain: cannot start scontrol: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execve(path, argv, environ);
		_exit(127);
	}
	close(p[1]);
	r = drain_read(p[0], out, sizeof out);
	close(p[0]);
	if (r != 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	drain_first_line(out);
	if (r != 0)
		snprintf(err, len, "--drain: scontrol did not answer in %d s draining %s: is "
		    "slurmctld up?", DRAIN_MS / 1000, node);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		snprintf(err, len, "--drain: scontrol could not drain %s (%s): run collcheck as root "
		    "or SlurmUser where scontrol reaches slurmctld", node, out[0] ? out :
		    "it said nothing");
	return r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/*
 * Is a finding of this key the node's own fault? A job's or a shell's
 * settings (NCCL_* variables, nccl.conf files) differ by who started
 * collcheck, not by the node: they are reported, never drained for; nor is
 * collcheck's own failure on a host.
 */
int
drain_node_fault(const char *key)
{
	return strncmp(key, "env.", 4) != 0 && strncmp(key, "ncclconf.", 9) != 0 &&
	    strcmp(key, "collcheck") != 0;
}

/* Host h's first ERROR finding that names it, and how many more it has; -1: none. */
static int
drain_finding(const struct check_result *r, int h, int *more)
{
	int first = -1;

	*more = 0;
	for (int i = 0; i < r->nfind; i++) {
		if (r->find[i].host != h || r->find[i].sev != SEV_ERROR ||
		    !drain_node_fault(r->find[i].key) || drain_shared(r, r->find[i].key))
			continue;
		if (first < 0)
			first = i;
		else
			++*more;
	}
	return first;
}

static const char drain_badname[] = "its name is not one Slurm node's";

/* Why host h is not drained, or NULL when it is to be. */
static const char *
drain_why_not(const struct check_result *r, int h, int f, const char *node)
{
	if (r->hosts[h].rank < 0)
		return "unreachable (collcheck could not check it)";
	if (f < 0 && r->hosts[h].sev == SEV_ERROR) {
		for (int i = 0; i < r->nfind; i++)
			if (r->find[i].host == h && r->find[i].sev == SEV_ERROR &&
			    drain_node_fault(r->find[i].key))
				return "its errors are every host's (no majority)";
		return "its errors are settings (NCCL_*, nccl.conf) or collcheck's own, not the "
		    "node's";
	}
	if (f < 0)
		return r->hosts[h].sev == SEV_WARN ? "warnings only" : "no ERROR finding";
	if (!drain_node_ok(node))
		return drain_badname;
	return NULL;
}

int
drain_hosts(const struct check_result *r, json_t **out)
{
	char reason[DRAIN_REASON_MAX + 1], err[512];
	int code = EXIT_OK, more, scontrol_failed = 0;

	*out = json_array();
	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];
		const char *node = ch->node != NULL ? ch->node : ch->name, *why;
		int f = ch->rank >= 0 ? drain_finding(r, h, &more) : -1;
		json_t *o = json_pack("{s:s, s:s}", "host", ch->name, "node", node);

		why = drain_why_not(r, h, f, node);
		if (why == NULL && scontrol_failed)
			why = "scontrol failed on a host before";
		if (why == NULL) {
			drain_reason(r->find[f].msg, more, reason, sizeof reason);
			json_object_set_new(o, "reason", json_string(reason));
			if (drain_scontrol(node, reason, err, sizeof err) != 0) {
				fprintf(stderr, "collcheck: %s\n", err);
				code = EXIT_CANNOT;
				scontrol_failed = 1;
				why = "scontrol failed";
			}
		}
		json_object_set_new(o, "drained", json_boolean(why == NULL));
		if (why != NULL)
			json_object_set_new(o, "why", json_string(why));
		if (why == drain_badname) {
			char q[MSG_QUOTE_LEN(DRAIN_NODE_MAX)];

			fprintf(stderr, "collcheck: --drain: not draining %s: %s\n", msg_quote(q, node,
			    strlen(node), DRAIN_NODE_MAX), why);
			code = EXIT_CANNOT;
		}
		json_array_append_new(*out, o);
	}
	return code;
}

/* The hosts of one reason not to drain, folded: "drain: node[01,03] not drained: why". */
static void
drain_print_why(const json_t *drained, const char *why, char *done)
{
	size_t n = json_array_size(drained), k = 0;
	const char **names = xcalloc(n + 1, sizeof *names);
	char folded[2048];

	for (size_t i = 0; i < n; i++) {
		const char *w = json_string_value(json_object_get(json_array_get(drained, i), "why"));

		if (!done[i] && w != NULL && strcmp(w, why) == 0) {
			names[k++] = json_string_value(json_object_get(json_array_get(drained, i),
			    "node"));
			done[i] = 1;
		}
	}
	if (hostlist_fold(names, (int)k, folded, sizeof folded) != 0)
		snprintf(folded, sizeof folded, "%zu hosts", k);
	msg_clean(folded);	/* a name that is no node's may hold anything */
	printf("drain: %s not drained: %s\n", folded, why);
	free(names);
}

void
drain_print(const json_t *drained)
{
	size_t n = json_array_size(drained);
	char *done = xcalloc(n + 1, 1);

	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(drained, i);

		if (json_is_true(json_object_get(o, "drained"))) {
			printf("drain: %s drained (%s)\n", json_string_value(json_object_get(o, "node")),
			    json_string_value(json_object_get(o, "reason")));
			done[i] = 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!done[i])
			drain_print_why(drained, json_string_value(json_object_get(
			    json_array_get(drained, i), "why")), done);
	free(done);
}
