"""A stand-in for torchrun (torch.distributed.run, PyTorch's elastic agent)
in collstack's tests: started as `python3 -m torch.distributed.run` with this
directory on PYTHONPATH, or through the `torchrun` script beside it, it
starts --nproc-per-node workers (python3 -u SCRIPT ARGS...) with the
variables torchrun gives them (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK,
ROLE_RANK, LOCAL_WORLD_SIZE, TORCHELASTIC_RUN_ID, MASTER_ADDR/PORT), and
watches them as the agent does: its main thread polls in time.sleep, not in
wait(2). --nnodes/--node-rank give GROUP_RANK and the ranks' offset."""
import os
import subprocess
import sys
import time
import uuid


def args(argv):
    opts, i = {"nproc-per-node": "1", "nnodes": "1", "node-rank": "0"}, 0
    while i < len(argv) and argv[i].startswith("--"):
        k, _, v = argv[i][2:].replace("_", "-").partition("=")
        if not v:
            i += 1
            v = argv[i]
        opts[k] = v
        i += 1
    return opts, argv[i:]


def main():
    opts, cmd = args(sys.argv[1:])
    n, nodes, node = int(opts["nproc-per-node"]), int(opts["nnodes"]), int(opts["node-rank"])
    run_id = os.environ.get("TORCHRUN_STANDIN_RUN_ID", str(uuid.uuid4()))
    procs = []
    for local in range(n):
        env = dict(os.environ, RANK=str(node * n + local), LOCAL_RANK=str(local),
                   WORLD_SIZE=str(nodes * n), LOCAL_WORLD_SIZE=str(n), GROUP_RANK=str(node),
                   ROLE_RANK=str(node * n + local), ROLE_NAME="default",
                   TORCHELASTIC_RUN_ID=run_id, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
        procs.append(subprocess.Popen([sys.executable, "-u"] + cmd, env=env))
    while all(p.poll() is None for p in procs):
        time.sleep(0.1)
    for p in procs:
        p.kill()
    return 1


if __name__ == "__main__":
    sys.exit(main())
