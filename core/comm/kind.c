#include "kind.h"

static const char *kind_names[KIND_MAX] = {
	[KIND_NONE] = "none", [KIND_ALLREDUCE] = "allreduce", [KIND_BROADCAST] = "broadcast",
	[KIND_REDUCE] = "reduce", [KIND_ALLGATHER] = "allgather",
	[KIND_REDUCE_SCATTER] = "reducescatter", [KIND_GATHERV] = "gatherv",
	[KIND_BARRIER] = "barrier", [KIND_SEND] = "send", [KIND_RECV] = "recv",
	[KIND_SENDRECV] = "sendrecv", [KIND_ALLTOALL] = "alltoall", [KIND_GATHER] = "gather",
	[KIND_SCATTER] = "scatter", [KIND_FOLD] = "fold",
};

const char *
coll_kind_name(uint32_t kind)
{
	return kind < KIND_MAX ? kind_names[kind] : "unknown";
}
