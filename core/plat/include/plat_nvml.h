/*
 * NVML (libnvidia-ml.so.1, the driver's own: it must match the kernel module,
 * so it is found by the loader, never by a variable), declared here by the
 * calls coll uses as NVML 11+ lays them out (its C ABI is stable), so that
 * nothing of it is needed to build. Loaded once per process and kept;
 * nvmlInit and nvmlShutdown are counted by NVML, so each user pairs its own.
 */
#ifndef COLL_PLAT_NVML_H
#define COLL_PLAT_NVML_H

#include <stddef.h>

#define PLAT_NVML_LIB "libnvidia-ml.so.1"
#define PLAT_NVML_SUCCESS 0

typedef void *plat_nvml_dev;

/* nvmlPciInfo_t. */
struct plat_nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct plat_nvml_util {
	unsigned int gpu, memory;
};

struct plat_nvml_mem {
	unsigned long long total, free, used;
};

/* nvmlFieldValue_t (40 bytes; value is a union of 8). */
struct plat_nvml_field {
	unsigned int field, scope;
	long long timestamp, latency_us;
	int type, ret;
	unsigned long long value;
};

/* init, count and handle are always there; any other may be NULL (an older driver). */
struct plat_nvml {
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error)(int);
	int (*driver)(char *, unsigned int);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, plat_nvml_dev *);
	int (*name)(plat_nvml_dev, char *, unsigned int);
	int (*uuid)(plat_nvml_dev, char *, unsigned int);
	int (*pci)(plat_nvml_dev, struct plat_nvml_pci *);
	int (*gen)(plat_nvml_dev, unsigned int *), (*gen_max)(plat_nvml_dev, unsigned int *);
	int (*width)(plat_nvml_dev, unsigned int *), (*width_max)(plat_nvml_dev, unsigned int *);
	int (*ecc_mode)(plat_nvml_dev, int *, int *);
	int (*ecc_errors)(plat_nvml_dev, int, int, unsigned long long *);
	int (*remapped)(plat_nvml_dev, unsigned int *, unsigned int *, unsigned int *,
	    unsigned int *);
	int (*events)(plat_nvml_dev, unsigned long long *);
	int (*persistence)(plat_nvml_dev, int *);
	int (*nvlink)(plat_nvml_dev, unsigned int, int *);
	/* nvmlDeviceGetNvLinkErrorCounter: link, counter (replay 0, recovery 1, CRC flit 2,
	 * CRC data 3), value. */
	int (*nvlink_err)(plat_nvml_dev, unsigned int, int, unsigned long long *);
	int (*util)(plat_nvml_dev, struct plat_nvml_util *);
	int (*mem)(plat_nvml_dev, struct plat_nvml_mem *);
	int (*power)(plat_nvml_dev, unsigned int *);
	int (*limit)(plat_nvml_dev, unsigned int *);
	int (*temp)(plat_nvml_dev, int, unsigned int *);
	int (*pcie)(plat_nvml_dev, int, unsigned int *);
	int (*fields)(plat_nvml_dev, int, struct plat_nvml_field *);
	/* Compute processes: with *n 0 and no room, their count (NVML_ERROR_INSUFFICIENT_SIZE). */
	int (*procs)(plat_nvml_dev, unsigned int *, void *);
};
#define PLAT_NVML_INSUFFICIENT_SIZE 7

/*
 * NVML's table into *t (thread-safe; loaded on the first call). COLL_OK;
 * COLL_ENOTFOUND when libnvidia-ml.so.1 cannot be loaded (why: the loader's
 * words, naming the file); COLL_EVERSION when it lacks nvmlInit,
 * nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex (why names the file).
 */
int plat_nvml_load(const struct plat_nvml **t, char *why, size_t len);

#endif
