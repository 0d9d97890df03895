#!/usr/bin/env python3
"""Load for tests/gpu/colltop_gpu.sh: each rank (one per GPU, under collrun)
all-reduces 256 MiB over NCCL in a loop for SECONDS (argv[1]), so that
colltop sees busy GPUs, PCIe/NVLink traffic and, through coll's NCCL
profiler plugin, the job's status pages advancing; then, if argv[2] is
"stall", rank 1 stops calling collectives while rank 0 enters one more, so
that colltop calls the job stalled with rank 1 behind."""
import os
import sys
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
x = torch.ones(64 << 20, dtype=torch.float32, device=dev)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20):
        dist.all_reduce(x)
    torch.cuda.synchronize()
print(f"rank {rank}: load done", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "stall":
    if rank == 1:
        time.sleep(float(sys.argv[3]))
    else:
        dist.all_reduce(x)
        torch.cuda.synchronize()
os._exit(0)
