"""The homework commands: ``assign``, ``check``, ``grade``, ``solve``, ``tasks``, ``mistakes``."""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import secrets
import shutil
import stat
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Callable

import tinyattn

from . import confine, policy, sandbox, trees, untrusted
from .course import HARNESS, SHIPPED, Course, CourseError, TaskSpec, load_course
from .grading import GradedTest, Outcome, Reference, TaskRun, feedback, manifest, run_graded, run_tests, scan_tests
from .markers import (
    MarkerError,
    Mutant,
    Region,
    fill_task,
    find_regions,
    region_variants,
    write_package,
)
from .notebooks import fill_notebook, student_notebook
from .shipped import shipped_text
from .submission import Reading, find_package, package_for, read_submission, regions_by_file

PACKAGE_DIR = os.path.dirname(os.path.abspath(tinyattn.__file__))

class HomeworkError(ValueError):
    """A command that cannot do what it was asked; the message says why, in one line."""


Loaded = tuple[dict[str, list[str]], dict[str, list[Region]], list[GradedTest], list[str]]


def course_at(folder: str | None) -> Course:
    """The course in ``folder`` (None: the library's own), or ``HomeworkError`` saying what is wrong with it."""
    try:
        return load_course(SHIPPED if folder is None else folder)
    except CourseError as err:
        raise HomeworkError(str(err)) from None


def load(tasks: list[str] | None = None, course: Course | None = None) -> Loaded:
    """The course's marked files, their task regions, the graded tests, and the chosen task ids (validated)."""
    course = course or course_at(None)
    files = course.read_files()
    regions = find_regions(files, course.mistakes)
    tests = scan_tests(course.tests)
    if tasks is not None and not tasks:
        raise MarkerError("no task given (--tasks needs at least one task id)")
    unlisted = [t for t in regions if t not in course.tasks]
    if unlisted and not course.assigned:
        raise MarkerError(f"task(s) with a region but no [tasks.<id>] table in course.toml: {', '.join(unlisted)}")
    chosen = list(course.tasks) if tasks is None else tasks
    unknown = [t for t in chosen if t not in regions]
    if unknown:
        raise MarkerError(f"unknown task(s): {', '.join(unknown)} (known: {', '.join(regions)})")
    untested = [t for t in chosen if not any(x.task == t for x in tests)]
    if untested:
        raise MarkerError(f"task(s) with no test: {', '.join(untested)}")
    orphan = sorted({x.task for x in tests} - set(regions))
    if orphan:
        raise MarkerError(f"tests name task(s) with no region in the source: {', '.join(orphan)}")
    for task in chosen:
        points = sum(t.points for t in tests if t.task == task)
        if points != course.tasks[task].points:
            raise MarkerError(f"course.toml: task {task} has points = {course.tasks[task].points:g}, but its probes "
                              f"give {points:g}")
    return files, regions, tests, chosen


def _copy_tests(course: Course, dest: str, hidden: bool) -> None:
    """The public tests (a student copy), or those and the graded probes, judges and runner (the autograder).

    The library's ``conftest.py``, ``pytest.ini``, ``probing.py`` and ``notebook_import.py`` (and, for the
    autograder, its runner and judges) come first; a course's own files of those names replace them, except the
    runner, which is always the library's."""
    os.makedirs(dest, exist_ok=True)
    harness = ("conftest.py", "pytest.ini", "probing.py", "notebook_import.py")
    for name in harness + (("judges.py", "runner.py") if hidden else ()):
        shutil.copy(os.path.join(HARNESS, name), os.path.join(dest, name))
    for name in sorted(os.listdir(course.tests)):
        public = name.startswith("check_") and name.endswith(".py") or name in ("conftest.py", "pytest.ini")
        if name != "runner.py" and (public or hidden and name.endswith((".py", ".ini"))):
            shutil.copy(os.path.join(course.tests, name), os.path.join(dest, name))


def _anchor(regions: dict[str, list[Region]], notebooks: dict[str, str], tasks: list[str]) -> str:
    """What a submission's folder holds at its top, whose place says where it is: the first part of the path of
    the first file with one of ``tasks`` (``tinyattn``, for the library's own course), or of its notebook."""
    first = next(r.path for task in tasks for r in regions[task])
    return notebooks.get(first, first).split("/")[0]


def _write_task_package(files: dict[str, list[str]], regions: dict[str, list[Region]], dest: str,
                        **how: object) -> dict[tuple[str, int], tuple[int, int]]:
    """``write_package``; for a course of its own, the library it builds on (``import tinyattn``) beside its
    files, without the homework: the code under test imports it from there, as the grader's own copy."""
    spans = write_package(files, regions, dest, **how)  # type: ignore[arg-type]
    if not any(rel.startswith("tinyattn/") for rel in files):
        shutil.copytree(PACKAGE_DIR, os.path.join(dest, "tinyattn"),
                        ignore=shutil.ignore_patterns("homework", "__pycache__"))
    return spans


def _write_marked(files: dict[str, list[str]], dest: str) -> None:
    """The marked source (task regions intact), which the grader rebuilds every handed-out copy from."""
    for rel, lines in files.items():
        path = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))


def student_readme(data: dict, regions: dict[str, list[Region]], course: Course) -> str:
    """README_STUDENT.md: the tasks, where they are, how to test one, what to hand in."""
    rows = ["| task | points | file | what to write |", "| --- | --- | --- | --- |"]
    rules = []
    for task, info in data["tasks"].items():
        where = ", ".join(sorted({course.notebooks.get(r.path, r.path) for r in regions[task]}))
        rows.append(f"| `{task}` | {info['points']:g} | `{where}` | {course.tasks[task].about} |")
        rule = policy.resolve(info.get("policy"), task)
        rules.append(f"- `{task}`: your code {rule.describe()}" + (f" ({rule.why})." if rule.why else "."))
    first = next(iter(data["tasks"]))
    anchor = _anchor(regions, course.notebooks, list(data["tasks"]))
    own = anchor != "tinyattn"  # a course of its own, which builds on an installed tinyattn
    where = "." if own else anchor
    hand_in = (f"the `{anchor}` folder, whole (zip it, or upload the folder). Single files cannot be graded"
               if not own else "this folder, whole (zip it, or upload the folder)")
    needs = ("\nThe files build on tinyattn, which comes with them (the `tinyattn` folder beside them): the tests "
             "import it from there.\n" if own else "")
    if course.notebooks:
        needs += ("\nIn a notebook, write each task's code in its cell, in place of the `raise` line. Only those "
                  "lines are graded: cells you add, outputs and metadata are not read.\n")
    return f"""# {course.name}

Your tasks:

{chr(10).join(rows)}
{needs}
Each task is a `# TODO(task <id>): write this part` line followed by
`raise NotImplementedError(...)`. Replace the `raise` line with your code; change nothing
else in the files (edits outside the task lines are not graded). Find them with:

    grep -rn "TODO(task" {where}

Set up once, on any machine with Python 3.10 or newer (on Windows, `.venv\\Scripts\\python` in place of
`.venv/bin/python`):

    python -m venv .venv
    .venv/bin/python -m pip install -r requirements.txt

Run the public tests of every task, or of one task (each test names its task), with that Python:

    .venv/bin/python -m pytest tests
    .venv/bin/python -m pytest tests --task {first}

What each task's code may use (code that does not keep to it is flagged for your instructor to review):

{chr(10).join(rules)}

Tests of tasks not in this assignment are skipped. Locally a blank task can make the
tests of another fail; the grader does not: each task is graded with every other task's
code taken from the reference.

**What to hand in:** {hand_in}. More tests, hidden from you, grade the same tasks.
"""


# What a student copy needs to run its tests, beside the files it holds (tinyattn among them)
STUDENT_REQUIREMENTS = "numpy>=2.0\nmatplotlib>=3.8.4\npytest>=7\n"


def assign(out: str, tasks: list[str] | None = None, policies: dict[str, str] | None = None,
           course: Course | None = None, on_flag: str | None = None) -> dict:
    """Write ``out/student``, ``out/autograder``, ``out/manifest.json`` and ``out/gradescope_autograder.zip``.

    ``course``: the course to assign from (default: the library's own). ``policies``: task -> the name of its
    call policy (``policy.POLICIES``), for tasks that should not have the one their course gives them; the
    manifest holds each task's. ``on_flag``: what a flag does to a task's points (``ON_FLAG``), if not the
    course's."""
    course = course or course_at(None)
    files, regions, tests, chosen = load(tasks, course)
    unknown = sorted(set(policies or {}) - set(chosen))
    if unknown:
        raise HomeworkError(f"assign: --policy names task(s) not assigned: {', '.join(unknown)}")
    if on_flag is not None and on_flag not in ON_FLAG:
        raise HomeworkError(f"assign: --on-flag is {on_flag!r} (known: {', '.join(ON_FLAG)})")
    if os.path.exists(out) and not os.path.isdir(out):
        raise HomeworkError(f"assign: {out} is a file, not a folder")
    if os.path.exists(out) and os.listdir(out):
        raise MarkerError(f"assign: {out} exists and is not empty")
    with tempfile.TemporaryDirectory() as tmp:  # write everything first, so a refusal leaves nothing behind
        student, autograder = os.path.join(tmp, "student"), os.path.join(tmp, "autograder")
        write_package(files, regions, student, blank=set(chosen))
        for module, notebook in course.notebooks.items():  # a notebook's student copy is a notebook
            os.remove(os.path.join(student, module))
            student_notebook(os.path.join(course.root, notebook), os.path.join(student, notebook), set(chosen))
        write_package(files, regions, os.path.join(autograder, "reference"), blank=set())
        _write_marked(files, os.path.join(autograder, "marked"))
        _copy_tests(course, os.path.join(student, "tests"), hidden=False)
        with open(os.path.join(student, "requirements.txt"), "w", encoding="utf-8") as f:
            f.write(STUDENT_REQUIREMENTS)
        if not any(rel.startswith("tinyattn/") for rel in files):  # a course of its own builds on tinyattn: with it
            shutil.copytree(PACKAGE_DIR, os.path.join(student, "tinyattn"),
                            ignore=shutil.ignore_patterns("homework", "__pycache__"))
        for rel in course.handout:  # the course's other files for the student (data, a notebook of notes)
            os.makedirs(os.path.dirname(os.path.join(student, rel)) or student, exist_ok=True)
            shutil.copy(os.path.join(course.root, rel), os.path.join(student, rel))
        _copy_tests(course, os.path.join(autograder, "tests"), hidden=True)
        with open(os.path.join(student, "tests", "assigned_tasks.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(chosen) + "\n")
        license_text = shipped_text("LICENSE")
        for folder in (student, autograder):  # MIT: the license travels with every copy of the source
            with open(os.path.join(folder, "LICENSE"), "w", encoding="utf-8") as f:
                f.write(license_text)
        data = manifest(tests, chosen)
        data["course"] = {"name": course.name, "files": list(files), "notebooks": course.notebooks}
        data["on_flag"] = on_flag or course.on_flag
        for task, info in data["tasks"].items():
            try:
                spec = (policies or {}).get(task, course.tasks[task].policy)
                info["policy"] = policy.as_manifest(policy.resolve(spec, task))
            except ValueError as err:
                raise HomeworkError(f"assign: {err}") from None
        with open(os.path.join(student, "README_STUDENT.md"), "w", encoding="utf-8") as f:
            f.write(student_readme(data, regions, course))
        # (what the student copy holds besides the course's files: a submission may hand it back, and it is not
        # extra)
        data["handed_out"] = sorted(rel for rel in trees.files(student).files
                                    if rel not in files and rel not in course.notebooks.values())
        for path in (os.path.join(tmp, "manifest.json"), os.path.join(autograder, "manifest.json")):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
        gradescope_zip(autograder, os.path.join(tmp, "gradescope_autograder.zip"))
        os.makedirs(out, exist_ok=True)
        for name in os.listdir(tmp):
            shutil.move(os.path.join(tmp, name), os.path.join(out, name))
    return data


def _pinned(name: str) -> str:
    try:
        return f"{name}=={metadata.version(name)}"
    except metadata.PackageNotFoundError:
        return name


# The newest releases for Python 3.10 (Ubuntu 22.04's), which numpy 2.3 and matplotlib 3.11 dropped
PINS_310 = {"numpy_310": "numpy==2.2.6", "matplotlib_310": "matplotlib==3.10.9"}

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image. tinyattn itself
# comes in this zip (source/grader); only its dependencies are installed, into a venv at
# /autograder/venv (a venv, not the system pip, which PEP 668 may refuse): the versions the
# assignment was made with, or on Python 3.10, whose NumPy stops at 2.2, the newest for it.
# AUTOGRADER_ROOT replaces /autograder and PYTHON the interpreter (for a local trial run).
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{PYTHON:-python3}}"
version=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$version" in
    3.[0-9]) echo "setup.sh: tinyattn needs Python >= 3.10; this image has $version" >&2; exit 1 ;;
    3.10) pins="{numpy_310} {matplotlib_310}" ;;
    *) pins="{numpy} {matplotlib}" ;;
esac
if ! "$PY" -m venv "$ROOT/venv" > /dev/null 2>&1; then  # Debian and Ubuntu ship venv as a package of its own
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$version-venv" > /dev/null
    "$PY" -m venv "$ROOT/venv"
fi
"$ROOT/venv/bin/pip" install --no-cache-dir --quiet $pins
# The user the students' code runs as (run_autograder makes it too): no home, no login.
id -u {user} > /dev/null 2>&1 \\
    || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin {user}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this, as root, for every submission. It grades /autograder/submission, each
# task on its own, the student's code running as an unprivileged user, and writes
# /autograder/results/results.json. AUTOGRADER_ROOT replaces /autograder (for a local trial
# run); AUTOGRADER_TIMEOUT is the seconds per task.
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
PY="$ROOT/venv/bin/python3"  # setup.sh's
[ -x "$PY" ] || PY=python3
if [ "$(id -u)" = 0 ]; then
    # The student's code must not read the grader, the answers or the submission, nor write the results.
    chmod 755 "$ROOT"
    chmod 700 "$SOURCE" "$ROOT/submission" "$ROOT/results"
fi
PYTHONPATH="$SOURCE/grader" "$PY" -m tinyattn.homework grade "$ROOT/submission" \\
    --autograder "$SOURCE/autograder" --json "$RESULTS" --gradescope --timeout "${AUTOGRADER_TIMEOUT:-300}" \\
    --private "$SOURCE" --private "$ROOT/submission" --private "$ROOT/results" \\
    ${TINYATTN_GRADER_WITHOUT:+--without "$TINYATTN_GRADER_WITHOUT"} \\
    ${TINYATTN_GRADER_UNCONFINED:+--unconfined}
if ! "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$RESULTS" 2> /dev/null; then
    echo '{"score": 0, "tests": [], "output": "The grader stopped before writing results."}' \\
        > "$RESULTS"
    echo "run_autograder: the grader left no valid results.json; wrote a score of 0" >&2
fi
"""


def gradescope_zip(autograder: str, path: str) -> None:
    """A zip to upload to Gradescope as is: setup.sh, run_autograder, the grader and the autograder folder."""
    script = {"numpy": _pinned("numpy"), "matplotlib": _pinned("matplotlib"), "user": sandbox.STUDENT_USER,
              **PINS_310}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP_SH.format(**script)), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            z.writestr(info, text)
        z.writestr(os.path.join("grader", "LICENSE"), shipped_text("LICENSE"))
        for root, dirs, names in os.walk(PACKAGE_DIR):  # the grader: this tinyattn, homework included
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith((".py", ".ini")):
                    full = os.path.join(root, name)
                    z.write(full, os.path.join("grader", "tinyattn", os.path.relpath(full, PACKAGE_DIR)))
        for root, dirs, names in os.walk(autograder):
            dirs[:] = sorted(dirs)
            for name in sorted(names):
                full = os.path.join(root, name)
                z.write(full, os.path.join("autograder", os.path.relpath(full, autograder)))


def solve(student_dir: str, tasks: list[str], course: Course | None = None) -> None:
    """Put the reference code of ``tasks`` back into a student copy (e.g. to release solutions)."""
    files, regions, _, chosen = load(tasks, course)
    course = course or course_at(None)
    anchor = _anchor(regions, course.notebooks, chosen)
    if not os.path.exists(os.path.join(student_dir, anchor)):
        raise HomeworkError(f"solve: {student_dir} is not a student copy of this course (it has no {anchor})")
    for task in chosen:
        for region in regions[task]:
            notebook = course.notebooks.get(region.path)
            if notebook is not None:
                filled = fill_notebook(os.path.join(student_dir, notebook), region, files[region.path])
            else:
                filled = fill_task(os.path.join(student_dir, region.path), region, files[region.path])
            if not filled:
                raise MarkerError(f"solve: no stub for task {task} in {region.path}")


def _task_packages(
    files: dict[str, list[str]], regions: dict[str, list[Region]], reading: Reading, dest: str, tasks: list[str]
) -> dict[str, str]:
    """The isolation rule: for each of ``tasks``, a package root with the student's code (``reading``) in that
    task's regions and the reference code in every other region."""
    roots = {}
    for task in tasks:
        roots[task] = os.path.join(dest, task)
        _write_task_package(files, regions, roots[task], blank=set(), given=package_for(task, regions, reading))
    return roots


def check(
    tasks: list[str] | None = None,
    timeout: float = 600.0,
    workers: int = 2,
    progress: Callable[[int, int, str], None] | None = None,
    course: Course | None = None,
) -> tuple[bool, str]:
    """The self-check: are the reference, the blanks, the mistakes and the isolation each as they should be?

    1. the reference passes every test;
    2. the student copy fails every graded test (each task graded on its own, as ``grade`` does);
    3. blanking each task alone fails every one of its own tests;
    4. every common mistake (the task's ``mistakes`` in course.toml), planted alone, fails a test of its task;
    5. isolation: a student copy where only task T is solved is graded, for T, on a package
       identical to the reference, so T earns the full points check 1 showed;
    6. the call policy: each task's flags neither its reference nor any of its mistakes (on the
       code), and the run-time half watches checks 1 and 4 (a mistake refused there is a hole);
    7. the handout: no task's region holds an import its file needs (blanked, it would be gone).
    ``progress(done, total, what)`` is called as each of the test runs ends (``homework check``
    prints it). Returns ``(ok, table)``.
    """
    course = course or course_at(None)
    files, regions, tests, chosen = load(tasks, course)
    graded = [t for t in tests if t.task in chosen]
    public = [t for t in scan_tests(course.tests, "check_*.py") if t.task in chosen]
    rows: list[tuple[str, str, str, bool]] = []  # (check, subject, detail, ok)
    seed = secrets.randbits(31)
    reference = Reference(course.tests, course.root)
    for t in graded:  # here, before the threads: the reference's probes share tinyattn's global state
        reference.values(t.name, seed)
    with tempfile.TemporaryDirectory() as tmp:
        public_tests = os.path.join(tmp, "public_tests")  # as a student copy has them
        _copy_tests(course, public_tests, hidden=False)
        # (label, subject, blank set, mutant, mutant path, tests, expectation); public tests run under pytest
        jobs: list[tuple[str, str, set[str], Mutant | None, str | None, list[GradedTest], str]] = []
        jobs.append(("1. reference passes", "all tasks", set(), None, None, graded, "all pass"))
        jobs.append(("1. reference passes", "all tasks (public tests)", set(), None, None, public, "all pass"))
        for task in chosen:
            own = [t for t in graded if t.task == task]
            jobs.append(("3. blank one task", task, {task}, None, None, own, "all fail"))
            own_public = [t for t in public if t.task == task]
            if own_public:
                jobs.append(("3. blank one task", f"{task} (public tests)", {task}, None, None, own_public, "all fail"))
            for region in regions[task]:
                for planted in region.mutants:
                    subject = f"{task}: {region.path}:{planted.line}"
                    jobs.append(("4. mistake caught", subject, set(), planted, region.path, own, "some fail"))

        # Write every variant first, in this thread: ast.parse is not safe to call from several threads.
        roots, spans = [], []
        for index, (_, _, blank, mutant, mutant_path, _, _) in enumerate(jobs):
            roots.append(os.path.join(tmp, f"variant{index}"))
            spans.append(_write_task_package(files, regions, roots[-1], blank=blank, mutant=mutant,
                                             mutant_path=mutant_path))
        limits = sandbox.Limits(seconds=timeout)
        rules = {task: policy.resolve(course.tasks[task].policy, task) for task in chosen}  # (at run time too)

        def run(index: int) -> tuple[tuple[str, str, str, bool], dict[str, Outcome]]:
            label, subject, _, mutant, _, job_tests, expect = jobs[index]
            if subject.endswith("(public tests)"):
                outcomes = run_tests(roots[index], public_tests, job_tests, timeout=timeout)
            else:
                def write(dest: str, root: str = roots[index], spans: dict = spans[index]) -> dict:
                    shutil.copytree(root, dest)
                    return spans

                outcomes = run_graded(write, job_tests, reference, seed=seed, limits=limits,
                                      iso=sandbox.Isolation(), regions=regions, policies=rules).outcomes
            passed = [n for n, o in outcomes.items() if o.passed]
            failed = [n for n, o in outcomes.items() if not o.passed]
            if expect == "all pass":
                ok, detail = not failed, f"{len(passed)}/{len(outcomes)} passed" + (
                    f"; failing: {', '.join(failed)}" if failed else "")
            elif expect == "all fail":
                ok, detail = not passed, f"{len(failed)}/{len(outcomes)} failed" + (
                    f"; still passing: {', '.join(passed)}" if passed else "")
            else:
                ok, detail = bool(failed), f"{len(failed)}/{len(outcomes)} of its tests failed"
                refused = [n for n, o in outcomes.items() if policy.REFUSED in o.output]
                if refused:  # an honest mistake must fail on its values, never be refused as a shortcut
                    ok, detail = False, f"refused by the task's policy: {', '.join(refused)}"
                if mutant is not None:
                    detail += f"  [{mutant.code.strip()}]"
            return (label, subject, detail, ok), outcomes

        total, done = len(jobs), 0
        lock = threading.Lock()

        def run_and_tell(index: int) -> tuple[tuple[str, str, str, bool], dict[str, Outcome]]:
            nonlocal done
            result = run(index)
            with lock:
                done += 1
                if progress is not None:
                    progress(done, total, f"{jobs[index][0]}: {jobs[index][1]}")
            return result

        with ThreadPoolExecutor(max_workers=workers) as pool:  # the test runs are subprocesses
            results = list(pool.map(run_and_tell, range(len(jobs))))
        rows = [r for r, _ in results]
        blanks = [(r, outcomes) for r, outcomes in results if r[0] == "3. blank one task"]
        survivors = [n for r, outcomes in blanks for n, o in outcomes.items() if o.passed]
        rows.insert(1, ("2. student copy fails", f"{len(chosen)} tasks blanked", (
            "every graded test failed with its task blank" if not survivors
            else f"still passing: {', '.join(survivors)}"), not survivors))
        rows += isolation_rows(files, regions, chosen, os.path.join(tmp, "isolation"))
        rows += policy_rows(files, regions, chosen, rules)
        rows += handout_rows(files, regions, chosen)
    width = max(len(r[1]) for r in rows)
    lines = [f"{'check':<24} {'subject':<{width}}  {'result':<6} detail", "-" * (width + 60)]
    for label, subject, detail, ok in rows:
        lines.append(f"{label:<24} {subject:<{width}}  {'ok' if ok else 'HOLE':<6} {detail}")
    holes = sum(not r[3] for r in rows)
    lines.append(f"\n{len(rows)} checks, {holes} hole(s) (the probes' seed was {seed})")
    return holes == 0, "\n".join(lines)


def isolation_rows(
    files: dict[str, list[str]], regions: dict[str, list[Region]], chosen: list[str], tmp: str
) -> list[tuple[str, str, str, bool]]:
    """Check 5: for each task T, a copy where only T is solved grades T on exactly the reference package."""
    student = os.path.join(tmp, "student")
    write_package(files, regions, student, blank=set(chosen))
    reference = os.path.join(tmp, "reference")
    write_package(files, regions, reference, blank=set())
    rows = []
    for task in chosen:
        copy = os.path.join(tmp, f"only_{task}")
        shutil.copytree(student, copy)
        for region in regions[task]:
            fill_task(os.path.join(copy, region.path), region, files[region.path])
        reading = read_submission(copy, files, regions, set(chosen))
        roots = _task_packages(files, regions, reading, os.path.join(tmp, f"graded_{task}"), [task])
        differ = [rel for rel in files if _read(os.path.join(roots[task], rel)) != _read(os.path.join(reference, rel))]
        detail = "graded on the reference package" if not differ else f"differs from the reference in {differ[0]}"
        rows.append(("5. isolation", task, detail, not differ))
    return rows


def policy_rows(
    files: dict[str, list[str]], regions: dict[str, list[Region]], chosen: list[str], rules: dict[str, policy.Policy]
) -> list[tuple[str, str, str, bool]]:
    """Check 6: each task's call policy (its course's) flags neither the reference nor any common mistake."""
    rows = []
    for task in chosen:
        rule, variants, refused = rules[task], 0, []
        for region in regions[task]:
            for name, code in region_variants(files[region.path], region):
                variants += 1
                if policy.check(code, rule, (files[region.path], region)):
                    refused.append(name)
        detail = (f"{rule.name}: flags none of {variants} honest variants (the reference, the common mistakes)"
                  if not refused else f"{rule.name} flags honest code: {'; '.join(refused)}")
        rows.append(("6. policy", task, detail, not refused))
    return rows


def handout_rows(
    files: dict[str, list[str]], regions: dict[str, list[Region]], chosen: list[str]
) -> list[tuple[str, str, str, bool]]:
    """Check 7: what the handout gives, the grader takes. An import inside a task's region is gone from the student's
    copy once the region is blanked, and a student who adds it where it belongs, at the top of the file, edits
    outside the regions, which the grader does not take: each such import is a hole."""
    rows = []
    for task in chosen:
        inside = []
        for region in regions[task]:
            tree = ast.parse("\n".join(files[region.path]))
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and region.begin < node.lineno - 1 < region.end:
                    names = ", ".join(alias.asname or alias.name for alias in node.names)
                    inside.append(f"{region.path}:{node.lineno} imports {names} inside the region (move it to the "
                                  "top of the file, which the student gets)")
        detail = "every import its reference needs is in the handout" if not inside else "; ".join(inside)
        rows.append(("7. handout", task, detail, not inside))
    return rows


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def tasks_markdown(course: Course | None = None) -> str:
    """The tasks table of docs/teaching.md: each task, what the student writes and its points, from the course
    file (``load`` checks its points against the probes', so the page and the grader cannot disagree)."""
    course = course or course_at(None)
    _, _, _, chosen = load(None, course)
    lines = ["| task | what the student writes | points |", "| --- | --- | --- |"]
    for task in chosen:
        lines.append(f"| `{task}` | {course.tasks[task].about} | {course.tasks[task].points:g} |")
    return "\n".join(lines)


def mistakes_markdown(course: Course | None = None) -> str:
    """The "Common mistakes" table of docs/teaching.md, from the course file."""
    course = course or course_at(None)
    lines = ["| task | instead of | a student writes | why it is wrong |", "| --- | --- | --- | --- |"]
    for m in course.mistakes:
        right = m.replaces.split("  #")[0]  # the shape comment is not part of the answer
        lines.append(f"| `{m.task}` | `{right}` | `{m.wrong}` | {m.why} |")
    return "\n".join(lines)


class GraderFailed(RuntimeError):
    """The grader itself failed part-way; what was graded is in the results file, the rest scores 0."""


def _test_entry(task: str, test: dict, passed: bool, output: str, fraction: float | None = None,
                withheld: str = "") -> dict:
    """One test of Gradescope's results: its points, or the share ``fraction`` of them its outputs earned;
    none while ``withheld`` says why they are set aside for the instructor's review."""
    earned = test["points"] * (1.0 if passed else fraction or 0.0)
    if withheld:
        earned, output = 0.0, f"{withheld}\n{output}".strip()
    return {"name": f"{task}: {test['name']}", "score": earned, "max_score": test["points"],
            "status": "passed" if passed and not withheld else "failed", "output": output, "tags": [task],
            "visibility": "visible" if test["visibility"] == "visible" else "after_published"}


ON_FLAG = ("review", "withhold")  # what a flag does to a task's points: kept (the row is flagged), or set aside
WITHHELD = "points withheld until your instructor reviews the flagged code (your course sets aside flagged points)"


def evidence(task: str, rule: policy.Policy, where: str, code: list[str], finding: policy.Refusal) -> dict:
    """One flag, as the instructor reviews it: the task, the file, the line of the task's code, the rule, what in
    the code the policy's check found, and that line."""
    line = code[finding.line - 1].strip() if 1 <= finding.line <= len(code) else ""
    return {"task": task, "file": where, "line": finding.line, "rule": rule.name, "what": finding.what,
            "code": untrusted.text(line, 200)}


class ResultsFile:
    """Gradescope's ``results.json``, rewritten after every task, so a file is there whatever happens next.

    Tasks not graded yet appear as failed with ``pending``'s reason; the grader writes the final
    file itself once every student process has ended, over anything else written there.
    """

    def __init__(self, path: str | None, tasks: dict):
        self.path, self.tasks = path, tasks
        self.graded: dict[str, list[dict]] = {}
        self.output: list[str] = []
        self.flags: list[dict] = []  # the policy's findings, for the instructor's review (``evidence``)
        self.status = "grading"  # the grader's own word on the grading: "graded", or why it could not be

    STOPPED = "not graded: the grader stopped before this task"

    def results(self, pending: str = STOPPED) -> dict:
        """The results dict: graded tasks as graded, the others failed with ``pending``."""
        tests = []
        for task, info in self.tasks.items():
            tests += self.graded.get(task) or [_test_entry(task, t, False, pending) for t in info["tests"]]
        results: dict = {"score": sum(t["score"] for t in tests), "tests": tests,
                         "extra_data": {"status": self.status, "flags": self.flags}}
        if self.output:
            results["output"] = "\n".join(self.output)
        return results

    def write(self, pending: str = STOPPED) -> dict:
        """Write the results (atomically: a half-written file is never left) and return them."""
        results = self.results(pending)
        if self.path:
            folder = os.path.dirname(os.path.abspath(self.path))
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".results-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=2)
            os.replace(tmp, self.path)
        return results


def _redactor(
    files: dict[str, list[str]], regions: dict[str, list[Region]], more: tuple[str, ...] = ()
) -> Callable[[str], str]:
    """A function that removes every line of reference code (any task's region), and the lines ``more``, from a text."""
    lines = [line.strip() for rs in regions.values() for r in rs for line in files[r.path][r.begin + 1:r.end]]
    secret = sorted({line for line in lines + [m.strip() for m in more]
                     if len(line) >= 8 and not line.startswith("#")}, key=len, reverse=True)

    def redact(text: str) -> str:
        for line in secret:
            text = text.replace(line, "[reference code removed]")
        return text

    return redact


def task_seed(base: int | str, task: str) -> int:
    """The probes' seed for ``task`` in a grading whose seeds come from ``base``: one seed per task, so that
    nothing computed while one task's code runs (the inputs of the next task's probes, their answers) holds
    for the next. From a secret 128-bit base, one task's seed tells nothing of another's."""
    return int.from_bytes(hashlib.sha256(f"{base}:{task}".encode()).digest()[:4], "big") >> 1


def grade(
    student_dir: str, autograder_dir: str, json_path: str | None = None, timeout: float = 300.0,
    private: tuple[str, ...] = (), seed: int | None = None, adopt_orphans: bool = False,
    without: tuple[str, ...] = (), user: str = sandbox.STUDENT_USER, unconfined: bool = False,
) -> tuple[dict, str]:
    """Grade each task of a submission on its own; return Gradescope's results dict and the instructor's log.

    ``student_dir`` holds the ``tinyattn`` folder (directly or up to three levels in). Each task
    is graded against the autograder's marked source with the student's code in that task's
    regions only (``submission.py``), so a blank or broken task costs only its own points.
    The student's code runs in a child (``sandbox.py``; as the student user when root, with
    ``private`` folders checked to be out of its reach); the verdicts are decided here. The
    results file is written before anything runs, after each task, and at the end.
    ``adopt_orphans`` (the command line sets it) makes this process adopt and kill whatever the
    student's code leaves running, whoever it runs as: only for a process that does nothing else.
    Each task's probes get a seed of their own (``task_seed``), from ``seed`` when it is given (to
    replay a grading), else from a secret drawn for this grading. ``without`` names kernel fences
    not to use (``confine.FEATURES``); where isolation is reduced, the first line of the log and of
    the results' output says so. ``user``: who the student's code runs as, when the grader is root (made on
    first use; gradings at once need a user each, since the end of each task kills every process of its user).
    It fails closed: where the student's code would run without the student user, or without a fence not named in
    ``without``, grading refuses (``HomeworkError``, one line naming what is missing and the fix), unless
    ``unconfined`` says to grade anyway; then the results' first line says what is missing.
    """
    unknown = sorted(set(without) - set(confine.FEATURES))
    if unknown:
        raise HomeworkError(f"grade: unknown fence(s) {', '.join(unknown)} (known: {', '.join(confine.FEATURES)})")
    manifest_path = os.path.join(autograder_dir, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise HomeworkError(
            f"grade: {autograder_dir} is not an autograder folder (no manifest.json; `assign` makes one)"
        )
    with open(manifest_path, encoding="utf-8") as f:
        data = json.load(f)
    sheet = ResultsFile(json_path, data["tasks"])
    sheet.write("not graded yet: grading has just begun")
    try:
        rules = {task: policy.resolve(info.get("policy"), task) for task, info in data["tasks"].items()}
    except (TypeError, ValueError) as err:
        raise HomeworkError(f"grade: manifest.json: {err}") from None
    on_flag = data.get("on_flag", "review")
    if on_flag not in ON_FLAG:
        raise HomeworkError(f"grade: manifest.json: on_flag is {on_flag!r} (known: {', '.join(ON_FLAG)})")
    if not os.path.isdir(student_dir):
        raise HomeworkError(f"grade: no submission folder at {student_dir}")
    course = _assigned_course(autograder_dir, data)
    files, regions, _, chosen = load(list(data["tasks"]), course)
    anchor = _anchor(regions, course.notebooks, chosen)
    package_root = find_package(student_dir, anchor)
    if package_root is None:
        found = sorted(untrusted.text(name, 80) for name in itertools.islice(os.listdir(student_dir), 1000))
        listed = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "") if found else "nothing"
        what = f"{anchor} folder" if os.path.isdir(os.path.join(course.root, anchor)) else anchor
        raise HomeworkError(
            f"grade: no {what} in the submission (found: {listed}); hand in the whole "
            f"{what if anchor == 'tinyattn' else 'folder'} of your student copy, not single files"
        )
    log: list[str] = []
    table: list[tuple[str, int, int, float, float]] = []
    try:
        reference = Reference(course.tests, course.root)
        iso = sandbox.isolation(private, user=user, adopt_orphans=adopt_orphans, without=without)
        unfenced = sandbox.unfenced(iso, without)
        if unfenced and not unconfined:
            reason = (f"grade: refused, {unfenced}; grading anyway needs --unconfined (run_autograder: "
                      "TINYATTN_GRADER_UNCONFINED=1), and its results then say so")
            sheet.status = f"not graded: {reason}"
            sheet.write("not graded: the grader is not set up to run your code safely; your instructor has the "
                        "details")
            raise HomeworkError(reason)
        log.append(iso.note or f"the student's code runs as {user}, behind every fence")
        log += iso.fences.remarks if iso.fences else []
        if iso.note:
            sheet.output.insert(0, iso.note)
        base: int | str = secrets.token_hex(16) if seed is None else seed
        log.append(f"the probes' seeds come from {base} (grade(..., seed={base!r}) replays them)")
        reading = read_submission(package_root, files, regions, set(chosen), tuple(data.get("handed_out", ())),
                                  course.notebooks)
        if reading.outside:
            sheet.output.append("Not graded (edits outside the task regions):\n" + "\n".join(reading.outside))
        limits, redact = sandbox.Limits(seconds=timeout), _redactor(files, regions, tuple(reference.hidden_lines()))
        for task, info in data["tasks"].items():
            given = package_for(task, regions, reading)

            def write(dest: str, given: dict = given) -> dict:
                return _write_task_package(files, regions, dest, blank=set(), given=given)

            task_tests = [GradedTest(**t) for t in info["tests"]]
            rule = rules[task]
            # The policy's check of the code is evidence for the instructor (a flag), never a verdict: what the code
            # may not do is stopped by mechanism while it runs. Only code Python cannot read is not run.
            flags = []
            unreadable = []
            for region in regions[task]:
                code = reading.code.get(region.key)
                if code is None:
                    continue
                for finding in policy.check(code, rule, (files[region.path], region)):
                    if finding.what.startswith(policy.UNREADABLE):
                        unreadable.append(finding)
                    else:
                        where = course.notebooks.get(region.path, region.path)
                        flags.append(evidence(task, rule, where, code, finding))
            if unreadable:
                message = policy.refusal_message(task, rule, unreadable)
                run = TaskRun(outcomes={g.node_id: Outcome(False, feedback(g, message, "")) for g in task_tests},
                              log=[message])
            else:
                run = run_graded(write, task_tests, reference, seed=task_seed(base, task), limits=limits, iso=iso,
                                 redact=redact, regions=regions, policies={task: rule})
            sheet.flags += flags
            for flag in flags:
                log.append(f"{task}: flagged ({rule.name}): {flag['what']} (line {flag['line']} of the task's code: "
                           f"{flag['code']})")
            withheld = WITHHELD if flags and on_flag == "withhold" else ""
            outcomes = [run.outcomes[g.node_id] for g in task_tests]
            entries = [_test_entry(task, t, o.passed, o.output, o.fraction, withheld)
                       for t, o in zip(info["tests"], outcomes)]
            sheet.graded[task] = entries
            sheet.write()
            log += [f"{task}: {line}" for line in run.log]
            earned = sum(e["score"] for e in entries)
            table.append((task, sum(e["status"] == "passed" for e in entries), len(entries), earned, info["points"]))
    except (HomeworkError, MarkerError):
        raise
    except Exception as err:
        reason = f"not graded: the grader failed ({type(err).__name__}); your instructor has the details"
        sheet.status = f"not graded: the grader failed: {type(err).__name__}: {err}"[:500]
        sheet.write(reason)
        raise GraderFailed(f"the grader failed: {type(err).__name__}: {err}") from err
    if sheet.flags:
        tasks_flagged = sorted({flag["task"] for flag in sheet.flags})
        kept = "set aside until reviewed" if on_flag == "withhold" else "kept"
        sheet.output.append(f"Flagged for your instructor's review ({', '.join(tasks_flagged)}): what the task's "
                            f"policy asks of the code was not kept everywhere; the points are {kept}:\n"
                            + "\n".join(f"- {f['task']}: {f['what']} (line {f['line']} of your code)"
                                         for f in sheet.flags[:20]))
    sheet.status = "graded"
    results = sheet.write()  # the final file, from this process's own state
    width = max([len("task")] + [len(r[0]) for r in table])
    lines = [iso.note] if iso.note else []
    lines += [f"{'task':<{width}}  passed  points", "-" * (width + 18)]
    for task, passed, n, earned, possible in table:
        lines.append(f"{task:<{width}}  {passed:>2}/{n:<3}  {earned:g}/{possible:g}")
    lines.append(f"{'total':<{width}}          {results['score']:g}/{sum(r[4] for r in table):g}")
    lines += [f"note: {line}" for line in reading.outside]
    lines += [f"note: extra file in the submission (not read): {name}" for name in reading.extra]
    lines += [f"log: {line}" for line in log]
    return results, "\n".join(lines)


def _assigned_course(autograder_dir: str, data: dict) -> Course:
    """The course an autograder folder grades: its marked files, its tests and its manifest's tasks."""
    files = data.get("course", {}).get("files")
    if not isinstance(files, list) or not os.path.isdir(os.path.join(autograder_dir, "marked")):
        raise HomeworkError(f"grade: {autograder_dir} was made by an older tinyattn (its manifest names no course "
                            "files); make it again with `assign`")
    tasks = {task: TaskSpec(task, "", float(info["points"]), info.get("policy"))
             for task, info in data["tasks"].items()}
    notebooks = {str(k): str(v) for k, v in dict(data["course"].get("notebooks", {})).items()}
    return Course(autograder_dir, str(data["course"].get("name", "")), os.path.join(autograder_dir, "marked"),
                  [str(rel) for rel in files], os.path.join(autograder_dir, "tests"), tasks=tasks, assigned=True,
                  notebooks=notebooks)


def failed_results(autograder_dir: str, reason: str) -> dict:
    """Gradescope's results when nothing could be graded: every test failed, with the reason."""
    try:
        with open(os.path.join(autograder_dir, "manifest.json"), encoding="utf-8") as f:
            tasks = json.load(f)["tasks"]
    except (OSError, ValueError, KeyError):
        return {"score": 0.0, "output": reason, "tests": []}
    sheet = ResultsFile(None, tasks)
    sheet.output.append(reason)
    sheet.status = f"not graded: {reason}"
    return sheet.results(reason)


__all__ = [
    "GraderFailed", "HomeworkError", "assign", "check", "grade", "load", "mistakes_markdown", "regions_by_file",
    "solve", "tasks_markdown",
]
