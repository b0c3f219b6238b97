"""A student copy's public tests test the copy's package, however pytest is started.

This environment has tinyattn installed (the reference: every task solved), which is what
a student who also `pip install`ed tinyattn has. A blank copy must fail its tests, never
pass them on the installed reference.
"""

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
