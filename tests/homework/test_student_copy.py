"""A student copy's public tests test the copy's package, however pytest is started.

This environment has tinyattn installed (the reference: every task solved), which is what
a student who also `pip install`ed tinyattn has. A blank copy must fail its tests, never
pass them on the installed reference.
"""

import json
import os
import subprocess
import sys

import pytest

from tinyattn.homework import commands

TASKS = ["softmax_backward", "adam_step"]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("copy") / "hw"
    commands.assign(str(out), TASKS)
    return out / "student"


def pytest_run(argv, cwd, extra_env=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TINYATTN_PACKAGE_ROOT")}
    env |= {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(extra_env or {})}
    return subprocess.run(argv + ["-p", "no:cacheprovider"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


PYTEST = os.path.join(os.path.dirname(sys.executable), "pytest")


@pytest.mark.parametrize("how", ["pytest tests", "pytest in tests/", "python -m pytest, from elsewhere"])
def test_a_blank_copy_fails_its_tests_however_pytest_is_started(copy, tmp_path, how):
    import tinyattn

    installed = os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))
    assert os.path.realpath(installed) != os.path.realpath(copy)  # an installed reference is importable here
    argv, cwd = {
        "pytest tests": ([PYTEST, "tests"], copy),
        "pytest in tests/": ([PYTEST], copy / "tests"),
        "python -m pytest, from elsewhere": ([sys.executable, "-m", "pytest", str(copy / "tests")], tmp_path),
    }[how]
    run = pytest_run(argv, cwd)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"tinyattn under test: {copy}" in run.stdout
    assert "3 failed" in run.stdout and "passed" not in run.stdout.splitlines()[-1]


def test_a_copy_whose_tinyattn_was_imported_from_elsewhere_stops_with_one_line(copy, tmp_path):
    (tmp_path / "preload.py").write_text("import tinyattn\n")  # a plugin that imports the installed package first
    run = pytest_run([PYTEST, "-p", "preload", "tests"], copy, {"PYTHONPATH": str(tmp_path)})
    assert run.returncode == 4
    said = (run.stdout + run.stderr).strip().splitlines()
    assert len(said) == 1 and "not from this copy" in said[0] and "python -m pytest tests" in said[0], said


def _readme_commands(copy, after):
    """The commands the student's README gives after the line starting ``after``, as written (indented lines)."""
    lines = (copy / "README_STUDENT.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    found = []
    for line in lines[start + 1:]:
        if line.startswith("    "):
            found.append(line.strip())
        elif found and line.strip():
            break
    return found


@pytest.mark.slow  # (a fresh venv and pip: about a minute)
@pytest.mark.parametrize("course", ["shipped", "example"])
def test_a_student_copy_sets_up_and_tests_on_a_fresh_machine_as_its_readme_says(tmp_path, course):
    """The README's set-up commands, run as written in a venv with nothing installed: the solved copy's public
    tests pass (the copy's own tinyattn under test), the blank copy's fail."""
    import pathlib
    import shlex

    example = pathlib.Path(__file__).parents[2] / "examples" / "course"
    chosen = commands.course_at(str(example)) if course == "example" else None
    out = tmp_path / "hw"
    commands.assign(str(out), None if chosen else TASKS, course=chosen)
    copy = out / "student"
    setup = _readme_commands(copy, "Set up once")
    assert setup == ["python -m venv .venv", ".venv/bin/python -m pip install -r requirements.txt"], setup
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TINYATTN_PACKAGE_ROOT")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if "venv" not in p)
    for command in setup:
        argv = shlex.split(command)
        if argv[0] == "python":  # (the machine's own Python, not this test's venv)
            argv[0] = sys.executable if sys.prefix == sys.base_prefix else os.path.join(sys.base_prefix, "bin",
                                                                                         "python3")
        done = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    listed = subprocess.run([str(copy / ".venv/bin/python"), "-m", "pip", "list"], capture_output=True, text=True)
    assert "tinyattn" not in listed.stdout  # (nothing but what the requirements name)
    test = shlex.split(_readme_commands(copy, "Run the public tests")[0])
    blank = subprocess.run(test, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert blank.returncode == 1 and "failed" in blank.stdout, blank.stdout[-2000:]
    commands.solve(str(copy), list(json.loads((out / "manifest.json").read_text())["tasks"]), chosen)
    solved = subprocess.run(test, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert solved.returncode == 0, solved.stdout[-3000:] + solved.stderr[-2000:]
    assert f"tinyattn under test: {copy}" in solved.stdout or course == "example"
