#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "err.h"
#include "plat_lib.h"
#include "plat_nvml.h"

_Static_assert(sizeof(struct plat_nvml_field) == 40, "nvmlFieldValue_t is 40 bytes");

#define S(f, n) PLAT_SYM(struct plat_nvml, f, n)
#define OPT(f, n) PLAT_OPT(struct plat_nvml, f, n)
#define ALT(f, n, alt, opt) PLAT_ALT(struct plat_nvml, f, n, alt, opt)

static const struct plat_sym plat_nvml_syms[] = {
	ALT(init, "nvmlInit_v2", "nvmlInit", 0), OPT(shutdown, "nvmlShutdown"),
	OPT(error, "nvmlErrorString"), OPT(driver, "nvmlSystemGetDriverVersion"),
	ALT(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", 0),
	ALT(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", 0),
	OPT(name, "nvmlDeviceGetName"), OPT(uuid, "nvmlDeviceGetUUID"),
	OPT(pci, "nvmlDeviceGetPciInfo_v3"),
	OPT(gen, "nvmlDeviceGetCurrPcieLinkGeneration"),
	OPT(gen_max, "nvmlDeviceGetMaxPcieLinkGeneration"),
	OPT(width, "nvmlDeviceGetCurrPcieLinkWidth"),
	OPT(width_max, "nvmlDeviceGetMaxPcieLinkWidth"),
	OPT(ecc_mode, "nvmlDeviceGetEccMode"), OPT(ecc_errors, "nvmlDeviceGetTotalEccErrors"),
	OPT(remapped, "nvmlDeviceGetRemappedRows"),
	/* Renamed in NVML 12.2; the old name stays exported. */
	ALT(events, "nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons", 1),
	OPT(persistence, "nvmlDeviceGetPersistenceMode"),
	OPT(nvlink, "nvmlDeviceGetNvLinkState"), OPT(nvlink_err, "nvmlDeviceGetNvLinkErrorCounter"),
	OPT(util, "nvmlDeviceGetUtilizationRates"),
	OPT(mem, "nvmlDeviceGetMemoryInfo"), OPT(power, "nvmlDeviceGetPowerUsage"),
	OPT(limit, "nvmlDeviceGetEnforcedPowerLimit"), OPT(temp, "nvmlDeviceGetTemperature"),
	OPT(pcie, "nvmlDeviceGetPcieThroughput"), OPT(fields, "nvmlDeviceGetFieldValues"),
	ALT(procs, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2", 1),
};

static struct {
	struct plat_nvml t;
	int rc;
	char why[512];
} plat_nvml;
static pthread_once_t plat_nvml_once = PTHREAD_ONCE_INIT;

static void
plat_nvml_open(void)
{
	const char *name;
	void *h = plat_lib_open(NULL, PLAT_NVML_LIB, RTLD_NOW | RTLD_LOCAL, &name, plat_nvml.why,
	    sizeof plat_nvml.why);

	plat_nvml.rc = COLL_ENOTFOUND;
	if (h == NULL)
		return;
	if (plat_lib_bind(&plat_nvml.t, h, plat_nvml_syms, sizeof plat_nvml_syms /
	    sizeof *plat_nvml_syms) != NULL) {
		snprintf(plat_nvml.why, sizeof plat_nvml.why,
		    "%s lacks nvmlInit/DeviceGetCount", name);
		plat_nvml.rc = COLL_EVERSION;
		dlclose(h);
		return;
	}
	plat_nvml.rc = COLL_OK;
}

int
plat_nvml_load(const struct plat_nvml **t, char *why, size_t len)
{
	pthread_once(&plat_nvml_once, plat_nvml_open);
	*t = plat_nvml.rc == COLL_OK ? &plat_nvml.t : NULL;
	if (plat_nvml.rc != COLL_OK)
		snprintf(why, len, "%s", plat_nvml.why);
	return plat_nvml.rc;
}
