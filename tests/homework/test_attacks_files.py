"""Attacks through the submission's files, graded by the real run_autograder on a fake /autograder tree:
each would have scored the reference's points (or hung the grader) before submissions were read as plain
files only. Each submission also solves one task honestly, which must keep its points."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from tinyattn.homework import commands

TASKS = ["softmax_backward", "adam_step"]
SOFTMAX = "tinyattn/autograd/core/ops/softmax.py"


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("attacks") / "hw"
    commands.assign(str(out), TASKS)
    return out


def grade(assignment, root, submit):
    """Gradescope's way: unzip into root/source, the submission in root/submission, run run_autograder."""
    with zipfile.ZipFile(assignment / "gradescope_autograder.zip") as z:
        z.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    work = root / "work"
    shutil.copytree(assignment / "student", work)
    commands.solve(str(work), ["adam_step"])  # the honest part
    shutil.copytree(work / "tinyattn", root / "submission" / "tinyattn")
    submit(root / "submission", root / "source" / "grader")
    # (these attacks are on how the grader reads the files, before any student code runs: graded unconfined, on
    # this test's own Python, which the student user may not be able to run)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_TIMEOUT": "60",
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "TINYATTN_GRADER_UNCONFINED": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text()), done.stdout


def points(assignment, task):
    return json.loads((assignment / "manifest.json").read_text())["tasks"][task]["points"]


def by_task(results, task):
    return [t for t in results["tests"] if t["tags"] == [task]]


def replace_with(link):
    def submit(submission, grader):
        target = submission / SOFTMAX
        target.unlink()
        link(grader / SOFTMAX, target)
    return submit


@pytest.mark.parametrize(("attack", "submit", "said"), [
    ("a symbolic link to the grader's reference file", replace_with(lambda src, dst: os.symlink(src, dst)),
     "is a symbolic link"),
    ("a hard link to the grader's reference file", replace_with(lambda src, dst: os.link(src, dst)),
     "is a hard link"),
    ("a FIFO where the task's file should be (the grader would block reading it)",
     replace_with(lambda src, dst: os.mkfifo(dst)), "is not a plain file"),
])
def test_a_linked_or_special_task_file_earns_nothing_and_the_honest_task_keeps_its_points(
        assignment, tmp_path, attack, submit, said):
    results, log = grade(assignment, tmp_path, submit)
    assert results["score"] == points(assignment, "adam_step"), (attack, log[-3000:])
    assert all(t["status"] == "passed" for t in by_task(results, "adam_step"))
    softmax = by_task(results, "softmax_backward")
    assert softmax and all(t["score"] == 0 for t in softmax), attack
    assert said in results["output"] and said in log  # the student and the instructor are told


def test_a_symbolic_link_to_the_whole_reference_package_earns_nothing(assignment, tmp_path):
    def submit(submission, grader):
        shutil.rmtree(submission / "tinyattn")
        os.symlink(grader / "tinyattn", submission / "tinyattn")

    results, _ = grade(assignment, tmp_path, submit)
    assert results["score"] == 0
    assert "tinyattn is a symbolic link; submit the folder itself" in results["output"]


def test_a_symbolic_link_to_a_reference_folder_earns_nothing(assignment, tmp_path):
    def submit(submission, grader):
        ops = pathlib.Path("tinyattn", "autograd", "core", "ops")
        shutil.rmtree(submission / ops)
        os.symlink(grader / ops, submission / ops)

    results, _ = grade(assignment, tmp_path, submit)
    assert results["score"] == points(assignment, "adam_step")
    assert "tinyattn/autograd/core/ops is a symbolic link" in results["output"]


def test_files_the_assignment_does_not_name_are_listed_for_the_instructor_and_not_read(assignment, tmp_path):
    def submit(submission, grader):
        (submission / "tinyattn" / "answers.py").write_text("import os; os.system('echo pwned')\n")
        (submission / "tinyattn" / "notes.txt").write_text("hello\n")

    results, log = grade(assignment, tmp_path, submit)
    assert results["score"] == points(assignment, "adam_step")
    assert "extra file in the submission (not read): tinyattn/answers.py" in log
    assert "extra file in the submission (not read): tinyattn/notes.txt" in log
    assert "pwned" not in log
