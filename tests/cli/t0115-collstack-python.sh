#!/bin/bash
# collstack on Python processes: each thread's Python functions, with their
# lines, in place of the evaluation-loop frames that run them, so native and
# Python frames interleave (a key function called back from C's sorted(), a
# generator, 30 frames of recursion); the rank's "where" is the user's own
# function; C++ names are demangled. Every CPython this machine has from 3.11 on is tried (python3,
# and 3.12/3.13 where found); an older one is said, not misread.
. "$(dirname "$0")/lib.sh"
collstack() { "$BIN/collstack" "$@"; }
SRC=$COLL_SRC/tests/stack/py_target.py
at() { grep -n "# at: $1\$" "$SRC" | cut -d: -f1; }

# Start SRC under $1 with depth $2; its pid in $pid once it says ready.
start() {
	"$1" "$SRC" "$2" >"$TMP/py.out" 2>&1 &
	pid=$!
	echo $pid >>"$TMP/pids"
	for _ in $(seq 100); do grep -q ready "$TMP/py.out" && break; sleep 0.1; done
	sleep 0.3	# from "ready" to the sleeps: a few instructions
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }

# The first of each version that runs (a pyenv shim of a version not chosen does not).
interpreters() {
	for v in 3 3.11 3.12 3.13 3.10; do
		for c in $(command -v "python$v") \
		    $(ls "${PYENV_ROOT:-$HOME/.pyenv}"/versions/$v.*/bin/python$v 2>/dev/null); do
			"$c" -c pass 2>/dev/null && { echo "$c"; break; }
		done
	done
}

tried=0 old=0
for py in $(interpreters); do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
	start "$py" 30
	collstack --pid "$pid" --no-color >"$TMP/o" 2>"$TMP/e"
	code=$?
	collstack --pid "$pid" --json >"$TMP/j" 2>>"$TMP/e"
	stop
	if [ "$ver" = 3.10 ]; then
		old=1
		check "$ver: said, not read" grep -q "^note: task 0 ($(hostname), pid $pid): Python 3.10: its frames are not read (collstack reads 3.11 to 3.13)$" "$TMP/o"
		check "$ver: no Python frame made up" sh -c "! grep -q 'py_target.py' '$TMP/o'"
		continue
	fi
	tried=$((tried + 1))
	expect_code 0 $code "$ver: read"
	check "$ver: nothing on stderr" test ! -s "$TMP/e"
	check "$ver: the main thread's functions at their lines" python3 - "$TMP/j" "$(at module)" "$(at main)" "$(at train_step)" "$(at wait_for_peer)" "$(at lambda)" "$(at inner)" "$(at consume)" "$(at gen_wait)" "$(at deep)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
module, main, step, peer, lam, inner, consume, gen, deep = map(int, sys.argv[2:])

def paths(nodes, pre=()):
    for n in nodes:
        p = pre + (n,)
        if not n["children"]:
            yield p
        yield from paths(n["children"], p)

def py(p):
    return [(n["frame"], n["line"]) for n in p if n["python"]]

def leaf_with(name):
    got = [p for p in paths(d["tree"]) if any(n["frame"] == name for n in p)]
    assert len(got) == 1, (name, len(got))
    return got[0]

# Outermost first, each at the line it is at.
p = leaf_with("wait_for_peer")
assert py(p) == [("<module>", module), ("main", main), ("Trainer.train_step", step),
                 ("wait_for_peer", peer)], py(p)
# The C call to time.sleep is below the Python frames, and the process's
# entry above them: native frames on both sides.
i = [n["frame"] for n in p].index("wait_for_peer")
assert not p[i + 1]["python"] and not p[0]["python"], [n["frame"] for n in p]
# Every evaluation-loop frame took Python frames' place: none is left.
for q in paths(d["tree"]):
    assert all(n["frame"] != "_PyEval_EvalFrameDefault" for n in q), [n["frame"] for n in q]
# sorted() is C: native frames between through_c and the key function it calls.
p = leaf_with("through_c.<locals>.<lambda>")
f = [n["frame"] for n in p]
a, b = f.index("through_c"), f.index("through_c.<locals>.<lambda>")
assert b > a + 1 and not any(n["python"] for n in p[a + 1:b]), f
assert py(p)[-2:] == [("through_c.<locals>.<lambda>", lam), ("inner", inner)], py(p)
# A generator's frame, under the loop that drives it.
p = leaf_with("gen_wait")
assert py(p)[-2:] == [("consume", consume), ("gen_wait", gen)], py(p)
# 30 levels of recursion, all there, then inner.
p = leaf_with("deep")
got = py(p)
assert got.count(("deep", deep)) == 30 and got[-1] == ("inner", inner), got
# Where the main thread is: the user's own function.
t = d["tasks"][0]
assert t["where"] == "wait_for_peer (py_target.py:%d)" % peer, t
assert "note" not in t, t
PY
	check "$ver: the text tree shows Python frames as file:line" grep -q "Trainer.train_step (py_target.py:$(at train_step))" "$TMP/o"
done
check "at least one Python from 3.11 on was tried (found $tried)" test "$tried" -ge 1
[ "$old" = 1 ] || echo "skip - no Python 3.10 here: the note for an older one not tried"

# A Python that is not what its name says (a copy of the interpreter that
# exports no _PyRuntime is not possible to make here; a plain program named
# python3.11 is): it is said, and its native frames are still shown.
cp "$COLL_BUILD/tests/stack_target" "$TMP/python3.11"
"$TMP/python3.11" >"$TMP/t.out" 2>&1 &
pid=$!
echo $pid >>"$TMP/pids"
for _ in $(seq 100); do grep -q ready "$TMP/t.out" && break; sleep 0.1; done
collstack --pid "$pid" --no-color >"$TMP/o" 2>&1
expect_code 0 $? "a program named python3.11 that is not one: read"
check "... its missing interpreter said" grep -q "note: task 0 .*: Python frames not read: no _PyRuntime, PyCode_Type or PyUnicode_Type symbol in python3.11$" "$TMP/o"
check "... its native frames shown" grep -q "target_sleep" "$TMP/o"
stop

# C++ symbols read as C++ (libtorch's are what users see most): demangled.
if command -v c++ >/dev/null && c++ -O0 -g0 -x c++ -o "$TMP/cx" - <<'CXX'
#include <unistd.h>
namespace ns { template <class T> struct W { static void run(T) { for (;;) pause(); } }; }
int main() { ns::W<int>::run(1); }
CXX
then
	"$TMP/cx" &
	pid=$!
	echo $pid >>"$TMP/pids"
	for _ in $(seq 100); do grep -q pause "/proc/$pid/wchan" 2>/dev/null && break
		[ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = S ] && break; sleep 0.05; done
	collstack --pid "$pid" --no-color >"$TMP/o" 2>&1
	check "C++: a template's static member, demangled" grep -q "ns::W<int>::run(int) (cx)$" "$TMP/o"
	stop
else
	echo "skip - no C++ compiler here: demangling not tried"
fi
finish
