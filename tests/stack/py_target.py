# A Python process for collstack's Python frames (tests/cli/t0115): three
# threads parked in known places, each line the test looks for marked with a
# "# at:" comment. "ready" on stdout once all four reach their barrier, a few
# instructions before their sleeps.
import sys
import threading
import time

parked = threading.Barrier(4, action=lambda: print("ready", flush=True))


def wait_for_peer():
    parked.wait()
    time.sleep(1000)  # at: wait_for_peer


class Trainer:
    def train_step(self):
        return wait_for_peer()  # at: train_step


def inner():
    parked.wait()
    time.sleep(1000)  # at: inner
    return 0


def through_c():
    # sorted() is C: the key function runs in a second call of the eval loop.
    return sorted([1], key=lambda x: inner())  # at: lambda


def gen_wait():
    parked.wait()
    time.sleep(1000)  # at: gen_wait
    yield 1


def consume():
    for _ in gen_wait():  # at: consume
        pass


def deep(n):
    if n == 0:
        return inner()
    return deep(n - 1)  # at: deep


def main():
    threading.Thread(target=through_c, name="through_c", daemon=True).start()
    threading.Thread(target=consume, name="consume", daemon=True).start()
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    threading.Thread(target=deep if depth else inner, args=(depth,) if depth else (),
                     name="deep", daemon=True).start()
    Trainer().train_step()  # at: main


main()  # at: module
