"""What an installed package offers beyond the code: its files, its CLIs' --version, what pytest finds in it."""

import os
import subprocess
import sys

import tinyattn
from tinyattn.homework.__main__ import main as homework_main
from tinyattn.homework.shipped import shipped_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_pytest_pyargs_collects_nothing_from_the_package(tmp_path):
    """The homework's task tests grade a student's copy; run on the reference package they are not tests."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "tinyattn", "--collect-only", "-q",
                          "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 5, run.stdout + run.stderr  # pytest's "no tests collected"
    assert "no tests collected" in run.stdout and "error" not in run.stdout.lower()


def test_the_files_a_built_package_ships_are_the_checkouts():
    """setup.py copies LICENSE and docs/teaching.md into the wheel; a checkout reads them in place."""
    assert shipped_text("LICENSE") == read("LICENSE") and read("LICENSE").startswith("MIT License")
    assert shipped_text("teaching.md") == read("docs", "teaching.md")
    assert os.path.isfile(os.path.join(os.path.dirname(tinyattn.__file__), "py.typed"))
    assert "[metadata]" in read("setup.cfg") and "license = MIT" in read("setup.cfg")


def test_homework_guide_prints_the_teaching_guide(capsys):
    assert homework_main(["guide"]) == 0
    assert capsys.readouterr().out == read("docs", "teaching.md")


def test_both_clis_print_their_version():
    for module in ("tinyattn.explain", "tinyattn.homework"):
        run = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True)
        assert run.returncode == 0 and run.stdout.strip() == f"tinyattn {tinyattn.__version__}", (module, run)

