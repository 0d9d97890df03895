#!/usr/bin/env python3
"""One rank of an NCCL job with a GPU-side hang planted in it, for
bench/triage/accuracy, on a machine without GPUs: coll's NCCL profiler plugin
(COLL_NCCLPROF, the built .so) is loaded and called as NCCL 2.28 calls it
(ncclProfiler_v5, as tests/stack/nccl_standin.py does): per step one
all-reduce, enqueued, its kernel's channels begun and ended. At step STEP:

  gpu-busy  every rank enqueues the all-reduce; CULPRIT's kernel never begins
            (its stream is busy), the others' begin and never end
  desync    every rank enqueues and its kernel begins, none ends; CULPRIT's op
            has half the bytes, or another kind (DESYNC=bytes|kind)
  kernel    every rank's kernel begins, none ends: no rank is late
  dead      CULPRIT kills itself (SIGKILL) before the enqueue; the others'
            kernels begin and never end (NCCL does not notice a dead peer)

Every rank then sits in synchronize() < train_step(), as a PyTorch rank
waiting on its stream does. Rank and size from COLL_RANK/COLL_SIZE (collrun)
or RANK/WORLD_SIZE; the communicator's hash from TRIAGE_HASH.

  plugin_driver.py KIND CULPRIT STEP
"""
import ctypes
import os
import signal
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


def env_int(*names):
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    raise SystemExit("plugin_driver: none of %s is set" % ", ".join(names))


kind, culprit, at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rank, size = env_int("COLL_RANK", "RANK"), env_int("COLL_SIZE", "WORLD_SIZE")
lib = ctypes.CDLL(os.environ["COLL_NCCLPROF"])
prof = Table.in_dll(lib, "ncclProfiler_v5")
ctx, mask = ctypes.c_void_p(), ctypes.c_int()
assert prof.init(ctypes.byref(ctx), int(os.environ.get("TRIAGE_HASH", "0x7a11a9e"), 16),
                 ctypes.byref(mask), b"pg0", 1, size, rank, None) == 0


def start(d):
    h = ctypes.c_void_p()
    prof.start(ctx, ctypes.byref(h), ctypes.byref(d))
    return h


def enqueue(func=b"AllReduce", count=1 << 20):
    d = Descr(type=EV_COLL, rank=rank)
    d.u.coll = Coll(func=func, count=count, datatype=b"ncclFloat32", nchannels=2,
                    algo=b"RING", proto=b"LL")
    h = start(d)
    prof.stop(h)
    return h


def kernels(coll):
    if not mask.value & EV_KERNEL_CH:
        return []  # NCCL sends none the plugin did not ask for
    out = []
    for ch in (0, 1):
        d = Descr(type=EV_KERNEL_CH, parent=coll.value, rank=rank)
        d.u.kernel_ch = KernelCh(channel=ch)
        out.append(start(d))
    return out


def say(what):
    print("triage: %d %d %s" % (rank, at, what), flush=True)


def synchronize():
    while True:
        time.sleep(1000)


def train_step():
    mine = rank == culprit
    if mine and kind == "dead":
        say(kind)
        os.kill(os.getpid(), signal.SIGKILL)
    if mine and kind == "desync":
        h = enqueue(count=1 << 19) if os.environ.get("DESYNC") == "bytes" else enqueue(b"AllGather")
    else:
        h = enqueue()
    if not (mine and kind == "gpu-busy"):
        kernels(h)
    say(kind if mine else "kernel")
    synchronize()


for _ in range(at - 1):
    for k in kernels(enqueue()):
        prof.stop(k)
train_step()
