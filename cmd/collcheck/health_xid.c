/*
 * NVIDIA's Xid catalog, the part a health check acts on: for each Xid the
 * severity collcheck gives it, what it means and what to do, after NVIDIA's
 * public "Xid Errors" catalog (docs.nvidia.com/deploy/xid-errors). Errors
 * are the Xids after which the GPU must be reset or the node rebooted;
 * warnings are a job's own faults that a recurrence would make the GPU's,
 * and memory events that need watching; infos follow another error.
 */
#include <stddef.h>

#include "check.h"

static const struct health_xid health_xids[] = {
	{ 8, SEV_WARN, "GPU stopped processing (a kernel timed out)",
	    "rerun the job; if it recurs on this GPU, run dcgmi diag" },
	{ 13, SEV_WARN, "graphics engine exception, usually the application's (illegal "
	    "address or instruction)", "check the job; if other jobs hit it on this GPU, run "
	    "dcgmi diag" },
	{ 31, SEV_WARN, "GPU memory page fault, usually the application's illegal access",
	    "check the job; if other jobs hit it on this GPU, run dcgmi diag" },
	{ 32, SEV_WARN, "invalid or corrupted push buffer stream",
	    "check the job; if it recurs, reset the GPU and check its PCIe link" },
	{ 43, SEV_INFO, "GPU stopped processing a channel (the application's fault; the GPU "
	    "is healthy)", "nothing for the GPU: check the job" },
	{ 45, SEV_INFO, "preemptive cleanup of a channel, after an earlier error or a killed "
	    "process", "look at the Xid before it" },
	{ 48, SEV_ERROR, "double-bit ECC error in GPU memory",
	    "reset the GPU (or reboot); if it recurs, have the GPU replaced" },
	{ 61, SEV_ERROR, "internal microcontroller breakpoint or warning",
	    "reset the GPU; if it recurs, update the driver and report to NVIDIA" },
	{ 62, SEV_ERROR, "internal microcontroller halt", "reset the GPU; if it recurs, update "
	    "the driver and report to NVIDIA" },
	{ 63, SEV_WARN, "ECC page retirement or row remapping recorded",
	    "reset the GPU when it is idle so that the remapping takes effect" },
	{ 64, SEV_ERROR, "ECC page retirement or row remapping failed",
	    "reset the GPU; if it recurs, have the GPU replaced" },
	{ 74, SEV_ERROR, "NVLink error", "check the links (nvidia-smi nvlink -s -e), reset the "
	    "GPU; if it recurs, have the NVLink or baseboard checked" },
	{ 79, SEV_ERROR, "GPU has fallen off the bus", "drain the node and reboot it; if it "
	    "recurs, check the GPU's seating, power and PCIe link" },
	{ 92, SEV_WARN, "high single-bit ECC error rate",
	    "watch the ECC counters; plan to replace the GPU if the rate stays high" },
	{ 94, SEV_WARN, "contained ECC error (only the application that hit it was stopped)",
	    "restart the application; reset the GPU when idle to remap the row" },
	{ 95, SEV_ERROR, "uncontained ECC error (every application on the GPU was hit)",
	    "reset the GPU; if it recurs, have the GPU replaced" },
	{ 109, SEV_WARN, "context switch timeout",
	    "rerun the job; if it recurs on this GPU, reset it and run dcgmi diag" },
	{ 119, SEV_ERROR, "GSP RPC timeout (the GPU's system processor did not answer)",
	    "reset the GPU; if it recurs, update the driver" },
	{ 120, SEV_ERROR, "GSP error", "reset the GPU; if it recurs, update the driver" },
	{ 140, SEV_ERROR, "unrecovered ECC error (the driver could not retire or remap the "
	    "memory)", "reset the GPU; if it recurs, have the GPU replaced" },
	{ 154, SEV_WARN, "the driver changed the GPU's recovery action (the line names it)",
	    "do what the line asks (reset the GPU, or reboot the node)" },
};

const struct health_xid *
health_xid_find(int xid)
{
	for (size_t i = 0; i < sizeof health_xids / sizeof health_xids[0]; i++)
		if (health_xids[i].xid == xid)
			return &health_xids[i];
	return NULL;
}
