"""Two gradings at once would kill each other's tasks: the grading tests take turns (see conftest.py)."""

import fcntl
import multiprocessing
import time

from . import conftest


def _hold_the_lock(started, seconds):
    with open(conftest.LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started.set()
        time.sleep(seconds)


def test_a_grading_test_holds_the_lock_that_another_worker_s_waits_for():
    # a second worker's grading test, started while this one runs, waits for it to end
    started = multiprocessing.Event()
    other = multiprocessing.Process(target=_hold_the_lock, args=(started, 0))
    other.start()
    assert not started.wait(0.5), "another process took the lock while a grading test held it"
    other.kill()
    other.join()
