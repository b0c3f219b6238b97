"""Each task is graded on its own: a blank or a bug elsewhere never costs a correct task its points."""

import dataclasses
import json
import subprocess
import sys

import pytest

from tinyattn.homework import commands
from tinyattn.homework.__main__ import main
from tinyattn.homework.course import SHIPPED, Mistake, load_course


def assigned(tmp_path, tasks):
    out = tmp_path / "hw"
    commands.assign(str(out), tasks)
    return out, json.loads((out / "manifest.json").read_text())


def scores(results):
    by_task = {}
    for t in results["tests"]:
        by_task[t["tags"][0]] = by_task.get(t["tags"][0], 0) + t["score"]
    return by_task


# The docs' sample weeks, each with one task left blank and the others solved
@pytest.mark.parametrize(
    "tasks, solved",
    [
        (["attention", "mha_split_heads", "mha_merge_heads"], ["mha_split_heads", "mha_merge_heads"]),  # week 4
        (["unbroadcast", "shape_backward"], ["shape_backward"]),  # week 1
        (["softmax_backward", "mha_split_heads"], ["mha_split_heads"]),
    ],
)
def test_a_correct_task_earns_its_points_whatever_the_others_hold(tmp_path, tasks, solved):
    out, manifest = assigned(tmp_path, tasks)
    commands.solve(str(out / "student"), solved)
    results, _ = commands.grade(str(out / "student"), str(out / "autograder"), timeout=120, unconfined=True)
    got = scores(results)
    for task in tasks:
        expected = manifest["tasks"][task]["points"] if task in solved else 0
        assert got[task] == expected, (task, got)


def test_edits_outside_the_regions_are_reported_and_not_graded(tmp_path):
    out, manifest = assigned(tmp_path, ["softmax_backward"])
    commands.solve(str(out / "student"), ["softmax_backward"])
    functional = out / "student" / "tinyattn" / "nn" / "functional.py"
    # a "fix" elsewhere that would break every other task if it were used
    functional.write_text(functional.read_text().replace("def linear(", "def linear_unused(", 1))
    results, table = commands.grade(str(out / "student"), str(out / "autograder"), timeout=120, unconfined=True)
    assert results["score"] == manifest["tasks"]["softmax_backward"]["points"]
    assert "tinyattn/nn/functional.py" in results["output"] and "not graded" in results["output"]
    assert "note: tinyattn/nn/functional.py:" in table


def test_a_changed_line_around_a_region_is_explained(tmp_path):
    out, _ = assigned(tmp_path, ["softmax_backward"])
    softmax_py = out / "student" / "tinyattn" / "autograd" / "core" / "ops" / "softmax.py"
    text = softmax_py.read_text()
    signature = "def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:\n        # TODO(task"
    assert text.count(signature) == 1
    # the student renames the argument in the line just before the stub, then writes a right answer
    solved = text.replace(signature, signature.replace("grad_output", "dy")).replace(
        'raise NotImplementedError("task softmax_backward")',
        "(y,) = ctx.saved_tensors\n        return (y * (dy - (dy * y).sum(ctx.dim, keepdims=True)),)")
    softmax_py.write_text(solved)
    results, _ = commands.grade(str(out / "student"), str(out / "autograder"), timeout=120, unconfined=True)
    assert results["score"] == 0
    assert all("the line before the task softmax_backward stub was changed" in t["output"]
               for t in results["tests"])


def test_check_finds_broken_isolation(monkeypatch):
    """If grading handed a task the student's blanks of the other tasks, check 5 would say so."""
    real = commands.package_for

    def leaky(task, tasks, reading):
        given = real(task, tasks, reading)
        for other, regions in tasks.items():
            for r in regions:
                if other != task and r.key in reading.code:
                    given[r.key] = reading.code[r.key]  # the student's (blank) code for the other tasks too
        return given

    monkeypatch.setattr(commands, "package_for", leaky)
    ok, table = commands.check(["softmax_backward", "mha_split_heads"])
    assert not ok
    assert "5. isolation" in table and "HOLE" in table.split("5. isolation", 1)[1]


def test_check_finds_a_mistake_no_test_catches():
    course = load_course(SHIPPED)
    harmless = Mistake("adam_step", "v *= beta2", "v *= beta2 * 1.0", "not a mistake at all")
    spec = course.tasks["adam_step"]
    course.tasks["adam_step"] = dataclasses.replace(spec, mistakes=(*spec.mistakes, harmless))
    ok, table = commands.check(["adam_step"], course=course)
    assert not ok
    hole = next(line for line in table.splitlines() if "HOLE" in line)
    assert "4. mistake caught" in hole and "v *= beta2 * 1.0" in hole


def test_student_copy_runs_one_task_and_skips_the_others(tmp_path):
    out, _ = assigned(tmp_path, ["softmax_backward"])
    student = out / "student"
    readme = (student / "README_STUDENT.md").read_text()
    assert "| `softmax_backward` | 4 | `tinyattn/autograd/core/ops/softmax.py` |" in readme
    assert "--task softmax_backward" in readme and "the `tinyattn` folder, whole" in readme
    commands.solve(str(student), ["softmax_backward"])
    env = {"PYTHONPATH": str(student), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": ""}
    run = subprocess.run([sys.executable, "-m", "pytest", "tests", "-rs", "-p", "no:cacheprovider"],
                         cwd=student, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "task attention is not part of this assignment" in run.stdout
    assert "softmax_backward       1/1 passed" in run.stdout  # the per-task summary
    one = subprocess.run([sys.executable, "-m", "pytest", "tests", "--task", "softmax_backward", "-q",
                          "-p", "no:cacheprovider"], cwd=student, capture_output=True, text=True, env=env)
    assert one.returncode == 0 and "1 passed" in one.stdout and "skipped" not in one.stdout
    for path in (student / "tinyattn").rglob("*.py"):  # the instructors' note is gone from every docstring
        assert "Homework:" not in path.read_text(), path


@pytest.mark.parametrize(
    "argv, message",
    [
        (["grade", "/no/such/folder", "--autograder", "{auto}"], "no submission folder at /no/such/folder"),
        (["grade", "{empty}", "--autograder", "{auto}"], "no tinyattn folder in the submission (found: nothing)"),
        (["grade", "{student}", "--autograder", "{empty}"], "is not an autograder folder"),
        (["grade", "{student}", "--autograder", "{auto}", "--timeout", "0"], "--timeout: must be positive"),
        (["grade", "{student}", "--autograder", "{auto}", "--gradescope"], "--gradescope needs --json"),
        (["assign", "{file}"], "is a file, not a folder"),
        (["assign", "{new}", "--tasks", "nope"], "unknown task(s): nope"),
        (["assign", "{new}", "--tasks", ""], "no task given"),
        (["assign", "{new}", "--tasks", " , "], "no task given"),
        (["check", "--timeout", "0"], "--timeout: must be positive"),
        (["solve", "{empty}", "--tasks", "softmax_backward"], "is not a student copy"),
        (["solve", "{student}", "--tasks", "nope"], "unknown task(s): nope"),
    ],
)
def test_every_misuse_is_one_clear_line_and_a_nonzero_exit(tmp_path_factory, argv, message, capsys):
    base = tmp_path_factory.mktemp("cli")
    out = base / "hw"
    if not out.exists():
        commands.assign(str(out), ["adam_step"])
    (base / "empty").mkdir(exist_ok=True)
    (base / "a_file").write_text("")
    paths = {"auto": out / "autograder", "student": out / "student", "empty": base / "empty",
             "file": base / "a_file", "new": base / "new"}
    try:
        code = main([a.format(**paths) for a in argv])
    except SystemExit as stop:  # argparse's errors
        code = stop.code
    assert code not in (0, None)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err
