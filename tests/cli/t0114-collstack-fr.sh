#!/bin/bash
# collstack --fr: PyTorch flight recorder dumps (written here as PyTorch
# writes them, tests/stack/fr_dumps.py) matched across ranks by process group
# and collective_seq_id: the rank that did not join, a desync, a rank with no
# dump, agreement; and dumps that are not plain data, cut short or misnamed.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
GEN=${COLL_SRC:?}/tests/stack/fr_dumps.py
P=$TMP/fr/nccl_trace_rank_
mk() { rm -rf "$TMP/fr"; mkdir -p "$TMP/fr"; python3 "$GEN" "$P" "$1"; }

mk hang
collstack --fr "$P" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "hang: a culprit"
check "hang: rank 1 did not join seq 5, with its newest op" grep -qx "rank 1 did not join nccl:all_reduce seq 5: its newest is nccl:all_reduce seq 4 (completed, thread 'pt_main_thread'), from eval_step (train.py:32) < main (train.py:50) < <module> (train.py:60)" "$TMP/o"
check "hang: rank 0 is in seq 5, from train_step" grep -qx "  rank 0: nccl:all_reduce seq 5 started, from train_step (train.py:31) < main (train.py:50) < <module> (train.py:60)" "$TMP/o"
check "hang: the group and its ranks" grep -q "^process group 0 'default_pg' (ranks 0-1): newest collective nccl:all_reduce seq 5, in 1 of the 2 dumps$" "$TMP/o"
check "hang: nothing on stderr" test ! -s "$TMP/e"
collstack --fr "$TMP/fr" --json >"$TMP/j"
expect_code 1 $? "hang, a directory, --json"
check "hang --json: one finding, rank 1 not joined at seq 5 (last seq 4)" python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
f=d["findings"]
assert d["dumps"]==2 and len(f)==1, d
assert f[0]["kind"]=="not_joined" and f[0]["rank"]==1 and f[0]["seq"]==5 and f[0]["last_seq"]==4, f' "$TMP/j"
collstack --fr "${P}0" "${P}1" >"$TMP/o2"
expect_code 1 $? "hang, the two files named"
check "... the same report" cmp -s "$TMP/o" "$TMP/o2"

# Dumps PyTorch 2.11 wrote on an H200 pair (tests/gpu/fr_hang.sh): its own pickler.
collstack --fr "$COLL_SRC/tests/stack/fr_torch/x_" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "PyTorch's own dumps: a culprit"
check "PyTorch's own dumps: rank 1 did not join all-reduce seq 6 (as fr_trace says)" grep -q "^rank 1 did not join nccl:all_reduce seq 6: its newest is nccl:all_reduce seq 5 (completed, thread 'python3'), from all_reduce (distributed_c10d.py:[0-9]*) < wrapper (c10d_logger.py:[0-9]*) < train_step (fr_hang.py:18) < main (fr_hang.py:34)$" "$TMP/o"
check "PyTorch's own dumps: rank 0 waits in it, scheduled, from train_step" grep -q "^  rank 0: nccl:all_reduce seq 6 scheduled, from .* train_step (fr_hang.py:18) < main (fr_hang.py:41)$" "$TMP/o"
check "PyTorch's own dumps: nothing on stderr" test ! -s "$TMP/e"
check "PyTorch's own dumps: format 2.10 and NCCL's version" grep -qx "dumps of format 2.10; communication library 2.28.9 on every rank" "$TMP/o"
# The same two dumps in dump_fr_trace_json's form (written by hand: tests/stack/fr_json/README.md).
collstack --fr "$COLL_SRC/tests/stack/fr_json/x_" >"$TMP/oj" 2>&1
expect_code 1 $? "the JSON twins: a culprit"
check "the JSON twins: the same report, less the frames" sh -c "sed 's/, from .*//' '$TMP/o' | cmp -s - '$TMP/oj'"

# A directory that holds other files too: they are passed over, and said.
mk hang
echo "not a dump" >"$TMP/fr/notes.1"
collstack --fr "$TMP/fr" >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a directory with a stray file: still read"
check "... the stray file is passed over, and said" grep -q "^collstack: passed over $TMP/fr/notes.1: not a flight recorder dump" "$TMP/e"
check "... the dumps are matched all the same" grep -q '^rank 1 did not join nccl:all_reduce seq 5' "$TMP/o"
# A prefix that ends in a digit: the rank is what follows it.
rm -rf "$TMP/fr"; mkdir -p "$TMP/fr"; python3 "$GEN" "$TMP/fr/job4" hang
collstack --fr "$TMP/fr/job4" >"$TMP/o" 2>&1
expect_code 1 $? "prefix job4: a culprit"
check "... ranks 0 and 1, not 40 and 41" grep -q '^rank 1 did not join nccl:all_reduce seq 5' "$TMP/o"
# An older format (seq_id, no collective_seq_id): said, not taken for agreement.
mk ok
python3 -c '
import pickle,sys
for f in sys.argv[1:]:
    d=pickle.load(open(f,"rb"))
    for e in d["entries"]: e["seq_id"]=e.pop("collective_seq_id")
    pickle.dump(d,open(f,"wb"),protocol=2)' "${P}0" "${P}1"
collstack --fr "$P" >"$TMP/o" 2>&1
expect_code 3 $? "entries with no collective_seq_id"
check "... said, and no agreement claimed" sh -c "grep -q 'carry no collective_seq_id' '$TMP/o' && ! grep -q '^every rank' '$TMP/o'"

mk mismatch
collstack --fr "$P" >"$TMP/o" 2>&1
expect_code 1 $? "mismatch: a culprit"
check "mismatch: seq 3, broadcast against all-reduce" grep -qx "mismatch in process group 0 at seq 3: rank 1's profiling_name differs from rank 0's (nccl:broadcast against nccl:all_reduce)" "$TMP/o"
check "mismatch: nobody is behind" sh -c "! grep -q 'did not join' '$TMP/o'"

mk missing
collstack --fr "$P" >"$TMP/o" 2>&1
expect_code 1 $? "a rank with no dump"
check "... named" grep -qx "rank 2 of the group has no dump here (or no entry of the group in it)" "$TMP/o"

mk ok
collstack --fr "$P" >"$TMP/o" 2>&1
expect_code 0 $? "all agree"
check "... said" grep -q '^every rank of every process group reached the newest collective' "$TMP/o"

# What is not a dump is refused in one line, naming the file.
python3 -c 'import pickle,datetime,sys; open(sys.argv[1],"wb").write(pickle.dumps({"t": datetime.date(2026,1,1)}, protocol=2))' "$TMP/fr/evil_0"
collstack --fr "$TMP/fr/evil_0" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a pickle that names a class"
check "... refused, nothing run" grep -q "^collstack: $TMP/fr/evil_0: not a flight recorder dump: opcode 0x63 at byte [0-9]* is not plain data" "$TMP/e"
head -c 300 "${P}0" >"$TMP/fr/cut_0"
collstack --fr "$TMP/fr/cut_0" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a dump cut short"
check "... said" grep -q "cut_0: not a flight recorder dump: .*\(ends\|past the end\|no STOP\)" "$TMP/e"
check "... in one line" test "$(wc -l <"$TMP/e")" -eq 1
cp "${P}0" "$TMP/fr/norank"
collstack --fr "$TMP/fr/norank" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "a dump with no rank in its name"
check "... said" grep -q "norank: cannot tell its rank" "$TMP/e"
collstack --fr "$TMP/nothere_" >"$TMP/o" 2>"$TMP/e"
expect_code 3 $? "no such prefix"
check "... said" grep -q "nothere_: no dump found" "$TMP/e"
collstack --fr "$P" --dot >"$TMP/o" 2>&1
expect_code 2 $? "--fr --dot"
collstack --fr "$P" --pid 1 >"$TMP/o" 2>&1
expect_code 2 $? "--fr with another selection"
finish
