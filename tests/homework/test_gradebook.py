"""Grading a class with ``grade-all``: a folder of submissions into a CSV gradebook, feedback files, and a state
that lets a run again grade only what changed. Run as an instructor runs it: the command, in a process of its
own, as root, so each grading's student code runs as a student user behind every fence."""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import shutil
import subprocess
import zipfile

import pytest

from tinyattn.homework import commands, gradebook

from .gradescope_box import require_isolation

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "course"
CHECKOUT = pathlib.Path(__file__).parents[2]
TASKS = ["layernorm_backward", "gelu_backward"]

# The GELU task answered by central differences through the op's own forward: refused by its policy (derive)
NUMERICAL = """
        (x,) = ctx.saved_tensors[:1]
        h = 1e-6
        return (grad_output * (GELU.forward(ctx, x + h) - GELU.forward(ctx, x - h)) / (2 * h),)
"""


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("class") / "hw"
    commands.assign(str(out), TASKS, course=commands.course_at(str(EXAMPLE)))
    return out


def _student(assignment, folder, kind):
    """A student's copy of kind ``solved``, ``blank``, ``partly`` (LayerNorm only), ``broken`` (a syntax error
    in the GELU task) or ``dishonest`` (GELU differentiated numerically)."""
    shutil.copytree(assignment / "student", folder)
    course = commands.course_at(str(EXAMPLE))
    if kind in ("solved", "broken", "dishonest"):
        commands.solve(str(folder), TASKS, course)
    elif kind == "partly":
        commands.solve(str(folder), ["layernorm_backward"], course)
    gelu = folder / "gelu.py"
    if kind == "broken":
        gelu.write_text(gelu.read_text().replace("pdf = np.exp(", "pdf = np.exp((", 1))
    if kind == "dishonest":
        lines = gelu.read_text().split("\n")
        start = next(i for i, line in enumerate(lines) if "x, cdf = ctx.saved_tensors" in line)
        lines[start:start + 3] = NUMERICAL.strip("\n").split("\n")
        gelu.write_text("\n".join(lines))
    return folder


def _zip(folder, path):
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                z.write(file, file.relative_to(folder))
    shutil.rmtree(folder)


EXPECTED = {"solved": (3, 2), "blank": (0, 0), "partly": (3, 0), "broken": (3, 0), "dishonest": (3, 0)}


def _grade_all(submissions, assignment, csv_path, python):
    """``grade-all`` as the instructor runs it: a command, here with the Python the student user can run."""
    done = subprocess.run([python, "-m", "tinyattn.homework", "grade-all", str(submissions), "--autograder",
                           str(assignment / "autograder"), "--csv", str(csv_path), "--timeout", "60"],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert done.returncode == 0, done.stdout + done.stderr
    with open(csv_path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f)), done.stdout + done.stderr


def test_a_class_of_mixed_submissions_gives_the_expected_gradebook_and_a_rerun_grades_only_what_changed(
        assignment, tmp_path):
    venv = require_isolation()
    python = os.path.join(venv, "bin", "python")
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for kind in EXPECTED:
        _student(assignment, submissions / kind, kind)
    _zip(submissions / "partly", submissions / "partly.zip")  # a zip, as a student uploads it
    (submissions / "garbled.zip").write_bytes(b"not a zip at all")
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    got = {r["student"]: (float(r["layernorm_backward"]), float(r["gelu_backward"]), r["status"]) for r in rows}
    want = {kind: (*map(float, points), "graded") for kind, points in EXPECTED.items()}
    assert {k: v for k, v in got.items() if k != "garbled"} == want, log[-3000:]
    assert got["garbled"][:2] == (0.0, 0.0) and got["garbled"][2].startswith("not graded: not a zip file")
    assert [r["total"] for r in rows if r["student"] == "solved"] == ["5"]
    assert "5/5 graded" in log or "6/6 graded" in log
    feedback = (tmp_path / "feedback" / "dishonest.md").read_text()
    assert "refused by the task's policy" in feedback and "gelu_backward" in feedback
    state = json.loads((tmp_path / "grades.csv.state.json").read_text())
    assert "isolation reduced" not in state["solved"]["output"], state["solved"]["output"]

    blank = submissions / "blank"  # the blank student hands in again, with GELU solved
    commands.solve(str(blank), ["gelu_backward"], commands.course_at(str(EXAMPLE)))
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    assert "1 graded now, 5 unchanged since the last run" in log
    assert {r["student"]: r["total"] for r in rows} == {
        "solved": "5", "blank": "2", "partly": "3", "broken": "3", "dishonest": "3", "garbled": "0"}


METADATA = """submission_{id}:
  :submitters:
  - :name: Student {n}
    :sid: '{n}'
    :email: student{n}@example.edu
  :created_at: 2026-12-01 10:00:00.000000000 -08:00
  :score: 0.0
"""


@pytest.mark.slow  # (fifty gradings: about a minute on two cores)
def test_fifty_submissions_in_gradescope_s_export_layout(assignment, tmp_path):
    venv = require_isolation()
    python = os.path.join(venv, "bin", "python")
    export = tmp_path / "export"
    export.mkdir()
    kinds = list(EXPECTED) * 10
    metadata = io.StringIO()
    for n, kind in enumerate(kinds):
        _student(assignment, export / f"submission_{1000 + n}", kind)
        metadata.write(METADATA.format(id=1000 + n, n=n))
    (export / gradebook.METADATA).write_text(metadata.getvalue())
    rows, log = _grade_all(export, assignment, tmp_path / "grades.csv", python)
    assert len(rows) == 50
    for n, kind in enumerate(kinds):
        row = next(r for r in rows if r["student"] == f"student{n}@example.edu")
        assert (float(row["layernorm_backward"]), float(row["gelu_backward"])) == EXPECTED[kind], (n, kind, row)
        assert row["submission"] == f"submission_{1000 + n}" and row["status"] == "graded"
    assert len(list((tmp_path / "feedback").iterdir())) == 50

    changed = export / "submission_1001"  # a blank one, now solved
    commands.solve(str(changed), TASKS, commands.course_at(str(EXAMPLE)))
    rows, log = _grade_all(export, assignment, tmp_path / "grades.csv", python)
    assert "1 graded now, 49 unchanged since the last run" in log
    assert next(r for r in rows if r["student"] == "student1@example.edu")["total"] == "5"


def test_a_zip_that_reaches_outside_its_folder_or_holds_a_link_is_not_unpacked(tmp_path):
    outside = tmp_path / "out.zip"
    with zipfile.ZipFile(outside, "w") as z:
        z.writestr("../../escaped.py", "x = 1")
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as z:
        info = zipfile.ZipInfo("gelu.py")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    for path, message in ((outside, "a path outside its folder"), (link, "a symbolic link")):
        dest = tmp_path / path.stem
        dest.mkdir()
        with pytest.raises(gradebook.GradebookError, match=message):
            gradebook.unpack(str(path), str(dest))
        assert list(dest.iterdir()) == []
    assert not (tmp_path.parent / "escaped.py").exists()


def test_two_submissions_of_one_student_are_refused_in_one_line(tmp_path, capsys):
    from tinyattn.homework.__main__ import main

    (tmp_path / "subs" / "ann").mkdir(parents=True)
    (tmp_path / "subs" / "ann.zip").write_bytes(b"")
    (tmp_path / "hw" / "autograder").mkdir(parents=True)
    (tmp_path / "hw" / "autograder" / "manifest.json").write_text('{"tasks": {}}')
    assert main(["grade-all", str(tmp_path / "subs"), "--autograder", str(tmp_path / "hw" / "autograder"),
                 "--csv", str(tmp_path / "g.csv")]) == 2
    assert capsys.readouterr().err == "error: grade-all: more than one submission for ann\n"


def test_a_folder_of_submissions_the_student_users_can_read_is_named_on_the_last_line(assignment, tmp_path):
    """A classmate's submission must be out of the student users' reach: where the folder is readable by every
    user, each grading says so, and grade-all's last line repeats it for the instructor."""
    python = os.path.join(require_isolation(), "bin", "python")
    import tempfile

    open_folder = pathlib.Path(tempfile.mkdtemp(prefix="tinyattn-open-"))
    try:
        open_folder.chmod(0o755)
        _student(assignment, open_folder / "solved", "solved")
        rows, log = _grade_all(open_folder, assignment, tmp_path / "grades.csv", python)
        assert [r["total"] for r in rows] == ["5"]
        assert f"note: isolation reduced: the user tinyattn-student can read {open_folder}" in log, log[-2000:]
    finally:
        shutil.rmtree(open_folder)
