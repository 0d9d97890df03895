/*
 * What the host is: name, kernel, OS, CPUs, memory, NUMA nodes, hugepages,
 * /dev/shm, the kernel modules GPUDirect needs, the IOMMU, and this
 * process's limits (the ranks of a job inherit the same ones from sshd,
 * slurmd or the shell that started them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include "facts.h"
#include "plat_file.h"

/* CPUs in a kernel range list ("0-3,8-11"). */
static long
facts_count_ranges(const char *s)
{
	long n = 0;

	while (*s != '\0') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return -1;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		n += b >= a ? b - a + 1 : 0;
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			return -1;
	}
	return n;
}

/* The value of "Name<sep> value" in a file of such lines (cpuinfo, meminfo, os-release). */
static int
facts_field(const char *root, const char *path, const char *name, char sep, char *out,
    size_t len)
{
	static char buf[1 << 16];
	size_t nl = strlen(name);
	char *line, *save = NULL;

	if (plat_file_text(root, path, buf, sizeof buf) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *p = line + nl;

		if (strncmp(line, name, nl) != 0)
			continue;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != sep)
			continue;
		p++;
		while (*p == ' ' || *p == '\t' || *p == '"')
			p++;
		snprintf(out, len, "%s", p);
		nl = strlen(out);
		while (nl > 0 && (out[nl - 1] == '"' || out[nl - 1] == ' '))
			out[--nl] = '\0';
		return 0;
	}
	return -1;
}

static void
facts_read_text(struct facts *f, const char *key, const char *root, const char *path)
{
	char buf[256];

	if (plat_file_text(root, path, buf, sizeof buf) >= 0)
		facts_add(f, key, "%s", buf);
	else
		facts_skip(f, key, "cannot read %s", path);
}

static void
facts_read_mem(struct facts *f, const struct facts_roots *r)
{
	char v[128];

	if (facts_field(r->root, "/proc/meminfo", "MemTotal", ':', v, sizeof v) == 0)
		facts_add(f, "mem.total", "%.0f GiB", strtod(v, NULL) / (1024.0 * 1024.0));
	else
		facts_skip(f, "mem.total", "cannot read /proc/meminfo");
	if (facts_field(r->root, "/proc/meminfo", "HugePages_Total", ':', v, sizeof v) == 0)
		facts_add(f, "hugepages.total", "%s", v);
	if (facts_field(r->root, "/proc/meminfo", "Hugepagesize", ':', v, sizeof v) == 0)
		facts_add(f, "hugepages.size", "%s", v);
}

static void
facts_read_cpu(struct facts *f, const struct facts_roots *r)
{
	char v[256];
	long n;

	if (facts_field(r->root, "/proc/cpuinfo", "model name", ':', v, sizeof v) == 0)
		facts_add(f, "cpu.model", "%s", v);
	else
		facts_skip(f, "cpu.model", "no 'model name' in /proc/cpuinfo");
	if (plat_file_text(r->root, "/sys/devices/system/cpu/online", v, sizeof v) >= 0 &&
	    (n = facts_count_ranges(v)) > 0)
		facts_add(f, "cpu.count", "%ld", n);
	else
		facts_skip(f, "cpu.count", "cannot read /sys/devices/system/cpu/online");
	if (plat_file_text(r->root, "/sys/devices/system/node/online", v, sizeof v) >= 0 &&
	    (n = facts_count_ranges(v)) > 0)
		facts_add(f, "numa.nodes", "%ld", n);
	else
		facts_skip(f, "numa.nodes", "no NUMA information in sysfs");
}

/* Loaded or not: nvidia_peermem (or the older nv_peer_mem) is what GPUDirect RDMA needs. */
static void
facts_read_modules(struct facts *f, const struct facts_roots *r)
{
	static const char *const mods[] = { "nvidia", "nvidia_peermem", "nv_peer_mem", "ib_core",
	    "mlx5_core" };
	static char buf[1 << 18];
	char key[64], pat[64];

	if (plat_file_text(r->root, "/proc/modules", buf, sizeof buf) < 0) {
		facts_skip(f, "module", "cannot read /proc/modules");
		return;
	}
	for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) {
		int len = snprintf(pat, sizeof pat, "%s ", mods[i]);
		const char *p = buf;
		int found = 0;

		while ((p = strstr(p, pat)) != NULL && !found) {
			found = p == buf || p[-1] == '\n';
			p += len;
		}
		snprintf(key, sizeof key, "module.%s", mods[i]);
		facts_add(f, key, "%s", found ? "loaded" : "not loaded");
	}
}

static void
facts_read_iommu(struct facts *f, const struct facts_roots *r)
{
	char **names, cmd[4096], opts[512] = "";
	int n = plat_file_list(r->root, "/sys/class/iommu", PLAT_FILE_LIST_ALL, &names);
	size_t off = 0;

	plat_file_list_free(names, n > 0 ? n : 0);
	facts_add(f, "iommu", "%s", n > 0 ? "on" : "off");
	if (plat_file_text(r->root, "/proc/cmdline", cmd, sizeof cmd) < 0)
		return;
	/* The options that decide whether GPUs and NICs can reach each other directly. */
	for (char *save = NULL, *w = strtok_r(cmd, " ", &save); w != NULL;
	    w = strtok_r(NULL, " ", &save))
		if (strstr(w, "iommu") != NULL && off < sizeof opts - 1)
			off += (size_t)snprintf(opts + off, sizeof opts - off, "%s%s", off ? " " : "", w);
	facts_add(f, "iommu.cmdline", "%s", off ? opts : "(none)");
}

void
facts_read_host(struct facts *f, const struct facts_roots *r)
{
	char v[256];
	struct statvfs sv;
	const char *shm = r->shm != NULL ? r->shm : "/dev/shm";

	facts_read_text(f, "host.name", r->root, "/proc/sys/kernel/hostname");
	facts_read_text(f, "host.kernel", r->root, "/proc/sys/kernel/osrelease");
	if (facts_field(r->root, "/etc/os-release", "PRETTY_NAME", '=', v, sizeof v) == 0)
		facts_add(f, "host.os", "%s", v);
	else
		facts_skip(f, "host.os", "no PRETTY_NAME in /etc/os-release");
	facts_read_cpu(f, r);
	facts_read_mem(f, r);
	if (statvfs(shm, &sv) == 0)
		facts_add(f, "shm.size", "%.1f GiB", (double)sv.f_blocks * (double)sv.f_frsize /
		    (1024.0 * 1024.0 * 1024.0));
	else
		facts_skip(f, "shm.size", "cannot stat %s", shm);
	facts_read_modules(f, r);
	facts_read_iommu(f, r);
}

static void
facts_limit(struct facts *f, const char *key, int res, long unit, const char *suffix)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) != 0)
		facts_skip(f, key, "getrlimit failed");
	else if (rl.rlim_cur == RLIM_INFINITY)
		facts_add(f, key, "unlimited");
	else
		facts_add(f, key, "%llu%s", (unsigned long long)rl.rlim_cur / (unsigned long long)unit,
		    suffix);
}

void
facts_read_limits(struct facts *f, const struct facts_roots *r)
{
	(void)r;
	facts_limit(f, "limits.memlock", RLIMIT_MEMLOCK, 1024, " KiB");
	facts_limit(f, "limits.nofile", RLIMIT_NOFILE, 1, "");
	facts_limit(f, "limits.stack", RLIMIT_STACK, 1024, " KiB");
}
