#!/usr/bin/env python3
"""A stand-in for NCCL's RAS service in collstack's tests (t0116, t0117,
t0302): it speaks the client protocol as NCCL 2.28.9 did on the GPU machine
and answers VERBOSE STATUS with a report NCCL wrote there (tests/stack/ras/),
its pids replaced by the test's processes. Modes: json, text (an older
server: no SET FORMAT json), old (protocol 1), silent (never answers),
garbage, moving (each report one all-reduce further on for rank 0: a job
making progress).

collstack believes a RAS service only where one of the job's processes holds
its listening socket, as NCCL's own does (its RAS thread runs in every rank).
So a test's rank can host the stand-in: --then SCRIPT serves from a thread and
runs SCRIPT as the process's main program; NEWPID "self" is this process's
pid; MODE "file:PATH" reads "MODE REPORT" from PATH at each connection, so
that one long-lived rank serves each mode a test asks for in turn.
usage: ras_server.py MODE REPORT PORTFILE [OLDPID=NEWPID...] [--then SCRIPT]"""
import os
import runpy
import socket
import sys
import threading

args = sys.argv[1:]
then = None
if "--then" in args:
    then = args[args.index("--then") + 1]
    args = args[:args.index("--then")]
mode_arg, report_arg, portfile = args[:3]
subs = [s.split("=") for s in args[3:]]


def config():
    """The mode and the report text, pids replaced."""
    mode, report = mode_arg, report_arg
    if mode.startswith("file:"):
        mode, report = open(mode[5:]).read().split()
    text = open(report).read()
    for old, new in subs:
        new = str(os.getpid()) if new == "self" else new
        text = text.replace('"pid": %s,' % old, '"pid": %s,' % new)
        text = text.replace("process %s on" % old, "process %s on" % new)
    return mode, text


def answer(c, served):
    mode, text = config()
    f = c.makefile("rwb", buffering=0)
    try:
        if mode == "garbage":
            f.write(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            raise OSError
        for line in f:
            cmd = line.decode().strip()
            if mode == "silent":
                continue
            if cmd.startswith("CLIENT PROTOCOL"):
                f.write(b"SERVER PROTOCOL %d\n" % (1 if mode == "old" else 2))
            elif cmd.startswith("TIMEOUT"):
                f.write(b"OK\n")
            elif cmd == "SET FORMAT json":
                f.write(b"ERROR: Invalid format json\n" if mode == "text" else b"OK\n")
            elif cmd == "VERBOSE STATUS":
                out = text
                if mode == "moving":
                    out = text.replace('"AllReduce": 6', '"AllReduce": %d' % (5 + served), 1)
                f.write(out.encode())
                break
            else:
                f.write(b"ERROR: Unknown command %s\n" % cmd.encode())
    except OSError:
        pass
    f.close()  # the socket closes only once its file is closed too: the report's end
    c.close()


def serve(srv):
    served = 0
    while True:
        c, _ = srv.accept()
        served += 1
        answer(c, served)


srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
if then is None:
    serve(srv)
threading.Thread(target=serve, args=(srv,), daemon=True).start()
sys.argv = [then]
runpy.run_path(then, run_name="__main__")
