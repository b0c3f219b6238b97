"""The options students use with the public tests, and the guard that they test their own copy.

``--task ID`` runs one task's tests; in a student copy, tests of tasks not in the
assignment (``assigned_tasks.txt``) are skipped with the reason; the summary at the
end counts passes per task.

In a student copy (this file in ``tests/`` beside ``tinyattn/``), the copy's package is
put first on ``sys.path`` however pytest was started (``pytest tests``, ``python -m
pytest``, from any folder), so an installed tinyattn, which holds every solution, is
never what gets tested; if one was imported already, the run stops with one line. A copy of
a course of its own comes with tinyattn beside its files too; its folder is put first, so its
files are what the tests import, its notebooks too (``rotary.ipynb`` as ``import rotary``,
through ``notebook_import.py``).
"""

import os
import sys

import pytest

_COPY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_IN_A_COPY = os.path.isfile(os.path.join(_COPY, "tinyattn", "__init__.py"))
_IN_A_COPY = _IN_A_COPY and "TINYATTN_PACKAGE_ROOT" not in os.environ  # (check sets it: a package of its own)
if _IN_A_COPY and "tinyattn" not in sys.modules:
    sys.path.insert(0, _COPY)
if "TINYATTN_PACKAGE_ROOT" not in os.environ:
    import notebook_import

    if _COPY not in sys.path:
        sys.path.insert(0, _COPY)
    notebook_import.install(_COPY)


def _package_root():
    import tinyattn

    return os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))


def pytest_addoption(parser):
    parser.addoption("--task", action="append", default=[], metavar="ID", help="run only this task's tests")


def pytest_configure(config):
    config.addinivalue_line("markers", "task(id, points): the homework task a test grades, and its points")
    if _IN_A_COPY and os.path.realpath(_package_root()) != os.path.realpath(_COPY):
        pytest.exit(f"tinyattn was imported from {_package_root()}, not from this copy ({_COPY}); "
                    f"run `python -m pytest tests` in {_COPY}", returncode=4)


def pytest_report_header(config):
    return f"tinyattn under test: {_package_root()}"


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
            task = dict(getattr(report, "user_properties", ())).get("task")  # (a collection error has none)
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
    """Refuse to test a different tinyattn than the one asked for (TINYATTN_PACKAGE_ROOT)."""
    expected = os.environ.get("TINYATTN_PACKAGE_ROOT")
    if expected:
        import tinyattn

        got = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
        if os.path.realpath(got) != os.path.realpath(expected):
            raise pytest.UsageError(f"tinyattn was imported from {got}, expected {expected}")
