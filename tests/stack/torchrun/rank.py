#!/usr/bin/env python3
"""A rank of a PyTorch job for collstack's launcher tests, started by any
launcher (tests/stack/torchrun, mpirun, srun): its rank from whichever
variable the launcher set. With COLL_NCCLPROF (coll's NCCL profiler plugin)
it drives a communicator of WORLD_SIZE ranks as NCCL does (see
nccl_standin.py): five all-reduces complete, then every rank but
STANDIN_LATE (default 2) enqueues the sixth, its kernel starts, and it waits
in synchronize(); the late rank sits in save_checkpoint(), in Python.
With STANDIN_ADVANCE set, every rank goes on with an all-reduce a tick.
Without the plugin each rank only waits. It prints "ready RANK PID" once
it is where it stays."""
import ctypes
import os
import sys
import time

for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
    if var in os.environ:
        rank = int(os.environ[var])
        break
size = int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE",
                                                       os.environ.get("SLURM_NTASKS", "1"))))
late = int(os.environ.get("STANDIN_LATE", "2"))
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


class Plugin:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.prof = Table.in_dll(self.lib, "ncclProfiler_v5")
        self.ctx, self.mask = ctypes.c_void_p(), ctypes.c_int()
        # One communicator per job: its ranks share a launcher (their parent).
        assert self.prof.init(ctypes.byref(self.ctx), (0x5eed << 32) + (os.getppid() << 8) + size,
                              ctypes.byref(self.mask), b"pg0", 1, size, rank, None) == 0

    def start(self, d):
        h = ctypes.c_void_p()
        self.prof.start(self.ctx, ctypes.byref(h), ctypes.byref(d))
        return h

    def enqueue(self):
        d = Descr(type=EV_COLL, rank=rank)
        d.u.coll = Coll(func=b"AllReduce", count=1 << 20, datatype=b"ncclFloat32", nchannels=1)
        h = self.start(d)
        self.prof.stop(h)
        return h

    def kernel(self, coll):
        if not self.mask.value & EV_KERNEL_CH:
            return ctypes.c_void_p()
        d = Descr(type=EV_KERNEL_CH, parent=coll.value, rank=rank)
        d.u.kernel_ch = KernelCh(channel=0)
        return self.start(d)


def synchronize():
    time.sleep(1000)


def ready():
    # One write: the workers share the launcher's stdout, and python -u writes each piece of a print.
    sys.stdout.write("ready %d %d\n" % (rank, os.getpid()))
    sys.stdout.flush()


def train_step(nccl):
    if nccl:
        nccl.kernel(nccl.enqueue())
    # Said once the sixth all-reduce is in the pages: a test that reads the
    # job on "ready" sees the hang, not the five before it.
    ready()
    synchronize()


def save_checkpoint():
    ready()
    time.sleep(1000)


nccl = Plugin(os.environ["COLL_NCCLPROF"]) if os.environ.get("COLL_NCCLPROF") else None
for _ in range(5 if nccl else 0):
    nccl.prof.stop(nccl.kernel(nccl.enqueue()))
if nccl and os.environ.get("STANDIN_ADVANCE"):  # a job that runs on: one all-reduce a tick
    ready()
    while True:
        nccl.prof.stop(nccl.kernel(nccl.enqueue()))
        time.sleep(0.1)
save_checkpoint() if rank == late else train_step(nccl)
