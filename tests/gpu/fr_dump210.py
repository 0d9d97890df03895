#!/usr/bin/env python3
"""Flight recorder dumps of format 2.10 as PyTorch itself writes them, both
forms, for collstack's fixtures; on the GPU machine (2 GPUs):

    python3 tests/gpu/fr_dump210.py OUT [COLLSTACK]

A 2-rank NCCL job (torch.multiprocessing, no launcher): five all-reduces,
then rank 0 enters a sixth that rank 1 never joins. Each rank then dumps its
flight recorder itself, into
    OUT/json/x_<rank>     torch._C._distributed_c10d._dump_nccl_trace_json()
    OUT/pickle/x_<rank>   torch._C._distributed_c10d._dump_nccl_trace()
and rank 0 also asks for a dump through its dump pipe, made by the newer
name only (TORCH_FR_DEBUG_INFO_PIPE_FILE=OUT/pipe/p_, dump to
TORCH_FR_DUMP_TEMP_FILE=OUT/pipe/x_): whether that pipe exists and what it
wrote (pickle or JSON) is printed. A second, 1-rank run with neither
TORCH_FR_BUFFER_SIZE nor TORCH_NCCL_TRACE_BUFFER_SIZE set prints how many
entries the recorder keeps by default (collstack takes "unset" as off).

With COLLSTACK, `collstack --fr` reads OUT/json/x_ and OUT/pickle/x_; both
must say "rank 1 did not join nccl:all_reduce seq 6 ... thread '...'" and
"dumps of format 2.10; communication library <NCCL's version> on every rank".

OUT/json/x_* replace tests/stack/fr_json/x_*; OUT/pickle/x_* may go beside
tests/stack/fr_torch/ (they carry frames too). Everything printed lands in
OUT/summary.txt as well.
"""
import datetime
import json
import os
import stat
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

C10D = torch._C._distributed_c10d


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def ask_pipe(out, rank):
    """Write to the rank's pipe (the TORCH_FR_ name only); what came of it."""
    pipe = "%s/pipe/p_%d.pipe" % (out, rank)
    dump = "%s/pipe/x_%d" % (out, rank)
    if not os.path.exists(pipe) or not stat.S_ISFIFO(os.stat(pipe).st_mode):
        return "no pipe at %s: TORCH_FR_DEBUG_INFO_PIPE_FILE not read by this PyTorch" % pipe
    fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"1\n")
    os.close(fd)
    for _ in range(300):
        if os.path.exists(dump) and os.path.getsize(dump) > 0:
            time.sleep(1)
            head = open(dump, "rb").read(1)
            return "pipe %s made; dump %s written, %s" % (
                pipe, dump, "JSON" if head == b"{" else "a pickle" if head == b"\x80" else repr(head))
        time.sleep(0.1)
    return "pipe %s made, but no dump at %s within 30 s" % (pipe, dump)


def rank_main(rank, out, q):
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT="29571", LOCAL_RANK=str(rank))
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=300), device_id=dev)
    x = torch.ones(1 << 20, device=dev)
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()                # no barrier: it would be a collective too
    if rank == 0:
        dist.all_reduce(x, async_op=True)   # seq 6: rank 1 never joins
    time.sleep(3)                           # the watchdog marks it started
    write("%s/json/x_%d" % (out, rank), C10D._dump_nccl_trace_json(True, False))
    write("%s/pickle/x_%d" % (out, rank), C10D._dump_nccl_trace(True, True, False))
    q.put((rank, ask_pipe(out, rank) if rank == 0 else None))
    time.sleep(2)
    os._exit(0)                             # a hung collective: no clean shutdown


def default_main(out, q):
    for k in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        os.environ.pop(k, None)
    os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29572")
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    x = torch.ones(16, device=dev)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    d = json.loads(C10D._dump_nccl_trace_json(True, False))
    q.put(("default", "with no buffer size set, %d entries recorded (format %s)"
           % (len(d.get("entries", [])), d.get("version"))))
    dist.destroy_process_group()


def run(target, args, n, q):
    ps = [mp.get_context("spawn").Process(target=target, args=args(i)) for i in range(n)]
    for p in ps:
        p.start()
    got = [q.get(timeout=240) for _ in ps]
    for p in ps:
        p.join(60)
    return got


def main():
    out = os.path.abspath(sys.argv[1])
    collstack = sys.argv[2] if len(sys.argv) > 2 else None
    lines = ["torch %s, NCCL %s" % (torch.__version__, ".".join(map(str, torch.cuda.nccl.version())))]
    os.environ.update(TORCH_FR_BUFFER_SIZE="2000",
                      TORCH_FR_DEBUG_INFO_PIPE_FILE=out + "/pipe/p_",
                      TORCH_FR_DUMP_TEMP_FILE=out + "/pipe/x_")
    os.makedirs(out + "/pipe", exist_ok=True)
    q = mp.get_context("spawn").Queue()
    for rank, what in sorted(run(rank_main, lambda i: (i, out, q), 2, q), key=str):
        if what:
            lines.append("rank %d: %s" % (rank, what))
    for _, what in run(default_main, lambda i: (out, q), 1, q):
        lines.append(what)
    for form in ("json", "pickle"):
        head = open("%s/%s/x_0" % (out, form), "rb").read(1)
        lines.append("%s/x_0 begins %r" % (form, head))
        if collstack:
            r = subprocess.run([collstack, "--fr", "%s/%s/x_" % (out, form)],
                               capture_output=True, text=True)
            lines.append("collstack --fr %s/x_: exit %d" % (form, r.returncode))
            lines += ["  " + s for s in (r.stdout + r.stderr).splitlines()]
    d = json.load(open(out + "/json/x_0"))
    lines.append("JSON top keys: %s" % sorted(d))
    if d.get("entries"):
        lines.append("JSON entry keys: %s" % sorted(d["entries"][-1]))
    print("\n".join(lines))
    write(out + "/summary.txt", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
