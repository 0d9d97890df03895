#!/usr/bin/env python3
"""A torchrun job for tests/gpu/colltop_jobs.sh: each rank all-reduces 4 MiB
over NCCL, a step at a time (a small matmul, the all-reduce, a synchronize as
loss.item() does), for SECONDS (argv[1]); rank SLOW_RANK (default none)
sleeps SLOW_MS (default 40) before each all-reduce, as a rank with a slow data
loader does. colltop is to name that rank from coll's NCCL profiler plugin's
pages, without joining the job."""
import os
import sys
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
slow = int(os.environ.get("SLOW_RANK", "-1"))
pause = float(os.environ.get("SLOW_MS", "40")) / 1000
x = torch.ones(1 << 20, dtype=torch.float32, device=dev)
w = torch.randn(512, 512, device=dev)
steps = 0
end = time.time() + float(sys.argv[1])
while time.time() < end:
    w = w @ w.T / 512
    if rank == slow:
        time.sleep(pause)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    steps += 1
print(f"rank {rank}: {steps} steps", flush=True)
dist.destroy_process_group()
