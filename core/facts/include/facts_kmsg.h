/*
 * The kernel log's lines, parsed and sorted into the events collcheck looks
 * for: NVIDIA Xid and SXid, PCIe AER, NIC link flaps, resets and transmit
 * timeouts. A line is a /dev/kmsg record ("prio,seq,usec,flags;text"), a
 * dmesg line ("[   12.345678] text") or bare text. The log is another
 * party's text: every length is bounded and a device name keeps only the
 * bytes a fact key may hold.
 */
#ifndef COLL_FACTS_KMSG_H
#define COLL_FACTS_KMSG_H

#include <stddef.h>
#include <stdint.h>

#define KMSG_TEXT_MAX 512	/* a record's text past this is cut */
#define KMSG_DEV_MAX 48
#define KMSG_WHAT_MAX 16

struct kmsg_rec {
	int64_t usec;			/* since boot; -1: the line has no time */
	char text[KMSG_TEXT_MAX];	/* NUL-terminated, cut at the first NUL or newline */
};

enum kmsg_kind { KMSG_NONE, KMSG_XID, KMSG_SXID, KMSG_AER, KMSG_NIC };

struct kmsg_event {
	int kind;
	char dev[KMSG_DEV_MAX];		/* PCI address or interface: [A-Za-z0-9_.:-] only */
	/* Xid/SXid: its number; AER: corrected, nonfatal, fatal; NIC: link_down,
	 * link_up, port_state, reset, tx_timeout. */
	char what[KMSG_WHAT_MAX];
};

/* 0, or -1 for a line that is no record (empty, or a /dev/kmsg continuation). */
int facts_kmsg_parse(const char *line, size_t len, struct kmsg_rec *r);
/* The event of a record's text (its kind; KMSG_NONE and ev->kind 0 for the rest). */
int facts_kmsg_classify(const char *text, struct kmsg_event *ev);

#endif
