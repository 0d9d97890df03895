#!/usr/bin/env python3
"""A stand-in for one rank of a PyTorch NCCL job in collstack's tests (t0117),
for the parts a machine without GPUs can still run for real:

- coll's NCCL profiler plugin (COLL_NCCLPROF, the built .so) is loaded and
  called as NCCL 2.28 calls it (ncclProfiler_v5: init for a communicator,
  a collective event per all-reduce at enqueue, kernel channel events as the
  proxy thread reports them): five all-reduces run to the end, then rank 0
  enqueues a sixth whose kernel starts and never ends, and rank 1 stops.
- PyTorch's dump pipe: TORCH_FR_DEBUG_INFO_PIPE_FILE<rank>.pipe (or the older
  TORCH_NCCL_DEBUG_INFO_PIPE_FILE's) is made and
  polled as PyTorch's watchdog does; a request copies the flight recorder
  dump STANDIN_DUMP<rank> (dumps a real job wrote, tests/stack/fr_torch/) to
  TORCH_FR_DUMP_TEMP_FILE<rank>. STANDIN_DUMP=never: requests are read and
  ignored; =garbage: the dump written is not a pickle; =nopipe: no pipe is
  made (the test puts its own thing at the name).
- Python frames: rank 0 waits in synchronize() < train_step(), rank 1 sits
  in eval_step().
STANDIN_CASE drives a hang below the host instead (t0720), on WORLD_SIZE
ranks: eight all-reduces run to the end, every rank enqueues the ninth and
waits in synchronize(), and then
- busy: rank STANDIN_ODD's kernel never begins (its stream busy with an
  earlier kernel), the others' begin and never end; every host enqueues a
  tenth all-reduce behind it;
- inside: every rank's kernel begins and none ends;
- unseen: every rank's kernel begins and ends (the host never sees it);
STANDIN_ALGO: the algorithm NCCL names (Ring), as bytes the page carries.
- desync: rank STANDIN_ODD all-reduces half as many elements (or another
  datatype, with STANDIN_ODD_TYPE), every kernel begins, none ends.
The real NCCL, PyTorch and GPU run is tests/gpu/fr_hang.sh."""
import ctypes
import os
import shutil
import sys
import threading
import time

rank = int(os.environ["RANK"])
HASH = int(os.environ.get("STANDIN_HASH", "0x92906a7ad1050f54"), 16)
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


LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int,
                       ctypes.c_char_p)
INIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                        ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int,
                        ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
START = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(Descr))
STOP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class Table(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", INIT), ("start", START), ("stop", STOP),
                ("record", ctypes.c_void_p), ("finalize", STOP)]


lib = ctypes.CDLL(os.environ["COLL_NCCLPROF"])
prof = Table.in_dll(lib, "ncclProfiler_v5")
ctx = ctypes.c_void_p()
mask = ctypes.c_int()
SIZE = int(os.environ.get("WORLD_SIZE", "2"))
CASE = os.environ.get("STANDIN_CASE", "")
ODD = int(os.environ.get("STANDIN_ODD", "2"))
assert prof.init(ctypes.byref(ctx), HASH, ctypes.byref(mask), b"pg0", 1, SIZE, rank, None) == 0


def start(d):
    h = ctypes.c_void_p()
    prof.start(ctx, ctypes.byref(h), ctypes.byref(d))
    return h


def enqueue(count=1 << 20, dtype=b"ncclFloat32"):
    d = Descr(type=EV_COLL, rank=rank)
    d.u.coll = Coll(func=b"AllReduce", count=count, datatype=dtype, nchannels=2,
                    algo=os.environ.get("STANDIN_ALGO", "Ring").encode(), proto=b"LL")
    h = start(d)
    prof.stop(h)
    return h


def kernel(coll, ch):
    if not mask.value & EV_KERNEL_CH:
        return ctypes.c_void_p()  # NCCL sends none the plugin did not ask for
    d = Descr(type=EV_KERNEL_CH, parent=coll.value, rank=rank)
    d.u.kernel_ch = KernelCh(channel=ch)
    return start(d)


def dump_pipe():
    # PyTorch's newer name first, the older as fallback.
    stem = (os.environ.get("TORCH_FR_DEBUG_INFO_PIPE_FILE")
            or os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"))
    if not stem or os.environ.get("STANDIN_DUMP") == "nopipe":
        return
    path = "%s%d.pipe" % (stem, rank)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.mkfifo(path, 0o600)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.environ.get("STANDIN_DUMP", "")
    out = "%s%d" % (os.environ["TORCH_FR_DUMP_TEMP_FILE"], rank)
    while True:
        time.sleep(0.1)
        try:
            got = os.read(fd, 128)
        except BlockingIOError:
            continue
        if not got or mode == "never":
            continue
        if mode == "garbage":
            with open(out, "wb") as f:
                f.write(b"\x80\x02this is not a pickle")
        else:
            shutil.copyfile("%s%d" % (mode, rank), out)


def synchronize():
    time.sleep(1000)


def train_step():
    h = enqueue()
    kernel(h, 0)
    kernel(h, 1)
    synchronize()


def eval_step():
    time.sleep(1000)


def below_host():
    for _ in range(8):
        h = enqueue()
        for x in [kernel(h, 0), kernel(h, 1)]:
            prof.stop(x)
    odd = CASE == "desync" and rank == ODD
    odd_type = os.environ.get("STANDIN_ODD_TYPE", "").encode()
    h = enqueue(1 << 19 if odd and not odd_type else 1 << 20,
                odd_type if odd and odd_type else b"ncclFloat32")
    if not (CASE == "busy" and rank == ODD):
        k = [kernel(h, 0), kernel(h, 1)]
        if CASE == "unseen":
            for x in k:
                prof.stop(x)
    if CASE == "busy":
        enqueue()  # the host runs ahead of its GPU, as PyTorch's does
    print("ready", flush=True)
    synchronize()


threading.Thread(target=dump_pipe, daemon=True).start()
if CASE:
    below_host()
for _ in range(5):
    h = enqueue()
    k = [kernel(h, 0), kernel(h, 1)]
    for x in k:
        prof.stop(x)
print("ready", flush=True)
(train_step if rank == 0 else eval_step)()
sys.exit(0)
