"""The homework commands end to end: the library's own self-check, assign, grade, solve."""

import json
import pathlib

import pytest

from tinyattn.homework import commands
from tinyattn.homework.__main__ import main
from tinyattn.homework.markers import MarkerError

RESULT_FIELDS = {"score", "tests", "extra_data"}
TEST_FIELDS = {"name", "score", "max_score", "status", "output", "tags", "visibility"}


def test_library_markers_cover_the_required_tasks():
    _, regions, tests, chosen = commands.load()
    required = {"unbroadcast", "matmul_backward", "shape_backward", "softmax_backward", "log_softmax_backward",
                "linear_forward", "attention", "mha_split_heads", "mha_merge_heads", "adam_step"}
    assert required <= set(chosen)
    assert all(any(t.task == task for t in tests) for task in chosen)
    assert sum(len(r.mutants) for rs in regions.values() for r in rs) >= 15


@pytest.mark.slow
def test_self_check_passes_on_the_library(capsys):
    assert main(["check"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "\n81 checks, 0 hole(s)" in out and "HOLE" not in out  # (docs/teaching.md's count)
    assert out.count("4. mistake caught") >= 15
    # progress on stderr as the runs end: one line per test run, counting up to the total
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    total = int(progress[0].split("/")[1].split("]")[0])
    assert total == out.count("1. reference passes") + out.count("3. blank one task") + out.count("4. mistake")
    assert [int(line[1:].split("/")[0]) for line in progress] == list(range(1, total + 1))


def test_assign_grade_solve_end_to_end(tmp_path, capsys):
    tasks = ["softmax_backward", "adam_step"]
    out = tmp_path / "hw"
    assert main(["assign", str(out), "--tasks", ",".join(tasks)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["tasks"]) == tasks
    points = {t: manifest["tasks"][t]["points"] for t in tasks}
    assert all(p > 0 for p in points.values())

    student = out / "student"
    softmax_py = (student / "tinyattn" / "autograd" / "core" / "ops" / "softmax.py").read_text()
    assert 'raise NotImplementedError("task softmax_backward")' in softmax_py
    assert "rowsum" not in softmax_py.split("class LogSoftmax")[0].split("def backward")[1]  # the answer is gone
    for path in student.rglob("*.py"):
        text = path.read_text()
        for marker in ("BEGIN TASK", "END TASK", "# MUTANT:", "# STUB:"):
            assert marker not in text, (path, marker)
    assert sorted(p.name for p in (student / "tests").iterdir()) == [  # the public tests only
        "assigned_tasks.txt", "check_tasks.py", "conftest.py", "notebook_import.py", "probing.py", "pytest.ini"]
    assert not (student / "tinyattn" / "homework").exists()
    assert {"probes.py", "judges.py", "runner.py"} <= {p.name for p in (out / "autograder" / "tests").iterdir()}
    license_text = (pathlib.Path(__file__).parents[2] / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    for folder in ("student", "autograder"):  # the source travels with its license
        assert (out / folder / "LICENSE").read_text(encoding="utf-8") == license_text
    # tasks not chosen keep the reference code
    assert "TODO(task" not in (student / "tinyattn" / "nn" / "attention.py").read_text()

    results_path = tmp_path / "results.json"
    assert main(["grade", str(student), "--json", str(results_path), "--unconfined"]) == 0
    results = json.loads(results_path.read_text())
    assert results["score"] == 0
    assert len(results["tests"]) == sum(len(manifest["tasks"][t]["tests"]) for t in tasks)

    assert main(["solve", str(student), "--tasks", "softmax_backward"]) == 0
    assert main(["grade", str(student), "--json", str(results_path), "--unconfined"]) == 0
    results = json.loads(results_path.read_text())
    assert results["score"] == points["softmax_backward"]
    # results.json has Gradescope's field set; here (the venv's Python is out of the student user's reach, or the
    # tests run as a user) isolation is reduced, and the output's first line says so
    assert set(results) == RESULT_FIELDS | {"output"}
    assert results["output"].startswith("isolation reduced: ")
    for test in results["tests"]:
        assert set(test) == TEST_FIELDS
        assert test["status"] in ("passed", "failed") and test["visibility"] in ("visible", "after_published")
        assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0)
        assert test["tags"][0] in tasks
    by_task = {t: sum(x["score"] for x in results["tests"] if x["tags"] == [t]) for t in tasks}
    assert by_task == {"softmax_backward": points["softmax_backward"], "adam_step": 0}
    table = capsys.readouterr().out
    assert "softmax_backward" in table and "total" in table


def test_grading_survives_a_syntax_error_and_a_hang(tmp_path):
    out = tmp_path / "hw"
    commands.assign(str(out), ["softmax_backward", "adam_step"])
    student, autograder = str(out / "student"), str(out / "autograder")
    softmax_py = out / "student" / "tinyattn" / "autograd" / "core" / "ops" / "softmax.py"
    stubbed = softmax_py.read_text()
    softmax_py.write_text(stubbed.replace('raise NotImplementedError("task softmax_backward")', "return (dy +,)"))
    commands.solve(student, ["adam_step"])
    results, _ = commands.grade(student, autograder, timeout=60, unconfined=True)
    manifest = json.loads((out / "manifest.json").read_text())
    assert results["score"] == manifest["tasks"]["adam_step"]["points"]  # the syntax error costs only its task
    for t in results["tests"]:
        if t["tags"] == ["softmax_backward"]:
            assert t["output"].startswith("Task softmax_backward: ")
            assert "code Python cannot read: SyntaxError: invalid syntax (line 2 of your code)" in t["output"]
    adam_py = out / "student" / "tinyattn" / "optim" / "adam.py"
    commands.assign(str(tmp_path / "again"), ["softmax_backward", "adam_step"])
    adam_py.write_text((tmp_path / "again" / "student" / "tinyattn" / "optim" / "adam.py").read_text())

    softmax_py.write_text(stubbed)
    commands.solve(student, ["softmax_backward"])
    adam_py.write_text(adam_py.read_text().replace(
        'raise NotImplementedError("task adam_step")', "while True:\n                pass"))
    results, table = commands.grade(student, autograder, timeout=4, unconfined=True)
    outputs = {t["tags"][0]: t["output"] for t in results["tests"]}
    assert "ran past the time limit" in outputs["adam_step"]
    # the hang costs only its own task
    assert results["score"] == manifest["tasks"]["softmax_backward"]["points"]


def test_assign_refuses_unknown_or_untested_tasks_and_nonempty_out(tmp_path, monkeypatch):
    with pytest.raises(MarkerError, match="unknown task"):
        commands.assign(str(tmp_path / "a"), ["no_such_task"])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("")
    with pytest.raises(MarkerError, match="not empty"):
        commands.assign(str(tmp_path / "b"), ["adam_step"])
    real_scan = commands.scan_tests
    monkeypatch.setattr(commands, "scan_tests", lambda d: [t for t in real_scan(d) if t.task != "adam_step"])
    with pytest.raises(MarkerError, match="no test: adam_step"):
        commands.assign(str(tmp_path / "c"), ["adam_step"])
    assert not (tmp_path / "c").exists()


def test_teaching_docs_list_the_common_mistakes_as_generated(capsys):

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "teaching.md").read_text(encoding="utf-8")
    begin = "<!-- BEGIN GENERATED: python -m tinyattn.homework mistakes -->\n"
    generated = doc.split(begin)[1].split("<!-- END GENERATED -->")[0].rstrip("\n")
    assert main(["mistakes"]) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    assert generated == printed, "docs/teaching.md is stale: paste `python -m tinyattn.homework mistakes`"
    assert printed.count("\n| `") == len(commands.course_at(None).mistakes)


def test_files_the_assignment_handed_out_are_not_noted_as_extra(tmp_path):
    """The student copy's README, license and public tests come back with a submission, with what running the
    tests leaves (pytest's cache); only the student's own additions are noted for the instructor."""
    commands.assign(str(tmp_path / "hw"), ["adam_step"])
    student = tmp_path / "hw" / "student"
    (student / "tinyattn" / "notes.txt").write_text("my notes")
    (student / "scratch.py").write_text("x = 1")
    for made in (".pytest_cache/v/cache/nodeids", ".pytest_cache/README.md", ".pytest_cache/CACHEDIR.TAG",
                 "tests/__pycache__/check_tasks.cpython-311.pyc"):  # what running the public tests leaves
        (student / made).parent.mkdir(parents=True, exist_ok=True)
        (student / made).write_text("[]")
    _, log = commands.grade(str(student), str(tmp_path / "hw" / "autograder"), timeout=60, unconfined=True)
    extra = sorted(line.rsplit(": ", 1)[1] for line in log.splitlines() if line.startswith("note: extra file"))
    assert extra == ["scratch.py", "tinyattn/notes.txt"]


def test_teaching_docs_list_the_tasks_with_the_grader_s_points(capsys):
    """The page's table is `tasks --markdown`: each task's points are its graded probes' (mha_split_heads is 5)."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "teaching.md").read_text(encoding="utf-8")
    begin = "<!-- BEGIN GENERATED: python -m tinyattn.homework tasks --markdown -->\n"
    generated = doc.split(begin)[1].split("<!-- END GENERATED -->")[0].rstrip("\n")
    assert main(["tasks", "--markdown"]) == 0
    assert generated == capsys.readouterr().out.rstrip("\n"), "docs/teaching.md is stale: paste `tasks --markdown`"
    _, _, tests, chosen = commands.load()
    course = commands.course_at(None)
    for task in chosen:
        points = sum(t.points for t in tests if t.task == task)
        assert f"| `{task}` | {course.tasks[task].about} | {points:g} |" in generated


def test_grade_fails_closed_where_the_student_s_code_would_run_unconfined(tmp_path, capsys):
    """Here the test's own Python is out of the student user's reach (it lives under /root), or the tests do not
    run as root: either way the student's code could only run as the grader. ``grade`` refuses in one line,
    ``--gradescope`` writes results that say so, and ``--unconfined`` grades, its results saying what is lost."""
    from tinyattn.homework import sandbox

    iso = sandbox.isolation()
    assert iso.uid is None, "this test needs a Python the student user cannot run, or a grader that is not root"
    out = tmp_path / "hw"
    commands.assign(str(out), ["adam_step"])
    student = str(out / "student")
    commands.solve(student, ["adam_step"])
    results_path = tmp_path / "results.json"
    capsys.readouterr()
    assert main(["grade", student, "--json", str(results_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: grade: refused, ") and err.count("\n") == 1, err
    assert "--unconfined" in err
    assert main(["grade", student, "--json", str(results_path), "--gradescope"]) == 0
    refused = json.loads(results_path.read_text())
    assert refused["score"] == 0 and refused["extra_data"]["status"].startswith("not graded: grade: refused, ")
    assert main(["grade", student, "--json", str(results_path), "--unconfined"]) == 0
    graded = json.loads(results_path.read_text())
    assert graded["score"] == 4 and graded["output"].startswith("isolation reduced: ")
    assert graded["extra_data"]["status"] == "graded"
