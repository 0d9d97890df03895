/*
 * NCCL RAS's MONITOR stream read into events (ras_monitor.h): lines split
 * as they come, a JSON event gathered from its "{" line to its "}" line,
 * a text event read from its one line. Linear in the bytes, bounded in the
 * memory it keeps whatever the service sends.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "ras_monitor.h"

void
rasmon_init(struct rasmon *m)
{
	memset(m, 0, sizeof *m);
}

/* Keep s in buf when every byte of it is in ok (a word, a time): else "" and 0. */
static int
rasmon_keep(char *buf, size_t len, const char *s, const char *ok)
{
	buf[0] = '\0';
	if (s == NULL || strlen(s) >= len || strspn(s, ok) != strlen(s))
		return 0;
	memcpy(buf, s, strlen(s) + 1);
	return 1;
}

#define RASMON_WORD "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz0123456789"
#define RASMON_TIME "0123456789-: "
#define RASMON_HOST RASMON_WORD ".-:[]%<>"
#define RASMON_GPUS "0123456789,"

static void
rasmon_kind(struct rasmon_event *e)
{
	e->kind = strcmp(e->name, "PEER_DEAD") == 0 ? RASMON_PEER_DEAD :
	    strcmp(e->name, "PEER_NEW") == 0 ? RASMON_PEER_NEW : RASMON_OTHER;
}

/* A JSON event's peer: host (or addr), pid, CUDA devices. */
static void
rasmon_peer(json_t *peer, struct rasmon_event *e)
{
	json_t *pid = json_object_get(peer, "pid"), *d;
	size_t i, n = 0;

	if (!rasmon_keep(e->host, sizeof e->host, json_string_value(json_object_get(peer, "host")),
	    RASMON_HOST))
		rasmon_keep(e->host, sizeof e->host,
		    json_string_value(json_object_get(peer, "addr")), RASMON_HOST);
	if (json_is_integer(pid) && json_integer_value(pid) > 0 &&
	    json_integer_value(pid) <= 0x7fffffff)
		e->pid = (int)json_integer_value(pid);
	json_array_foreach(json_object_get(peer, "cuda_devs"), i, d) {
		json_int_t v = json_is_integer(d) ? json_integer_value(d) : -1;

		if (v < 0 || v > 63 || n + 4 >= sizeof e->gpus)
			break;
		n += (size_t)snprintf(e->gpus + n, sizeof e->gpus - n, "%s%d", n ? "," : "", (int)v);
	}
}

/* One JSON event; 0 read, -1 not one. */
static int
rasmon_json(const char *buf, size_t len, struct rasmon_event *e)
{
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	int r = -1;

	memset(e, 0, sizeof *e);
	e->pid = -1;
	if (json_is_object(o) && rasmon_keep(e->name, sizeof e->name,
	    json_string_value(json_object_get(o, "event")), RASMON_WORD)) {
		rasmon_keep(e->when, sizeof e->when,
		    json_string_value(json_object_get(o, "timestamp")), RASMON_TIME);
		rasmon_peer(json_object_get(o, "peer"), e);
		rasmon_kind(e);
		r = 0;
	}
	json_decref(o);
	return r;
}

/* One text event: "[TIME] EVENT: Process PID on node HOST managing GPU[s] N" or "...: ADDR". */
static int
rasmon_text(const char *line, struct rasmon_event *e)
{
	char when[24], name[32], host[64], gpus[32] = "";
	const char *p;
	int at = 0, k = 0, pid;

	memset(e, 0, sizeof *e);
	e->pid = -1;
	if (sscanf(line, "[%23[0-9: -]] %31[A-Za-z0-9_]:%n", when, name, &at) != 2 || at == 0)
		return -1;
	rasmon_keep(e->when, sizeof e->when, when, RASMON_TIME);
	rasmon_keep(e->name, sizeof e->name, name, RASMON_WORD);
	if (sscanf(line + at, " Process %d on node %63s managing GPU%n", &pid, host, &k) == 2 &&
	    k > 0 && pid > 0) {
		p = line + at + k;
		if (sscanf(p + (*p == 's'), " %31[0-9,]", gpus) != 1)
			gpus[0] = '\0';
		e->pid = pid;
		rasmon_keep(e->host, sizeof e->host, host, RASMON_HOST);
		rasmon_keep(e->gpus, sizeof e->gpus, gpus, RASMON_GPUS);
	} else if (sscanf(line + at, " %63s", host) == 1) {
		rasmon_keep(e->host, sizeof e->host, host, RASMON_HOST);
	}
	rasmon_kind(e);
	return 0;
}

/* A whole line (no newline): an event into *e (1), none (0). */
static int
rasmon_line(struct rasmon *m, const char *line, size_t len, struct rasmon_event *e)
{
	if (m->in_obj) {
		if (m->olen + len + 1 > RASMON_OBJ) {
			m->in_obj = 0;
			m->bad++;
			return 0;
		}
		memcpy(m->obj + m->olen, line, len);
		m->olen += len;
		m->obj[m->olen++] = '\n';
		if (len != 1 || line[0] != '}')
			return 0;
		m->in_obj = 0;
		if (rasmon_json(m->obj, m->olen, e) == 0)
			return 1;
		m->bad++;
		return 0;
	}
	if (len > 0 && line[0] == '{') {
		/* One line may hold a whole event; else it opens one. */
		if (line[len - 1] == '}' && rasmon_json(line, len, e) == 0)
			return 1;
		memcpy(m->obj, line, len);
		m->obj[len] = '\n';
		m->olen = len + 1;
		m->in_obj = 1;
		return 0;
	}
	if (len > 0 && line[0] == '[') {
		if (rasmon_text(line, e) == 0)
			return 1;
		m->bad++;
	}
	return 0;	/* "OK", a blank line, a banner: nothing */
}

int
rasmon_feed(struct rasmon *m, const char *data, size_t len, struct rasmon_event *out, int max)
{
	struct rasmon_event e;
	int n = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = data[i];

		if (ch != '\n') {
			if (m->llen < RASMON_LINE)
				m->line[m->llen++] = ch;
			else
				m->overlong = 1;
			continue;
		}
		if (m->llen > 0 && m->line[m->llen - 1] == '\r')
			m->llen--;
		m->line[m->llen] = '\0';
		if (m->overlong)
			m->bad++;
		else if (memchr(m->line, '\0', m->llen) == NULL &&
		    rasmon_line(m, m->line, m->llen, &e) == 1) {
			if (n < max)
				out[n++] = e;
			else
				m->dropped++;
		}
		m->llen = 0;
		m->overlong = 0;
	}
	return n;
}
