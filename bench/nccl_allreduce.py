#!/usr/bin/env python3
"""One side of bench/nccl_profiler_overhead.sh: all-reduce bus bandwidth over
NCCL through torch.distributed, as nccl-tests reckons it (busbw = algbw *
2(n-1)/n), for sizes 1 MiB to 1 GiB, float32. Started by collrun, one process
per GPU; rank 0 prints one line per size: BYTES BUSBW_GBPS."""
import os
import sys

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
n = dist.get_world_size()
iters = int(os.environ.get("BENCH_ITERS", "40"))
for mib in (1, 4, 16, 64, 256, 1024):
    x = torch.ones(mib << 18, dtype=torch.float32, device=dev)
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        dist.all_reduce(x)
    b.record()
    torch.cuda.synchronize()
    sec = a.elapsed_time(b) / 1000 / iters
    bus = (mib << 20) / sec * 2 * (n - 1) / n / 1e9
    if rank == 0:
        print(mib << 20, "%.2f" % bus, flush=True)
dist.destroy_process_group()
sys.exit(0)
