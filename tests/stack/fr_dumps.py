#!/usr/bin/env python3
"""Write flight recorder dumps shaped as PyTorch writes them (one pickle per
rank, PREFIX<rank>), for collstack --fr's tests: the keys, the (name, desc)
tuple of the process group, frames, None for times not reached, nanosecond
times past 2**31. Protocol 2 as torch's pickler; rank 1 in protocol 4, so
that FRAME, MEMOIZE and short strings are read too.

    fr_dumps.py PREFIX SCENARIO     hang | mismatch | ok | missing
"""
import pickle
import sys

T0 = 1_760_000_000_000_000_000


def frames(rank, where):
    return [{"name": where, "filename": "/work/train.py", "line": 31 + rank},
            {"name": "main", "filename": "/work/train.py", "line": 50},
            {"name": "<module>", "filename": "/work/train.py", "line": 60}]


def entry(rank, seq, op="nccl:all_reduce", state="completed", sizes=((1024,),),
          where="train_step"):
    done = state == "completed"
    return {
        "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"),
        "thread_name": "pt_main_thread", "thread_id": "140000000000000",
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
        "profiling_name": op, "time_created_ns": T0 + seq * 1000,
        "duration_ms": 0.25 if done else None,
        "input_sizes": [list(s) for s in sizes], "input_dtypes": ["Float"] * len(sizes),
        "output_sizes": [list(s) for s in sizes], "output_dtypes": ["Float"] * len(sizes),
        "state": state,
        "time_discovered_started_ns": T0 + seq * 1000 + 10 if state != "scheduled" else None,
        "time_discovered_completed_ns": T0 + seq * 1000 + 20 if done else None,
        "retired": done, "timeout_ms": 600000, "is_p2p": False,
        "frames": frames(rank, where),
    }


def dump(rank, nranks, entries):
    last = max((e["collective_seq_id"] for e in entries), default=0)
    return {
        "version": "2.10", "comm_lib_version": "2.28.9",
        "pg_config": {"0": {"name": "0", "desc": "default_pg",
                            "ranks": "[" + ", ".join(map(str, range(nranks))) + "]"}},
        "pg_status": {"0": {"last_enqueued_collective": last,
                            "last_started_collective": last,
                            "last_completed_collective": last}},
        "entries": entries,
    }


def main():
    prefix, scenario = sys.argv[1], sys.argv[2]
    nranks = 3 if scenario == "missing" else 2
    for rank in range(2):
        if scenario == "hang":
            # Rank 1 stopped calling collectives: rank 0 waits in seq 5.
            ents = [entry(rank, s) for s in range(1, 5)]
            if rank == 0:
                ents.append(entry(rank, 5, state="started"))
            else:
                ents[-1]["frames"] = frames(rank, "eval_step")
        elif scenario == "mismatch":
            # Seq 3: rank 1 broadcasts where rank 0 all-reduces.
            ents = [entry(rank, s, op="nccl:broadcast" if rank == 1 and s == 3
                          else "nccl:all_reduce") for s in range(1, 6)]
        else:
            ents = [entry(rank, s) for s in range(1, 6)]
        with open(f"{prefix}{rank}", "wb") as f:
            pickle.dump(dump(rank, nranks, ents), f, protocol=4 if rank else 2)


main()
