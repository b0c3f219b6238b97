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


def test_with_several_workers_one_of_them_runs_every_grading_test():
    from tests.conftest import grading_on_one_worker

    scheduler = object.__new__(grading_on_one_worker())  # (its scopes need no running workers)
    grading = {scheduler._split_scope(nodeid) for nodeid in (
        "tests/homework/test_attacks.py::test_a_fork_bomb_is_bounded_and_killed",
        "tests/homework/test_gradescope.py::test_a_full_solution_scores_everything")}
    others = {scheduler._split_scope(nodeid) for nodeid in (
        "tests/nn/test_attention.py::test_shapes[2]", "tests/nn/test_attention.py::test_masks",
        "tests/test_readme.py::test_commands")}
    assert len(grading) == 1 and len(others) == 3  # (the other tests are handed out one by one)
