#!/usr/bin/env python3
"""A 2-rank torch.distributed NCCL job that hangs as collstack's users see it:
a few all-reduces, then rank 1 stops calling collectives (it sits in
eval_step) while rank 0 enters the next all-reduce in train_step. Started by
collrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). With
TORCH_NCCL_DUMP_ON_TIMEOUT=1 the watchdog writes the flight recorder's dumps
when the timeout (FR_HANG_TIMEOUT_S, default 30) passes."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def train_step(x):
    dist.all_reduce(x)
    torch.cuda.synchronize()


def eval_step():
    time.sleep(600)


def main():
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    timeout = datetime.timedelta(seconds=int(os.environ.get("FR_HANG_TIMEOUT_S", "30")))
    dist.init_process_group("nccl", timeout=timeout, device_id=dev)
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(5):
        train_step(x)
    print(f"rank {rank}: 5 steps done", flush=True)
    if rank == 1:
        print(f"rank {rank}: in eval_step", flush=True)
        eval_step()
    else:
        print(f"rank {rank}: in train_step", flush=True)
        train_step(x)
    print(f"rank {rank}: finished (not expected)", flush=True)
    return 0


sys.exit(main())
