/*
 * Kernel log lines into records and events (facts_kmsg.h). Matching is by
 * the phrases the drivers print (nvidia's NVRM and nvswitch, the PCIe port
 * driver's AER, mlx5, Intel's NIC drivers, the net watchdog); a line that
 * matches none is no event. Every copy is bounded by its buffer.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "facts_kmsg.h"

/* Copy up to the first NUL or newline, cut to the buffer. */
static void
facts_kmsg_copy(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && n + 1 < cap && s[n] != '\0' && s[n] != '\n')
		n++;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* "prio,seq,usec,flags;": the time and the text after ';', or -1. */
static int
facts_kmsg_record(const char *line, size_t len, struct kmsg_rec *r)
{
	const char *semi = memchr(line, ';', len > 64 ? 64 : len);
	int64_t v[3] = { 0, 0, 0 };
	size_t i = 0;
	int field = 0;

	if (semi == NULL)
		return -1;
	for (; line + i < semi && field < 3; i++) {
		char c = line[i];

		if (c == ',')
			field++;
		else if (c >= '0' && c <= '9' && v[field] < INT64_MAX / 10 - 10)
			v[field] = v[field] * 10 + (c - '0');
		else if (!(c >= '0' && c <= '9'))
			return -1;
	}
	if (field < 3)
		return -1;	/* no flags field: not a record */
	r->usec = v[2];
	/*
	 * The priority's facility (v[0] >> 3) is the kernel's (0) only for what
	 * the kernel printed: a record written to /dev/kmsg from user space
	 * (root in a container, a daemon passing on text) never has it, so its
	 * text, whatever it reads like, is no event.
	 */
	if (v[0] >> 3 != 0) {
		r->text[0] = '\0';
		return 0;
	}
	facts_kmsg_copy(r->text, sizeof r->text, semi + 1, len - (size_t)(semi + 1 - line));
	return 0;
}

/* "[ 1234.567890] text": seconds since boot. */
static int
facts_kmsg_dmesg(const char *line, size_t len, struct kmsg_rec *r)
{
	size_t i = 1;
	int64_t s = 0, us = 0, scale = 100000;

	while (i < len && line[i] == ' ')
		i++;
	if (i >= len || !isdigit((unsigned char)line[i]))
		return -1;
	for (; i < len && isdigit((unsigned char)line[i]); i++)
		if (s < INT64_MAX / 10000000)
			s = s * 10 + (line[i] - '0');
	if (i < len && line[i] == '.')
		for (i++; i < len && isdigit((unsigned char)line[i]); i++, scale /= 10)
			us += (line[i] - '0') * scale;
	if (i >= len || line[i] != ']')
		return -1;
	i++;
	if (i < len && line[i] == ' ')
		i++;
	r->usec = s * 1000000 + us;
	facts_kmsg_copy(r->text, sizeof r->text, line + i, len - i);
	return 0;
}

int
facts_kmsg_parse(const char *line, size_t len, struct kmsg_rec *r)
{
	r->usec = -1;
	r->text[0] = '\0';
	/* A /dev/kmsg continuation (" KEY=value") belongs to the record above. */
	if (len == 0 || line[0] == ' ' || line[0] == '\n')
		return -1;
	if (line[0] == '[' && facts_kmsg_dmesg(line, len, r) == 0)
		return 0;
	if (isdigit((unsigned char)line[0]) && facts_kmsg_record(line, len, r) == 0)
		return 0;
	r->usec = -1;
	facts_kmsg_copy(r->text, sizeof r->text, line, len);
	return r->text[0] != '\0' ? 0 : -1;
}

static int
facts_kmsg_devchar(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '-';
}

/* The device token from s (up to n bytes): its allowed bytes, or "?". */
static void
facts_kmsg_dev(char *dev, const char *s, size_t n)
{
	size_t o = 0;

	while (n > 0 && (*s == '(' || *s == '['))
		s++, n--;
	while (n > 0 && (s[n - 1] == ':' || s[n - 1] == ',' || s[n - 1] == ')'))
		n--;
	for (size_t i = 0; i < n && o + 1 < KMSG_DEV_MAX; i++)
		if (facts_kmsg_devchar(s[i]))
			dev[o++] = s[i];
	dev[o] = '\0';
	if (o == 0)
		snprintf(dev, KMSG_DEV_MAX, "?");
}

/* The word before position at in text (the interface or address a driver names). */
static void
facts_kmsg_dev_before(char *dev, const char *text, const char *at)
{
	const char *e = at, *b;

	while (e > text && e[-1] == ' ')
		e--;
	b = e;
	while (b > text && b[-1] != ' ')
		b--;
	facts_kmsg_dev(dev, b, (size_t)(e - b));
}

/* The word at s, up to a blank. */
static void
facts_kmsg_dev_at(char *dev, const char *s)
{
	facts_kmsg_dev(dev, s, strcspn(s, " "));
}

/* Hex digits at s, at most max; their count. */
static size_t
facts_kmsg_hex(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && isxdigit((unsigned char)s[n]))
		n++;
	return n;
}

/*
 * A PCI address at s ("0000:3b:00", "0000:3b:00.0"; an 8-digit domain too): its
 * length, or 0. The log holds text other users control (a program's name in a
 * segfault line, a file's): an address of hex digits in its place is what
 * tells the driver's own line from one made to look like it.
 */
static size_t
facts_kmsg_pci(const char *s)
{
	size_t d = facts_kmsg_hex(s, 8), n;

	if ((d != 4 && d != 8) || s[d] != ':' || facts_kmsg_hex(s + d + 1, 3) != 2 ||
	    s[d + 3] != ':' || facts_kmsg_hex(s + d + 4, 3) != 2)
		return 0;
	n = d + 6;
	if (s[n] == '.' && facts_kmsg_hex(s + n + 1, 2) == 1)
		n += 2;
	return n;
}

/*
 * A driver's line about a device: "<driver> <PCI address>[ <interface>]: "
 * (dev_printk, netdev_printk). The text after it, or NULL; the address into pci.
 * A program's name (15 bytes at most, then "[pid]") cannot make it.
 */
static const char *
facts_kmsg_devline(const char *text, char *pci, size_t len)
{
	size_t w = strcspn(text, " :[("), a;
	const char *p = text + w;

	if (w == 0 || *p != ' ' || (a = facts_kmsg_pci(p + 1)) == 0)
		return NULL;
	snprintf(pci, len, "%.*s", (int)a, p + 1);
	p += 1 + a;
	/*
	 * An interface's name (IFNAMSIZ) of the bytes one may hold: not "e[pid]",
	 * the tail of a 15-byte program name "x 0000:3b:00 e" in a segfault line.
	 */
	if (*p == ' ') {
		w = strspn(p + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		    "_.@-");
		if (w == 0 || w > 15)
			return NULL;
		p += 1 + w;
	}
	if (strncmp(p, ": ", 2) != 0)
		return NULL;
	p += 2;
	/* "x 0000:3b:00: [42]: segfault ...": a program named so, not a driver. */
	if (*p == '[' && (w = strspn(p + 1, "0123456789")) > 0 && strncmp(p + 1 + w, "]: ", 3) == 0)
		return NULL;
	return p;
}

/* "... (PCI:0000:3b:00): 79, ...": the address and the number; 0, or -1. */
static int
facts_kmsg_xid(const char *p, struct kmsg_event *ev)
{
	const char *close;
	size_t n = 0;

	if (strncmp(p, "(PCI:", 5) != 0 || (n = facts_kmsg_pci(p + 5)) == 0 ||
	    *(close = p + 5 + n) != ')')
		return -1;
	n = 0;
	facts_kmsg_dev(ev->dev, p + 5, (size_t)(close - p - 5));
	p = close + 1;
	if (*p == ':')
		p++;
	while (*p == ' ')
		p++;
	while (isdigit((unsigned char)p[n]) && n + 1 < sizeof ev->what && n < 6)
		n++;
	if (n == 0)
		return -1;
	memcpy(ev->what, p, n);
	ev->what[n] = '\0';
	return 0;
}

static int
facts_kmsg_aer(const char *text, struct kmsg_event *ev)
{
	char port[KMSG_DEV_MAX];
	const char *aer = facts_kmsg_devline(text, port, sizeof port), *from;
	const char *cls;

	if (aer == NULL || strncmp(aer, "AER: ", 5) != 0 || strstr(aer, "received") == NULL)
		return KMSG_NONE;
	if (strstr(aer, "(Fatal)") != NULL)
		cls = "fatal";
	else if (strstr(aer, "(Non-Fatal)") != NULL)
		cls = "nonfatal";
	else if (strstr(aer, "Corrected") != NULL || strstr(aer, "Correctable") != NULL)
		cls = "corrected";
	else
		return KMSG_NONE;
	snprintf(ev->what, sizeof ev->what, "%s", cls);
	/* The device that sent it ("received: 0000:3b:00.0", "received from ..."), else the port. */
	if (((from = strstr(aer, "received: ")) != NULL && (from += 10)) ||
	    ((from = strstr(aer, "received from ")) != NULL && (from += 14)))
		if (facts_kmsg_pci(from) > 0) {
			facts_kmsg_dev(ev->dev, from, facts_kmsg_pci(from));
			return ev->kind = KMSG_AER;
		}
	snprintf(ev->dev, sizeof ev->dev, "%s", port);
	return ev->kind = KMSG_AER;
}

/* "mlx5_0 port 1 port state changed": the device and port ("mlx5_0:1"), not "1". */
static void
facts_kmsg_port(char *dev, const char *text, const char *at)
{
	const char *p = at;
	char name[KMSG_DEV_MAX], num[8];

	if (strspn(dev, "0123456789") != strlen(dev))
		return;
	if (strlen(dev) >= sizeof num)
		return;
	snprintf(num, sizeof num, "%s", dev);
	while (p > text && p[-1] == ' ')
		p--;
	while (p > text && p[-1] != ' ')
		p--;
	if (p - text < 6 || strncmp(p - 5, "port ", 5) != 0)
		return;
	facts_kmsg_dev_before(name, text, p - 5);
	snprintf(dev, KMSG_DEV_MAX, "%.*s:%.7s", KMSG_DEV_MAX - 9, name, num);
}

/* The NIC phrases, in the order they are tried. */
static const struct { const char *phrase, *what; } facts_kmsg_nic[] = {
	{ "NIC Link is Down", "link_down" }, { "NIC Link is Up", "link_up" },
	{ "Link is Down", "link_down" }, { "Link is Up", "link_up" },
	{ "Link down", "link_down" }, { "Link up", "link_up" },
	{ "port state changed", "port_state" }, { "TX timeout", "tx_timeout" },
	{ "reset adapter", "reset" }, { "Reset adapter", "reset" },
};

/*
 * Where a NIC phrase may be: after a driver's device prefix ("<driver>
 * <PCI address> <interface>: ", as netdev_* prints it). Not after a bare
 * "<driver>: <interface> ": a program's name is up to 15 bytes of the user's
 * choosing, and the kernel's "<name>[pid]: segfault ..." would pass for it.
 */
static const char *
facts_kmsg_nic_from(const char *text, const char *phrase)
{
	char pci[KMSG_DEV_MAX];
	const char *rest = facts_kmsg_devline(text, pci, sizeof pci);

	return rest != NULL ? strstr(rest, phrase) : NULL;
}

static int
facts_kmsg_nic_event(const char *text, struct kmsg_event *ev)
{
	char pci[KMSG_DEV_MAX];
	const char *rest = facts_kmsg_devline(text, pci, sizeof pci), *wd = NULL;

	/* Old kernels: "NETDEV WATCHDOG: eth3 (mlx5_core): ..."; new: after the device's prefix. */
	if (strncmp(text, "NETDEV WATCHDOG: ", 17) == 0)
		wd = text + 17;
	else if (rest != NULL && strncmp(rest, "NETDEV WATCHDOG: ", 17) == 0)
		wd = rest;
	if (wd != NULL && strstr(wd, "timed out") != NULL) {
		if (wd == rest)
			facts_kmsg_dev_before(ev->dev, text, rest - 2);
		else
			facts_kmsg_dev_at(ev->dev, wd);
		snprintf(ev->what, sizeof ev->what, "tx_timeout");
		return ev->kind = KMSG_NIC;
	}
	for (size_t i = 0; i < sizeof facts_kmsg_nic / sizeof facts_kmsg_nic[0]; i++) {
		const char *at = facts_kmsg_nic_from(text, facts_kmsg_nic[i].phrase);
		char next;

		if (at == NULL)
			continue;
		/* "Link up" but not "Link upgrade". */
		next = at[strlen(facts_kmsg_nic[i].phrase)];
		if (isalpha((unsigned char)next))
			continue;
		facts_kmsg_dev_before(ev->dev, text, at);
		facts_kmsg_port(ev->dev, text, at);
		snprintf(ev->what, sizeof ev->what, "%s", facts_kmsg_nic[i].what);
		return ev->kind = KMSG_NIC;
	}
	return KMSG_NONE;
}

int
facts_kmsg_classify(const char *text, struct kmsg_event *ev)
{
	const char *p;

	memset(ev, 0, sizeof *ev);
	if (strncmp(text, "NVRM: Xid ", 10) == 0 && facts_kmsg_xid(text + 10, ev) == 0)
		return ev->kind = KMSG_XID;
	if (strncmp(text, "nvidia-nvswitch", 15) == 0) {
		p = text + 15 + strspn(text + 15, "0123456789");
		if (strncmp(p, ": SXid ", 7) == 0 && facts_kmsg_xid(p + 7, ev) == 0)
			return ev->kind = KMSG_SXID;
	}
	memset(ev, 0, sizeof *ev);
	if (strstr(text, "NVRM") != NULL || strstr(text, "SXid") != NULL)
		return KMSG_NONE;
	if (facts_kmsg_aer(text, ev) == KMSG_AER)
		return KMSG_AER;
	memset(ev, 0, sizeof *ev);
	if (facts_kmsg_nic_event(text, ev) == KMSG_NIC)
		return KMSG_NIC;
	memset(ev, 0, sizeof *ev);
	return KMSG_NONE;
}
