/*
 * NCCL RAS's MONITOR stream (NCCL 2.29 on; `ncclras -m`): after CLIENT
 * PROTOCOL, SET FORMAT json and MONITOR, the service sends an event as it
 * happens, for as long as the job lives: a multi-line JSON object each
 * ({"timestamp", "group", "event": "PEER_DEAD", "peer": {"host", "pid",
 * "cuda_devs": [...]} or {"addr"}, "details"}), or in the text format one
 * line each ("[2025-12-19 13:07:07] PEER_DEAD: Process 1524345 on node
 * 172.16.64.245 managing GPU 1"). Both are read.
 *
 * The bytes are another program's, from a port any local user could hold:
 * every line and object is bounded, a record not understood is counted and
 * passed over (NCCL writes "details" into its JSON unescaped, so a quote in
 * it makes the object invalid), and every field kept is printable.
 */
#ifndef COLL_TRIAGE_RAS_MONITOR_H
#define COLL_TRIAGE_RAS_MONITOR_H

#include <stddef.h>
#include <sys/types.h>

#define RASMON_LINE 1024	/* bytes of one line kept; a longer line is passed over */
#define RASMON_OBJ 4096		/* bytes of one JSON event (NCCL's are under 2048) */

enum rasmon_kind {
	RASMON_OTHER = 0,	/* an event this reader does not judge (PEER_CONNECTING, ...) */
	RASMON_PEER_DEAD = 1,	/* a process of the job was declared dead */
	RASMON_PEER_NEW = 2,	/* a process joined */
};

struct rasmon_event {
	int kind;
	char name[32];		/* NCCL's word for it ("PEER_DEAD") */
	char when[24];		/* the service's local time, "2025-12-19 13:07:07"; "" none */
	char host[64];		/* the peer's host, or its address when the service has no more */
	int pid;		/* the peer's process; -1 unknown */
	char gpus[32];		/* its CUDA devices, "0,1"; "" unknown */
};

struct rasmon {
	char line[RASMON_LINE + 1];
	size_t llen;
	int overlong;		/* the line under way is past RASMON_LINE: passed over */
	char obj[RASMON_OBJ + 1];
	size_t olen;
	int in_obj;		/* inside a multi-line JSON event */
	unsigned long bad;	/* records not understood (or over a bound) */
	unsigned long dropped;	/* events read past what the caller had room for */
};

void rasmon_init(struct rasmon *m);
/*
 * Read len more bytes of the stream: each event completed by them into out
 * (at most max; the rest counted in dropped), the count returned.
 */
int rasmon_feed(struct rasmon *m, const char *data, size_t len, struct rasmon_event *out,
    int max);

/*
 * Ask the job's RAS service at addr ("host:port") to monitor: the socket,
 * with the bytes that came after its "OK" in rest (restlen of restcap);
 * -1 with why. As for ras_fetch, only a listener held by one of the job's
 * processes (job, njob) is spoken to ("ignored: ..." otherwise); a service
 * without MONITOR (NCCL before 2.29) is said as such.
 */
int ras_monitor_open(const char *addr, const pid_t *job, int njob, int timeout_ms, char *rest,
    size_t restcap, size_t *restlen, char *why, size_t whylen);

#endif
