#!/usr/bin/env python3
"""A stand-in for NCCL's RAS service in collstack's tests (t0116): it speaks
the client protocol as NCCL 2.28.9 did on the GPU machine and answers
VERBOSE STATUS with a report NCCL wrote there (tests/stack/ras/), its pids
replaced by the test's processes. Modes: json, text (an older server: no SET
FORMAT json), old (protocol 1), silent (never answers), garbage, moving (each
report one all-reduce further on for rank 0: a job making progress).
usage: ras_server.py MODE REPORT PORTFILE [OLDPID=NEWPID...]"""
import socket
import sys

mode, report, portfile = sys.argv[1:4]
text = open(report).read()
for sub in sys.argv[4:]:
    old, new = sub.split("=")
    text = text.replace('"pid": %s,' % old, '"pid": %s,' % new)
    text = text.replace("process %s on" % old, "process %s on" % new)

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
import os
os.rename(portfile + ".tmp", portfile)

served = 0
while True:
    c, _ = srv.accept()
    served += 1
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
