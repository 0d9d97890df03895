/*
 * NCCL's RAS service (2.24 on): every NCCL process runs it, and the first
 * on a host answers on NCCL_RAS_ADDR (localhost:28028) for the whole job.
 * collstack asks it what ncclras asks (VERBOSE STATUS, as JSON where the
 * server offers it, else its text report) and takes from the answer, per
 * communicator, each rank's count of collectives launched, the ranks that
 * did not answer, and each rank's async error and abort flag.
 */
#ifndef COLL_TRIAGE_RAS_H
#define COLL_TRIAGE_RAS_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#define RAS_DEFAULT "localhost:28028"
#define RAS_MAX (8u << 20)	/* bytes of a report read */

/*
 * The report of the RAS service at addr ("host:port"), malloc'ed, NUL-
 * terminated; NULL with why when there is none (nothing listens: skipped).
 * Only a listener held by one of the job's processes here (job, njob) is
 * asked: another's is not connected to, and why begins "ignored: ".
 */
char *ras_fetch(const char *addr, const pid_t *job, int njob, int timeout_ms, char *why,
    size_t whylen);

/*
 * A report (JSON or text) as {"version", "comms": [{"hash", "size",
 * "missing": [rank...], "ranks": [{"rank", "pid", "host", "async_error",
 * "abort", "counts": {op: n}}]}]}; NULL with why if it is neither.
 */
json_t *ras_parse(const char *buf, size_t len, char *why, size_t whylen);

/* Fetch and parse: the report of the job's service at addr, or NULL with why. */
json_t *ras_query(const char *addr, const pid_t *job, int njob, int timeout_ms, char *why,
    size_t whylen);

#endif
