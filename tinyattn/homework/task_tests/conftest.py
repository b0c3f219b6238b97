"""Shared fixtures of the homework tests, and the options students use.

``reference`` loads the values the reference implementation computed when the
assignment was made (``reference_values.npz``, shipped with the autograder only).
``--task ID`` runs one task's tests; in a student copy, tests of tasks not in the
assignment (``assigned_tasks.txt``) are skipped with the reason; the summary at the
end counts passes per task.
"""

import os

import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption("--task", action="append", default=[], metavar="ID", help="run only this task's tests")


def pytest_configure(config):
    config.addinivalue_line("markers", "task(id, points): the homework task a test grades, and its points")


def _task_of(item):
    marker = item.get_closest_marker("task")
    return marker.kwargs.get("id") if marker else None


def pytest_collection_modifyitems(config, items):
    wanted = set(config.getoption("--task"))
    assigned_file = os.path.join(os.path.dirname(__file__), "assigned_tasks.txt")
    assigned = None
    if os.path.exists(assigned_file):
        with open(assigned_file, encoding="utf-8") as f:
            assigned = {line.strip() for line in f if line.strip()}
    known = {_task_of(item) for item in items}
    unknown = wanted - known
    if unknown:
        listed = ", ".join(sorted(t for t in known if t))
        raise pytest.UsageError(f"--task: no test grades {', '.join(sorted(unknown))} (tasks: {listed})")
    if wanted:
        items[:] = [item for item in items if _task_of(item) in wanted]
    for item in items:
        task = _task_of(item)
        if assigned is not None and task not in assigned:
            item.add_marker(pytest.mark.skip(reason=f"task {task} is not part of this assignment"))


def pytest_terminal_summary(terminalreporter):
    """One line per task: how many of its tests passed."""
    per_task = {}
    for status in ("passed", "failed", "error"):
        for report in terminalreporter.stats.get(status, []):
            if report.when != "call" and status != "error":
                continue
            task = dict(report.user_properties).get("task")
            if task:
                counts = per_task.setdefault(task, [0, 0])
                counts[0] += status == "passed"
                counts[1] += 1
    if per_task:
        terminalreporter.section("tasks")
        for task, (passed, total) in sorted(per_task.items()):
            terminalreporter.line(f"{task:<22} {passed}/{total} passed")


def pytest_runtest_setup(item):
    task = _task_of(item)
    if task:
        item.user_properties.append(("task", task))


def pytest_sessionstart(session):
    """Refuse to grade a different tinyattn than the one asked for (TINYATTN_PACKAGE_ROOT)."""
    expected = os.environ.get("TINYATTN_PACKAGE_ROOT")
    if expected:
        import tinyattn

        got = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
        if os.path.realpath(got) != os.path.realpath(expected):
            raise pytest.UsageError(f"tinyattn was imported from {got}, expected {expected}")


@pytest.fixture(scope="session")
def reference():
    beside = os.path.join(os.path.dirname(__file__), "reference_values.npz")
    path = os.environ.get("TINYATTN_REFERENCE_VALUES") or beside
    if not os.path.exists(path):
        pytest.fail(f"reference values not found at {path}")
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def assert_matches_reference(got: dict, reference: dict, prefix: str) -> None:
    """Every array a probe computed equals the reference's (float64, tight tolerance)."""
    keys = sorted(k for k in reference if k.startswith(prefix + "/"))
    assert keys, f"no reference values for {prefix}"
    for key in keys:
        name = key.split("/", 1)[1]
        assert name in got, f"missing {name}"
        np.testing.assert_allclose(np.asarray(got[name]), reference[key], rtol=1e-7, atol=1e-9, err_msg=key)
