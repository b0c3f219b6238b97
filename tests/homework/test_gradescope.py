"""The Gradescope zip, run as Gradescope runs it, on a fake /autograder tree."""

import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from tinyattn.homework import commands

from .gradescope_box import Box

TASKS = ["softmax_backward", "adam_step"]


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs") / "hw"
    commands.assign(str(out), TASKS)
    return out


def run_autograder(assignment, root, submit, timeout=60):
    """Unzip into root/source, put the submission in root/submission, run root/run_autograder."""
    with zipfile.ZipFile(assignment / "gradescope_autograder.zip") as z:
        z.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    submit(root / "submission")
    # (the grader runs on this test's own Python, which the student user may not be able to run: graded
    # unconfined, as the instructor says so; the fences are tested in test_attacks*.py, with a Python it can run)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_TIMEOUT": str(timeout),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "TINYATTN_GRADER_UNCONFINED": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr  # Gradescope needs results.json, not an exit status
    return json.loads((root / "results" / "results.json").read_text())


def copy_student(assignment, solved):
    def submit(folder):
        student = folder.parent / "work"
        shutil.copytree(assignment / "student", student)
        if solved:
            commands.solve(str(student), solved)
        shutil.copytree(student / "tinyattn", folder / "tinyattn")

    return submit


def test_the_zip_holds_what_gradescope_needs(assignment):
    with zipfile.ZipFile(assignment / "gradescope_autograder.zip") as z:
        names = set(z.namelist())
        setup = z.read("setup.sh").decode()
        mode = z.getinfo("run_autograder").external_attr >> 16
    assert {"setup.sh", "run_autograder", "autograder/manifest.json", "autograder/tests/probes.py",
            "autograder/tests/judges.py", "autograder/tests/runner.py", "grader/tinyattn/homework/__main__.py",
            "grader/LICENSE", "autograder/LICENSE"} <= names
    assert mode & 0o111  # executable
    for package in ("numpy==", "matplotlib=="):
        assert package in setup  # pinned
    assert "torch" not in setup and "hypothesis" not in setup and "pytest" not in setup  # grading runs no pytest


def test_a_full_solution_scores_everything(assignment, tmp_path):
    results = run_autograder(assignment, tmp_path, copy_student(assignment, TASKS))
    manifest = json.loads((assignment / "manifest.json").read_text())
    assert results["score"] == sum(t["points"] for t in manifest["tasks"].values()) > 0
    assert all(t["status"] == "passed" for t in results["tests"])


def test_an_empty_submission_scores_zero_and_says_what_to_upload(assignment, tmp_path):
    results = run_autograder(assignment, tmp_path, lambda folder: None)
    assert results["score"] == 0 and results["tests"]
    assert "no tinyattn folder in the submission (found: nothing)" in results["output"]
    assert all("hand in the whole tinyattn folder" in t["output"] for t in results["tests"])


def test_single_files_instead_of_the_package_are_explained(assignment, tmp_path):
    def submit(folder):
        shutil.copy(assignment / "student" / "tinyattn" / "autograd" / "core" / "ops" / "softmax.py", folder)
        shutil.copy(assignment / "student" / "tinyattn" / "optim" / "adam.py", folder)

    results = run_autograder(assignment, tmp_path, submit)
    assert results["score"] == 0
    assert "found: adam.py, softmax.py" in results["output"] and "not single files" in results["output"]


def test_a_syntax_error_costs_only_its_task(assignment, tmp_path):
    def submit(folder):
        copy_student(assignment, ["adam_step"])(folder)
        softmax = folder / "tinyattn" / "autograd" / "core" / "ops" / "softmax.py"
        softmax.write_text(softmax.read_text().replace('raise NotImplementedError("task softmax_backward")',
                                                       "return (grad_output +,)"))

    results = run_autograder(assignment, tmp_path, submit)
    manifest = json.loads((assignment / "manifest.json").read_text())
    assert results["score"] == manifest["tasks"]["adam_step"]["points"]
    softmax_tests = [t for t in results["tests"] if t["tags"] == ["softmax_backward"]]
    assert softmax_tests and all("SyntaxError" in t["output"] for t in softmax_tests)


def test_an_endless_loop_times_out_and_costs_only_its_task(assignment, tmp_path):
    def submit(folder):
        copy_student(assignment, ["softmax_backward"])(folder)
        adam = folder / "tinyattn" / "optim" / "adam.py"
        adam.write_text(adam.read_text().replace('raise NotImplementedError("task adam_step")',
                                                 "while True:\n                pass"))

    results = run_autograder(assignment, tmp_path, submit, timeout=4)
    manifest = json.loads((assignment / "manifest.json").read_text())
    assert results["score"] == manifest["tasks"]["softmax_backward"]["points"]
    assert all("ran past the time limit of 4 s" in t["output"] for t in results["tests"] if t["tags"] == ["adam_step"])


def _python_310():
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip() if pyenv else ""
    found = sorted(glob.glob(os.path.join(root, "versions", "3.10.*", "bin", "python3.10"))) if root else []
    found += [p for p in ("/usr/bin/python3.10",) if os.path.exists(p)]
    if not found:
        if os.environ.get("TINYATTN_REQUIRE_ISOLATION") == "1":
            pytest.fail("no Python 3.10 on this machine (pyenv versions, /usr/bin)")
        pytest.skip("no Python 3.10 on this machine")
    return found[-1]


@pytest.mark.slow
def test_setup_sh_installs_into_a_venv_on_python_3_10_and_the_grader_runs_there(assignment, tmp_path):
    """Ubuntu 22.04's Python is 3.10, which numpy 2.3+ and matplotlib 3.11 dropped: setup.sh picks pins that exist."""
    python = _python_310()
    box = Box(str(assignment / "gradescope_autograder.zip"), None)
    try:
        setup = subprocess.run(["bash", os.path.join(box.root, "source", "setup.sh")], capture_output=True, text=True,
                               env={**os.environ, "AUTOGRADER_ROOT": box.root, "PYTHON": python}, timeout=900)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        venv_python = os.path.join(box.root, "venv", "bin", "python3")
        versions = subprocess.run([venv_python, "-c", "import sys, numpy, matplotlib; print(sys.version_info[:2], "
                                   "numpy.__version__, matplotlib.__version__)"], capture_output=True, text=True)
        assert versions.stdout.split() == ["(3,", "10)", "2.2.6", "3.10.9"], versions.stdout + versions.stderr
        copy_student(assignment, TASKS)(pathlib.Path(box.submission))
        # (pyenv's Python lives under /root, out of the student user's reach: graded unconfined, as told)
        results, log = box.run(unconfined=True)
        assert results["score"] == sum(t["points"] for t in json.loads((assignment / "manifest.json").read_text())
                                       ["tasks"].values())
        assert results["output"].startswith("isolation reduced: the user tinyattn-student cannot run ")
        assert "3.10" in subprocess.run([venv_python, "--version"], capture_output=True, text=True).stdout
    finally:
        box.remove()


@pytest.mark.slow
def test_a_trial_root_under_tmp_grades_behind_every_fence(assignment, tmp_path):
    """AUTOGRADER_ROOT=/tmp/trial, setup.sh's venv in it (two folders under /tmp, which each task's fresh /tmp
    hides): the folders rebuilt above the venv in the task's namespace let the student user through, so a full
    solution scores everything, as the student user, with nothing reduced."""
    from .gradescope_box import require_fences, require_isolation

    require_fences()
    made = require_isolation()  # (a venv of this machine's system Python, with NumPy in it)
    import tempfile

    root = tempfile.mkdtemp(prefix="tinyattn-trial-", dir="/tmp")
    try:
        os.chmod(root, 0o755)
        shutil.copytree(made, os.path.join(root, "venv"), symlinks=True)  # (as setup.sh would make it there)
        with zipfile.ZipFile(assignment / "gradescope_autograder.zip") as z:
            z.extractall(os.path.join(root, "source"))
        os.mkdir(os.path.join(root, "submission"))
        copy_student(assignment, TASKS)(pathlib.Path(root) / "submission")
        shutil.rmtree(os.path.join(root, "work"), ignore_errors=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TINYATTN_GRADER_UNCONFINED")}
        done = subprocess.run(["bash", os.path.join(root, "source", "run_autograder")], capture_output=True,
                              text=True, timeout=600, env={**env, "AUTOGRADER_ROOT": root})
        results = json.loads(pathlib.Path(root, "results", "results.json").read_text())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    manifest = json.loads((assignment / "manifest.json").read_text())
    assert results["score"] == sum(t["points"] for t in manifest["tasks"].values()), done.stdout[-3000:]
    assert "isolation reduced" not in results.get("output", ""), results.get("output")
    assert "behind every fence" in done.stdout
