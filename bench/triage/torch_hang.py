#!/usr/bin/env python3
"""A torch.distributed NCCL job, started by torchrun, that hangs with one
rank in Python (bench/triage/gpu_time.sh): a few all-reduces, then rank
TRIAGE_CULPRIT (default 2) sits in save_checkpoint() while the others enter
the next all-reduce and wait on their streams in train_step. Each rank writes
its pid to TRIAGE_PIDS/RANK once it is where it stays."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def train_step(x):
    dist.all_reduce(x)
    torch.cuda.synchronize()


def save_checkpoint():
    while True:
        time.sleep(600)


def main():
    rank = int(os.environ["RANK"])
    culprit = int(os.environ.get("TRIAGE_CULPRIT", "2"))
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=1800), device_id=dev)
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(7):
        train_step(x)
    with open(os.path.join(os.environ["TRIAGE_PIDS"], str(rank)), "w") as f:
        f.write("%d\n" % os.getpid())
    if rank == culprit:
        save_checkpoint()
    train_step(x)
    return 0


sys.exit(main())
