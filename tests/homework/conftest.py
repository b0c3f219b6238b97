"""The grading tests' fake Gradescope machine is removed at the end of the session, and the grading tests run
one at a time, also when the suite runs on several workers (``python -m pytest -n auto``) or twice at once.

A grader that isolates the student's code kills every process of the student user when a task ends (as
Gradescope's one grader per machine allows), so two gradings at once would kill each other's tasks. Every test
here holds one lock, a file in the temporary folder, for as long as it runs; and with ``-n``, one worker gets
them all (``tests/conftest.py``), so that no other waits for it.
"""

import fcntl
import os
import tempfile

import pytest

from .gradescope_box import remove_student_venv


@pytest.fixture(scope="session", autouse=True)
def _student_venv_is_removed_at_the_end():
    yield
    remove_student_venv()


# (one per user: only root's gradings run code as the student user, and another user's runs can open their own)
LOCK = os.path.join(tempfile.gettempdir(), f"tinyattn-tests-grading-{os.getuid()}.lock")


@pytest.fixture(autouse=True)
def _one_grading_at_a_time():
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
        yield
