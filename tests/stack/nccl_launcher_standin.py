#!/usr/bin/env python3
"""A job coll did not launch, for colltop's tests (t0740, t0741): a launcher
that starts ranks as torchrun (or srun) does, and ranks that drive coll's
NCCL profiler plugin (COLL_NCCLPROF) as NCCL 2.28 does, as in
tests/stack/nccl_standin.py, with the GPU-side hangs that one does not make.

Run through a link named like the launcher (torchrun, srun): the launcher
starts one rank per world rank in STANDIN_RANKS (e.g. "2,3"; their
communicator is those ranks, numbered from 0 in that order, as a PyTorch
sub-group is), with RANK, LOCAL_RANK, WORLD_SIZE (STANDIN_WORLD) and its own
environment (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, ... as the test sets them),
prints "pid N" for each and waits. Each rank runs five all-reduces to the
end, then by STANDIN_MODE:
  late:R   every rank enqueues the sixth; world rank R's kernel never
           begins (its stream is busy), the others' begin and never end
  kernel   every rank enqueues the sixth and its kernel begins; none ends
  advance  an all-reduce every 0.1 s, for ever
and prints "ready" once it is there."""
import ctypes
import os
import signal
import subprocess
import sys
import time

EV_COLL, EV_KERNEL_CH = 0x2, 0x40


class Coll(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("func", ctypes.c_char_p),
                ("sendbuf", ctypes.c_void_p), ("recvbuf", ctypes.c_void_p),
                ("count", ctypes.c_size_t), ("root", ctypes.c_int),
                ("datatype", ctypes.c_char_p), ("nchannels", ctypes.c_uint8),
                ("nwarps", ctypes.c_uint8), ("algo", ctypes.c_char_p),
                ("proto", ctypes.c_char_p), ("parent_group", ctypes.c_void_p)]


class KernelCh(ctypes.Structure):
    _fields_ = [("channel", ctypes.c_uint8), ("ptimer", ctypes.c_uint64)]


class U(ctypes.Union):
    _fields_ = [("coll", Coll), ("kernel_ch", KernelCh)]


class Descr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint64), ("parent", ctypes.c_void_p),
                ("rank", ctypes.c_int), ("u", U)]


INIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                        ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int,
                        ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
START = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(Descr))
STOP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class Table(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", INIT), ("start", START), ("stop", STOP),
                ("record", ctypes.c_void_p), ("finalize", STOP)]


def launcher():
    ranks = [int(r) for r in os.environ["STANDIN_RANKS"].split(",")]
    kids = []
    for local, r in enumerate(ranks):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(local),
                   WORLD_SIZE=os.environ.get("STANDIN_WORLD", str(len(ranks))),
                   STANDIN_COMM_RANK=str(local), STANDIN_COMM_SIZE=str(len(ranks)))
        kids.append(subprocess.Popen([sys.executable, os.path.realpath(__file__), "rank"],
                                     env=env))
        print("pid %d" % kids[-1].pid, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: [k.kill() for k in kids] and sys.exit(0))
    for k in kids:
        k.wait()


def rank():
    libc = ctypes.CDLL(None)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive the launcher
    me, n = int(os.environ["STANDIN_COMM_RANK"]), int(os.environ["STANDIN_COMM_SIZE"])
    lib = ctypes.CDLL(os.environ["COLL_NCCLPROF"])
    prof = Table.in_dll(lib, "ncclProfiler_v5")
    ctx, mask = ctypes.c_void_p(), ctypes.c_int()
    h = int(os.environ.get("STANDIN_HASH", "0x5eed5eed5eed5eed"), 16)
    assert prof.init(ctypes.byref(ctx), h, ctypes.byref(mask), b"pg1", 1, n, me, None) == 0

    def start(d):
        x = ctypes.c_void_p()
        prof.start(ctx, ctypes.byref(x), ctypes.byref(d))
        return x

    def enqueue():
        d = Descr(type=EV_COLL, rank=me)
        d.u.coll = Coll(func=b"AllReduce", count=1 << 20, datatype=b"ncclFloat32",
                        nchannels=2)
        x = start(d)
        prof.stop(x)
        return x

    def kernels(coll):
        out = []
        for ch in range(2):
            d = Descr(type=EV_KERNEL_CH, parent=coll.value, rank=me)
            d.u.kernel_ch = KernelCh(channel=ch)
            out.append(start(d))
        return out

    def allreduce():
        for k in kernels(enqueue()):
            prof.stop(k)

    for _ in range(5):
        allreduce()
    mode = os.environ.get("STANDIN_MODE", "kernel")
    if mode == "advance":
        print("ready", flush=True)
        while True:
            allreduce()
            time.sleep(0.1)
    coll = enqueue()
    if mode != "late:" + os.environ["RANK"]:
        kernels(coll)
    print("ready", flush=True)
    time.sleep(1000)


if __name__ == "__main__":
    rank() if sys.argv[1:] == ["rank"] else launcher()
