"""A course: the files whose marked regions are the tasks, their tests, and ``course.toml`` saying the rest.

A course is a folder of the instructor's own::

    course.toml      the tasks: what each asks, its points, its policy, its common mistakes
    layernorm.py     source files with ``# BEGIN TASK <id>`` .. ``# END TASK`` regions
    rotary.ipynb     notebooks too, the regions in their code cells (graded as the module ``rotary``)
    tests/
        probes.py    the graded probes: ``@task(id=..., points=...)`` functions of a seed
        judges.py    (optional) properties a probe's arrays must have, besides matching the reference
        check_*.py   the public tests the student runs (pytest, ``@pytest.mark.task(id=...)``)

The library's own ten tasks are such a course, shipped in the package (``SHIPPED``): its files
are the package's own source. ``course.toml``, in full::

    [course]
    name = "LayerNorm by hand"      # shown to students
    root = "."                      # where the files' paths start (from this folder)
    files = ["*.py"]                # the source files, as glob patterns under root
    exclude = []                    # glob patterns left out
    tests = "tests"                 # the folder of probes.py and check_*.py (from this folder)
    handout = []                    # more files the student gets as they are (under root)
    on_flag = "review"              # code the policy's check flags: "review" keeps its points and flags the row,
                                    # "withhold" sets them aside until the instructor reviews it

    [tasks.layernorm_backward]      # one table per task, in the order students see them
    about = "the backward of LayerNorm"   # what the student writes, in a line
    points = 4                      # must equal the sum of its probes' points
    policy = "derive"               # a preset's name or a table of its fields (homework/policy.py)

    [[tasks.layernorm_backward.mistakes]]  # a plausible wrong answer: `check` plants it
    replaces = "dx = ..."           # the reference line it replaces, as written there
    wrong = "dx = ..."              # the wrong line
    why = "..."                     # why it is wrong, for the student
"""

from __future__ import annotations

import fnmatch
import glob
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType

COURSE_FILE = "course.toml"
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "task_tests")  # the library's own course
HARNESS = SHIPPED  # the runner, the judges, conftest.py and pytest.ini that every course's tests run with


@dataclass(frozen=True)
class Mistake:
    """A plausible wrong answer to ``task``: the line ``wrong`` in place of the reference line ``replaces``."""

    task: str
    replaces: str
    wrong: str
    why: str


class CourseError(ValueError):
    """A course folder or course.toml that cannot be used; the message names the file and the field."""


@dataclass
class TaskSpec:
    """One task of a course: what it asks, its points, its policy and its common mistakes."""

    id: str
    about: str
    points: float
    policy: str | dict | None
    mistakes: tuple[Mistake, ...] = ()


@dataclass
class Course:
    """A course read from its folder: where its files are, which they are, and its tasks."""

    folder: str  # the folder of course.toml
    name: str
    root: str  # where the files' paths start
    files: list[str]  # the source files, relative to root ("/"-separated)
    tests: str  # the folder of probes.py, judges.py and check_*.py
    handout: list[str] = field(default_factory=list)
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    assigned: bool = False  # an autograder's: its tasks are those assigned; the other regions keep the reference
    notebooks: dict[str, str] = field(default_factory=dict)  # a module of ``files`` -> the notebook it is read from
    on_flag: str = "review"  # what a flag does to the task's points: "review" (kept) or "withhold" (set aside)

    @property
    def mistakes(self) -> tuple[Mistake, ...]:
        """Every task's common mistakes, task by task."""
        return tuple(m for spec in self.tasks.values() for m in spec.mistakes)

    def read_files(self) -> dict[str, list[str]]:
        """``rel path -> lines`` of every source file; a notebook's are its module's (``notebook_import.py``)."""
        files = {}
        for rel in self.files:
            if rel in self.notebooks and not self.assigned:  # (an autograder keeps the module itself)
                try:
                    files[rel] = notebook_import().read_module_lines(os.path.join(self.root, self.notebooks[rel]))
                except ValueError as err:
                    raise CourseError(f"{self.notebooks[rel]}: {err}") from None
                continue
            with open(os.path.join(self.root, rel), encoding="utf-8") as f:
                files[rel] = f.read().split("\n")
        return files


def notebook_import() -> ModuleType:
    """The harness's ``notebook_import.py`` (notebooks as modules), which the student's tests use too."""
    if "_homework_notebook_import" not in sys.modules:
        spec = importlib.util.spec_from_file_location("_homework_notebook_import",
                                                      os.path.join(HARNESS, "notebook_import.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["_homework_notebook_import"] = module
    return sys.modules["_homework_notebook_import"]


def module_of(notebook: str) -> str:
    """The module a notebook is graded as: ``rotary.ipynb`` -> ``rotary.py``."""
    return notebook[: -len(".ipynb")] + ".py"


def _field(table: dict, name: str, kind: type | tuple[type, ...], where: str, default: object = None) -> object:
    value = table.get(name, default)
    if value is not None and not isinstance(value, kind):
        kinds = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise CourseError(f"{where}: {name} must be a {kinds}, got {type(value).__name__} {value!r}")
    return value


def _strings(table: dict, name: str, where: str, default: list[str]) -> list[str]:
    value = _field(table, name, list, where, default)
    assert isinstance(value, list)
    if not all(isinstance(x, str) for x in value):
        raise CourseError(f"{where}: {name} must be a list of strings, got {value!r}")
    return value


def load_course(folder: str) -> Course:
    """Read ``folder/course.toml``; raise ``CourseError`` naming what is wrong."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # (the same parser, before it joined the standard library; grading needs neither: an autograder's
        import tomli as tomllib  # course is in its manifest)
    folder = os.path.abspath(folder)
    path = os.path.join(folder, COURSE_FILE)
    if not os.path.isfile(path):
        raise CourseError(f"{folder} is not a course folder (no {COURSE_FILE} in it)")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise CourseError(f"{path}: not valid TOML: {err}") from None
    unknown = sorted(set(data) - {"course", "tasks"})
    if unknown:
        raise CourseError(f"{path}: unknown table(s) {', '.join(unknown)} (known: course, tasks)")
    head = data.get("course", {})
    where = f"{path} [course]"
    unknown = sorted(set(head) - {"name", "root", "files", "exclude", "tests", "handout", "on_flag"})
    if unknown:
        raise CourseError(f"{where}: unknown field(s) {', '.join(unknown)}")
    on_flag = _field(head, "on_flag", str, where, "review")
    if on_flag not in ("review", "withhold"):
        raise CourseError(f"{where}: on_flag is {on_flag!r}; it must be \"review\" or \"withhold\"")
    root = os.path.normpath(os.path.join(folder, str(_field(head, "root", str, where, "."))))
    patterns = _strings(head, "files", where, ["*.py", "*.ipynb"])
    exclude = _strings(head, "exclude", where, [])
    files = sorted({os.path.relpath(p, root).replace(os.sep, "/")
                    for pattern in patterns for p in glob.glob(os.path.join(root, pattern), recursive=True)
                    if os.path.isfile(p)})
    files = [rel for rel in files if not any(fnmatch.fnmatch(rel, x) for x in exclude) and "__pycache__" not in rel
             and ".ipynb_checkpoints" not in rel]
    if not files:
        raise CourseError(f"{where}: files {patterns} match no file under {root}")
    notebooks = {module_of(rel): rel for rel in files if rel.endswith(".ipynb")}
    twice = sorted(set(notebooks) & set(files))
    if twice:
        raise CourseError(f"{where}: {twice[0]} and {notebooks[twice[0]]} would be the same module; rename one")
    files = [module_of(rel) if rel.endswith(".ipynb") else rel for rel in files]
    tests = os.path.normpath(os.path.join(folder, str(_field(head, "tests", str, where, "tests"))))
    if not os.path.isfile(os.path.join(tests, "probes.py")):
        raise CourseError(f"{where}: tests: no probes.py in {tests}")
    course = Course(folder, str(_field(head, "name", str, where, os.path.basename(os.path.abspath(folder)))),
                    root, files, tests, _strings(head, "handout", where, []), notebooks=notebooks,
                    on_flag=str(on_flag))
    tasks = data.get("tasks", {})
    if not tasks:
        raise CourseError(f"{path}: no task (add a [tasks.<id>] table)")
    for task, table in tasks.items():
        course.tasks[task] = _task(task, table, f"{path} [tasks.{task}]")
    return course


def _task(task: str, table: object, where: str) -> TaskSpec:
    if not isinstance(table, dict):
        raise CourseError(f"{where}: must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - {"about", "points", "policy", "mistakes"})
    if unknown:
        raise CourseError(f"{where}: unknown field(s) {', '.join(unknown)} (known: about, points, policy, mistakes)")
    points = _field(table, "points", (int, float), where)
    if points is None:
        raise CourseError(f"{where}: points is missing (the sum of the task's probes' points)")
    mistakes = []
    listed = table.get("mistakes", [])
    if not isinstance(listed, list):
        raise CourseError(f"{where}: mistakes must be a list of tables ([[tasks.{task}.mistakes]]), got {listed!r}")
    for n, entry in enumerate(listed):
        here = f"{where} mistakes[{n}]"
        if not isinstance(entry, dict) or set(entry) != {"replaces", "wrong", "why"}:
            raise CourseError(f"{here}: a mistake is a table of replaces, wrong and why, got {entry!r}")
        if not all(isinstance(v, str) for v in entry.values()):
            raise CourseError(f"{here}: replaces, wrong and why must be strings")
        mistakes.append(Mistake(task, entry["replaces"], entry["wrong"], entry["why"]))
    return TaskSpec(task, str(_field(table, "about", str, where, "")), float(points),  # type: ignore[arg-type]
                    _field(table, "policy", (str, dict), where), tuple(mistakes))  # type: ignore[arg-type]
