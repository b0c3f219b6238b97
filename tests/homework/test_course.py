"""A course of the instructor's own (``examples/course``), used as docs/teaching.md's "Write your own task" says.

Its tasks are in its own files, outside the library, and build on it: a LayerNorm and a GELU
written as tinyattn ``Function``\\ s, and rotary embeddings in a notebook. It is self-checked,
assigned, handed back and graded with the commands and the fences the library's own tasks have,
and a course file with a mistake in it is refused with one line naming the file and the field.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil

import pytest

from tinyattn.homework import commands
from tinyattn.homework.__main__ import main
from tinyattn.homework.course import CourseError, load_course

from .gradescope_box import Box, require_isolation

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "course"
TASKS = {"layernorm_backward": 3.0, "gelu_backward": 2.0, "rope": 3.0}
FILES = {"layernorm_backward": "layernorm.py", "gelu_backward": "gelu.py", "rope": "rotary.ipynb"}


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "hw"
    assert main(["assign", str(out), "--course", str(EXAMPLE)]) == 0
    return out


def _copy(assignment, folder, solved=()):
    """A student's copy, with the tasks ``solved`` written in (the reference's lines, as ``solve`` puts them)."""
    shutil.copytree(assignment / "student", folder)
    if solved:
        commands.solve(str(folder), list(solved), commands.course_at(str(EXAMPLE)))
    return folder


def _points(results):
    earned = {}
    for test in results["tests"]:
        task = test["name"].split(":")[0]
        earned[task] = earned.get(task, 0.0) + test["score"]
    return earned


def test_the_example_course_self_checks_with_no_hole(capsys):
    assert main(["check", "--course", str(EXAMPLE)]) == 0
    table = capsys.readouterr().out
    assert "0 hole(s)" in table
    course = load_course(str(EXAMPLE))
    assert table.count("4. mistake caught") == len(course.mistakes) == 10
    assert "6. policy                layernorm_backward" in table and "derive" in table


def test_the_student_copy_holds_the_course_s_files_stubbed_and_its_public_tests(assignment):
    student = assignment / "student"
    layernorm = (student / "layernorm.py").read_text()
    assert 'raise NotImplementedError("task layernorm_backward")' in layernorm
    assert "grad_weight" not in layernorm and "BEGIN TASK" not in layernorm
    assert (student / "tests" / "check_course.py").is_file() and not (student / "tests" / "probes.py").exists()
    # the library comes beside the files, without the homework (its answers and its grader)
    assert (student / "tinyattn" / "__init__.py").is_file() and not (student / "tinyattn" / "homework").exists()
    assert (student / "requirements.txt").read_text().split() == ["numpy>=2.0", "matplotlib>=3.8.4", "pytest>=7"]
    readme = (student / "README_STUDENT.md").read_text()
    assert readme.startswith("# By hand: LayerNorm and GELU backwards, rotary embeddings")
    assert "| `gelu_backward` | 2 | `gelu.py` | the backward of GELU, `x Φ(x)` |" in readme
    assert "| `rope` | 3 | `rotary.ipynb` |" in readme and 'grep -rn "TODO(task" .' in readme
    assert "cells you add, outputs and metadata are not read" in readme
    notebook = (student / "rotary.ipynb").read_text()
    assert 'raise NotImplementedError(\\"task rope\\")' in notebook and "rotated_odd" not in notebook
    assert "length kept: True" in (EXAMPLE / "rotary.ipynb").read_text()  # (the instructor's, run: its outputs)
    assert "length kept: True" not in notebook and '"kernelspec"' in notebook  # outputs cleared, metadata kept


@pytest.mark.parametrize("solved", [pytest.param((), marks=pytest.mark.slow), tuple(TASKS)], ids=["blank", "solved"])
def test_a_submission_is_graded_through_run_autograder_as_the_student_user(assignment, tmp_path, solved):
    venv = require_isolation()
    box = Box(str(assignment / "gradescope_autograder.zip"), venv)
    try:
        copy = _copy(assignment, tmp_path / "copy", solved)
        shutil.copytree(copy, box.submission, dirs_exist_ok=True)
        results, log = box.run()
    finally:
        box.remove()
    assert "isolation reduced" not in log, log[-2000:]
    assert _points(results) == {task: points if solved else 0.0 for task, points in TASKS.items()}, log[-3000:]


@pytest.mark.slow  # (`check` plants each mistake in the fast run; here the first of each task, handed in)
def test_a_mistake_handed_in_costs_its_own_task_only(assignment, tmp_path):
    """A mistake of each task, written into a solved copy, loses points of its task; the other tasks keep all of
    their points."""
    course = commands.course_at(str(EXAMPLE))
    firsts = [next(m for m in course.mistakes if m.task == task) for task in TASKS]
    for n, mistake in enumerate(firsts):
        copy = _copy(assignment, tmp_path / f"copy{n}", tuple(TASKS))
        path = copy / FILES[mistake.task]
        if path.suffix == ".ipynb":  # (in the notebook's JSON, as Jupyter would save the edit)
            notebook = json.loads(path.read_text())
            for cell in notebook["cells"]:
                cell["source"] = [line.replace(mistake.replaces, mistake.wrong) for line in cell["source"]]
            text = json.dumps(notebook)
        else:
            text = path.read_text().replace(mistake.replaces, mistake.wrong)
        assert text != path.read_text()
        path.write_text(text)
        results, _ = commands.grade(str(copy), str(assignment / "autograder"), timeout=60, unconfined=True)
        earned = _points(results)
        assert earned[mistake.task] < TASKS[mistake.task], mistake.wrong
        assert all(earned[other] == TASKS[other] for other in TASKS if other != mistake.task), mistake.wrong


def _course(tmp_path, toml, files=None):
    """A course folder: ``course.toml`` as given, the example's files and tests unless ``files`` says otherwise."""
    folder = tmp_path / "c"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("course.toml", "__pycache__"))
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    (folder / "course.toml").write_text(toml)
    return folder


HEAD = '[course]\nname = "c"\n'
GELU = '[tasks.gelu_backward]\npoints = 2\n'
LAYERNORM = '[tasks.layernorm_backward]\npoints = 3\n'
ROPE = '[tasks.rope]\npoints = 3\n'


@pytest.mark.parametrize("toml, message", [
    (HEAD + "[tasks.gelu_backward]\npoints = 2\nabuot = 'x'\n", r"\[tasks.gelu_backward\]: unknown field\(s\) abuot"),
    (HEAD + "[tasks.gelu_backward]\nabout = 'x'\n", r"\[tasks.gelu_backward\]: points is missing"),
    (HEAD + "[tasks.gelu_backward]\npoints = 'two'\n", r"points must be a int or float, got str 'two'"),
    (HEAD + "[tasks.gelu_backward]\npoints = 2\nmistakes = [{replaces = 'a'}]\n", r"mistakes\[0\]: a mistake is"),
    ('[course]\nfiles = ["*.txt"]\n' + GELU, r"files \['\*.txt'\] match no file"),
    ('[course]\ntests = "nowhere"\n' + GELU, r"tests: no probes.py in .*nowhere"),
    (HEAD + "[course.extra]\n", r"\[course\]: unknown field\(s\) extra"),
    ("[course\n", r"course.toml: not valid TOML"),
    (HEAD, r"no task \(add a \[tasks.<id>\] table\)"),
], ids=["unknown field", "no points", "points of the wrong type", "a mistake without its fields", "no file",
        "no tests", "unknown table", "not TOML", "no task"])
def test_a_course_file_with_a_mistake_is_refused_naming_the_file_and_the_field(tmp_path, toml, message):
    folder = _course(tmp_path, toml)
    with pytest.raises(CourseError, match=message):
        load_course(str(folder))


@pytest.mark.parametrize("toml, message", [
    (HEAD + GELU + ROPE, "task(s) with a region but no [tasks.<id>] table in course.toml: layernorm_backward\n"),
    (HEAD + LAYERNORM + ROPE + "[tasks.gelu_backward]\npoints = 3\n",
     "course.toml: task gelu_backward has points = 3, but its probes give 2"),
    (HEAD + LAYERNORM + ROPE + GELU
     + "[[tasks.gelu_backward.mistakes]]\nreplaces = 'x = 1'\nwrong = 'x = 2'\nwhy = 'w'\n",
     "the mistake's line 'x = 1' is not in the regions of task gelu_backward"),
], ids=["a task with no table", "points that are not the probes'", "a mistake whose line is not there"])
def test_every_command_refuses_a_course_that_disagrees_with_its_files_in_one_line(tmp_path, capsys, toml, message):
    folder = _course(tmp_path, toml)
    assert main(["tasks", "--course", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_folder_without_a_course_file_is_one_clear_line(tmp_path, capsys):
    assert main(["check", "--course", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path} is not a course folder (no course.toml in it)\n"


def _files_of_the_guide():
    """The files the guide's "Write your own task" shows, each a code block whose first line names it."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "teaching.md").read_text(encoding="utf-8")
    section = doc.split("## Write your own task\n")[1].split("\n## ")[0]
    files = {}
    for block in section.split("```")[1::2]:
        lines = block.split("\n")[1:]  # (the language)
        if lines and lines[0].startswith("# ") and lines[0].endswith((".py", ".toml")):
            files[lines[0][2:]] = "\n".join(lines[1:])
    return files


def test_a_course_built_from_the_guide_alone_checks_assigns_and_grades(tmp_path, capsys):
    files = _files_of_the_guide()
    assert set(files) == {"gelu.py", "tests/probes.py", "tests/check_gelu.py", "course.toml"}
    course = tmp_path / "mycourse"
    for name, text in files.items():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(text)
    assert main(["check", "--course", str(course)]) == 0, capsys.readouterr().out
    assert "0 hole(s)" in capsys.readouterr().out
    assert main(["assign", str(tmp_path / "hw"), "--course", str(course)]) == 0
    student = tmp_path / "hw" / "student"
    assert main(["solve", str(student), "--tasks", "gelu_backward", "--course", str(course)]) == 0
    capsys.readouterr()
    assert main(["grade", str(student), "--autograder", str(tmp_path / "hw" / "autograder"), "--unconfined"]) == 0
    assert re.search(r"\ngelu_backward +1/1 +2/2\ntotal +2/2", capsys.readouterr().out)


def test_check_fails_a_course_whose_region_holds_an_import_its_file_needs(tmp_path, capsys):
    """Blanked, the region takes its import along: the handout lacks it, and a student who adds it at the top of
    the file edits outside the regions, which the grader does not take. ``check`` names the line."""
    course = tmp_path / "course"
    shutil.copytree(EXAMPLE, course)
    gelu = course / "gelu.py"
    gelu.write_text(gelu.read_text().replace("        # BEGIN TASK gelu_backward\n",
                                             "        # BEGIN TASK gelu_backward\n        import math\n"))
    handout = commands.handout_rows(*commands.load(None, commands.course_at(str(course)))[:2], ["gelu_backward"])
    line = gelu.read_text().split("\n").index("        import math") + 1
    assert handout == [("7. handout", "gelu_backward", f"gelu.py:{line} imports math inside the region (move it to "
                        "the top of the file, which the student gets)", False)]
    assert main(["check", "--course", str(course), "--tasks", "gelu_backward"]) == 1
    table = capsys.readouterr().out
    assert re.search(r"7\. handout +gelu_backward +HOLE +gelu\.py:\d+ imports math", table), table
    assert "2 hole(s)" in table and "6. policy" in table  # (derive flags the import too)
