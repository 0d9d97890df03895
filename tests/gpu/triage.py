#!/usr/bin/env python3
"""A torch.distributed NCCL job of 4 ranks (or 2, on a 2-GPU machine: the
ranks named below are then min(rank, 1)), started by torchrun, that hangs at
step 8 in the way TRIAGE_SCENARIO says (tests/gpu/triage.sh runs each):
  stuck   rank 2 sits in save_checkpoint (Python) while the others all-reduce
  groups  world and new_group([0, 1]): rank 1 in save_checkpoint, rank 0 in
          the group's all-reduce, ranks 2 and 3 in the world's
  busy    rank 2 runs a long kernel on its stream before step 8's all-reduce
          (enqueued by the host, never begun on its GPU)
  desync  rank 3 all-reduces half the tensor: every rank enters the kernel
Each rank writes TRIAGE_DIR/ready.<rank> just before it hangs."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

HANG_STEP = 8


def ready(rank, what):
    with open(os.path.join(os.environ["TRIAGE_DIR"], f"ready.{rank}"), "w") as f:
        f.write(what + "\n")
    print(f"rank {rank}: {what}", flush=True)


def save_checkpoint(rank):
    ready(rank, "in save_checkpoint")
    time.sleep(3600)


def train_step(x, group=None):
    dist.all_reduce(x, group=group)
    torch.cuda.synchronize()


def hang(scenario, rank, x, sub):
    last = dist.get_world_size() - 1
    if scenario == "stuck":
        if rank == min(2, last):
            save_checkpoint(rank)
        ready(rank, "in world all-reduce")
        train_step(x)
    elif scenario == "groups":
        if rank == 1:
            save_checkpoint(rank)
        ready(rank, "in group {0,1} all-reduce" if rank == 0 else "in world all-reduce")
        train_step(x, sub if rank == 0 else None)
    elif scenario == "busy":
        if rank == min(2, last):
            torch.cuda._sleep(int(2e12))  # some 1000 s of spinning at 2 GHz
        dist.all_reduce(x)
        ready(rank, "all-reduce enqueued" + (" behind a long kernel" if rank == min(2, last) else ""))
        torch.cuda.synchronize()
    elif scenario == "desync":
        n = x.numel() // 2 if rank == last else x.numel()
        ready(rank, f"in world all-reduce of {n} elements")
        train_step(x[:n])
    else:
        raise SystemExit(f"unknown TRIAGE_SCENARIO {scenario!r}")


def main():
    scenario = os.environ.get("TRIAGE_SCENARIO", "stuck")
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=1800), device_id=dev)
    sub = dist.new_group([0, 1]) if scenario == "groups" else None
    x = torch.ones(1 << 20, device="cuda")
    for step in range(1, HANG_STEP):
        train_step(x)
        if scenario == "groups" and rank in (0, 1):
            train_step(x, sub)
    print(f"rank {rank}: {HANG_STEP - 1} steps done", flush=True)
    hang(scenario, rank, x, sub)
    print(f"rank {rank}: finished (not expected)", flush=True)
    return 0


sys.exit(main())
