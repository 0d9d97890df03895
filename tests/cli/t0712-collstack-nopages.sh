#!/bin/bash
# collstack's stacks rule on jobs without coll's status pages (an MPI job,
# a PyTorch job on gloo): the frames of every collective library count as
# inside communication, Open MPI's and MPICH's internals with no MPI_ frame
# above them and torch.distributed's Python included, read from the
# innermost frames; a rank outside while the others are inside is named on
# the stacks alone (exit 1), though torch.distributed (FSDP's forward, the
# elastic agent's @record) is far down its stack.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
H=$(hostname)
asleep() { # the job's ranks (collrun's children) asleep: state S
	for p in $(pgrep -P "$JOB"); do sed 's/.*) //' "/proc/$p/stat" 2>/dev/null; done | grep -c '^S'
}
ready() { # ready N: until the job's N ranks said ready, then sleep where they wait (10 s each)
	for _ in $(seq 200); do [ "$(grep -c ready "$TMP/job.out")" -ge "$1" ] && break; sleep 0.05; done
	for _ in $(seq 200); do [ "$(asleep)" -ge "$1" ] && break; sleep 0.05; done
}

# 1. Native: ranks 0 and 3 in Open MPI's ring all-reduce, 1 in MPICH's, 2 computing.
"$BIN/collrun" -n 4 sh -c 'case $COLL_RANK in 2) w=compute;; 1) w=mpich;; *) w=ompi;; esac
	exec "$0" $w' "$COLL_BUILD/tests/mpi_like" >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
ready 4
collstack --no-color >"$TMP/o" 2>&1
expect_code 1 $? "MPI internals, no pages: a culprit"
check "... rank 2, from the stacks" grep -q "^=> rank 2 ($H, pid [0-9]*) holds the others up: named by 1 source (stacks)$" "$TMP/o"
check "... only rank 2" test "$(grep -c '^=> ' "$TMP/o")" -eq 1
check "... why, with where it is" grep -qE "^rank 2 \($H, pid [0-9]+\) is outside communication, in compute \(mpi_like.c:[0-9]+\) while 3 others are in a collective" "$TMP/o"
kill $JOB; wait $JOB 2>/dev/null

# 2. Python: torch.distributed's all_reduce on ranks 0, 2, 3; rank 1 in
# save_checkpoint, under FSDP's forward and the elastic agent's @record.
rm -f "$COLL_JOB_DIR"/*.json
T=$TMP/py/torch/distributed
mkdir -p "$T/elastic/multiprocessing/errors" "$T/fsdp"
touch "$TMP/py/torch/__init__.py" "$T/__init__.py" "$T/elastic/__init__.py" \
	"$T/elastic/multiprocessing/__init__.py" "$T/fsdp/__init__.py"
printf 'import time\ndef all_reduce(t):\n    while True:\n        time.sleep(1000)\n' >"$T/distributed_c10d.py"
printf 'def record(f):\n    def wrapper(*a):\n        return f(*a)\n    return wrapper\n' \
	>"$T/elastic/multiprocessing/errors/__init__.py"
printf 'def forward(f):\n    return f()\n' >"$T/fsdp/fully_sharded_data_parallel.py"
cat >"$TMP/py/train.py" <<'EOPY'
import os, time
from torch.distributed import distributed_c10d as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.fsdp.fully_sharded_data_parallel import forward

def save_checkpoint():
    while True:
        time.sleep(1000)

@record
def main():
    print("ready", flush=True)
    if os.environ["COLL_RANK"] == "1":
        forward(save_checkpoint)
    forward(lambda: dist.all_reduce(1))

main()
EOPY
PYTHONPATH=$TMP/py "$BIN/collrun" -n 4 python3 "$TMP/py/train.py" >"$TMP/job.out" 2>&1 &
JOB=$!
echo $JOB >>"$TMP/pids"
ready 4
collstack --no-color >"$TMP/o" 2>&1
expect_code 1 $? "torch.distributed, no pages: a culprit"
check "... rank 1, from the stacks" grep -q "^=> rank 1 ($H, pid [0-9]*) holds the others up: named by 1 source (stacks)$" "$TMP/o"
check "... only rank 1" test "$(grep -c '^=> ' "$TMP/o")" -eq 1
check "... in save_checkpoint, 3 others inside" grep -qE "^rank 1 \($H, pid [0-9]+\) is outside communication, in save_checkpoint \(train.py:[0-9]+\) while 3 others are in a collective" "$TMP/o"
kill $JOB; wait $JOB 2>/dev/null
finish
