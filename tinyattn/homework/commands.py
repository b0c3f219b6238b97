"""The homework commands: ``assign``, ``check``, ``grade``, ``solve``, ``tasks``, ``mistakes``."""

from __future__ import annotations

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
from .grading import GradedTest, Outcome, Reference, TaskRun, feedback, manifest, run_graded, run_tests, scan_tests
from .markers import (
    MarkerError,
    Mutant,
    Region,
    fill_task,
    find_regions,
    package_files,
    region_variants,
    write_package,
)
from .shipped import shipped_text
from .submission import Reading, find_package, package_for, read_submission, regions_by_file

PACKAGE_DIR = os.path.dirname(os.path.abspath(tinyattn.__file__))
TESTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "task_tests")

# What the student writes, per task (README_STUDENT.md and docs/teaching.md)
TASK_INFO = {
    "unbroadcast": "`unbroadcast(grad, shape)`: sum a gradient back to the shape of an input that was broadcast",
    "matmul_backward": "`dA = dC Bᵀ`, `dB = Aᵀ dC` for batched matmul with broadcast batch dims",
    "linear_forward": "`Y = X Wᵀ + b`, the weight stored (out, in)",
    "shape_backward": "the backward of `reshape` and of `transpose`",
    "softmax_backward": "`dX = Y ⊙ (dY − rowsum(dY ⊙ Y))`",
    "log_softmax_backward": "`dX = dY − exp(Y) ⊙ rowsum(dY)` (and so cross-entropy's gradient)",
    "attention": "`softmax(Q Kᵀ / √d_k + mask) V`, returning the output and the weights",
    "mha_split_heads": "`(B, n, E) -> (B, h, n, d_k)` for Q, K and V",
    "mha_merge_heads": "`(B, h, n, d_k) -> (B, n, E)`",
    "adam_step": "Adam's moment updates, bias correction and step",
}


class HomeworkError(ValueError):
    """A command that cannot do what it was asked; the message says why, in one line."""


Loaded = tuple[dict[str, list[str]], dict[str, list[Region]], list[GradedTest], list[str]]


def load(tasks: list[str] | None = None, package_dir: str = PACKAGE_DIR) -> Loaded:
    """The marked files, their task regions, the graded tests, and the chosen task ids (validated)."""
    files = package_files(package_dir)
    regions = find_regions(files)
    tests = scan_tests(TESTS_DIR)
    if tasks is not None and not tasks:
        raise MarkerError("no task given (--tasks needs at least one task id)")
    chosen = list(regions) if tasks is None else tasks
    unknown = [t for t in chosen if t not in regions]
    if unknown:
        raise MarkerError(f"unknown task(s): {', '.join(unknown)} (known: {', '.join(regions)})")
    untested = [t for t in chosen if not any(x.task == t for x in tests)]
    if untested:
        raise MarkerError(f"task(s) with no test: {', '.join(untested)}")
    orphan = sorted({x.task for x in tests} - set(regions))
    if orphan:
        raise MarkerError(f"tests name task(s) with no region in the source: {', '.join(orphan)}")
    return files, regions, tests, chosen


PUBLIC_TESTS = ("check_tasks.py", "conftest.py", "pytest.ini")  # what a student copy gets


def _copy_tests(dest: str, hidden: bool) -> None:
    """The public tests (a student copy), or those and the graded probes, judges and runner (the autograder)."""
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(TESTS_DIR)):
        if name.endswith((".py", ".ini")) and (hidden or name in PUBLIC_TESTS):
            shutil.copy(os.path.join(TESTS_DIR, name), os.path.join(dest, name))


def _write_marked(files: dict[str, list[str]], dest: str) -> None:
    """The marked source (task regions intact), which the grader rebuilds every handed-out copy from."""
    for rel, lines in files.items():
        path = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))


def student_readme(data: dict, regions: dict[str, list[Region]]) -> str:
    """README_STUDENT.md: the tasks, where they are, how to test one, what to hand in."""
    rows = ["| task | points | file | what to write |", "| --- | --- | --- | --- |"]
    rules = []
    for task, info in data["tasks"].items():
        where = ", ".join(sorted({r.path for r in regions[task]}))
        rows.append(f"| `{task}` | {info['points']:g} | `{where}` | {TASK_INFO.get(task, '')} |")
        rule = policy.resolve(info.get("policy"), task)
        rules.append(f"- `{task}`: your code {rule.describe()}" + (f" ({rule.why})." if rule.why else "."))
    first = next(iter(data["tasks"]))
    return f"""# tinyattn homework

Your tasks:

{chr(10).join(rows)}

Each task is a `# TODO(task <id>): write this part` line followed by
`raise NotImplementedError(...)`. Replace the `raise` line with your code; change nothing
else in the files (edits outside the task lines are not graded). Find them with:

    grep -rn "TODO(task" tinyattn

Run the public tests of every task, or of one task (each test names its task):

    python -m pytest tests
    python -m pytest tests --task {first}

What each task's code may use (the grader checks it, and refuses code that does not keep to it):

{chr(10).join(rules)}

Tests of tasks not in this assignment are skipped. Locally a blank task can make the
tests of another fail (attention needs its heads split); the grader does not: each
task is graded with every other task's code taken from the reference.

**What to hand in:** the `tinyattn` folder, whole (zip it, or upload the folder). Single
files cannot be graded. More tests, hidden from you, grade the same tasks.
"""


def assign(out: str, tasks: list[str] | None = None, policies: dict[str, str] | None = None) -> dict:
    """Write ``out/student``, ``out/autograder``, ``out/manifest.json`` and ``out/gradescope_autograder.zip``.

    ``policies``: task -> the name of its call policy (``policy.POLICIES``), for tasks that should not
    have their default (``policy.default_for``); the manifest holds each task's."""
    files, regions, tests, chosen = load(tasks)
    unknown = sorted(set(policies or {}) - set(chosen))
    if unknown:
        raise HomeworkError(f"assign: --policy names task(s) not assigned: {', '.join(unknown)}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise HomeworkError(f"assign: {out} is a file, not a folder")
    if os.path.exists(out) and os.listdir(out):
        raise MarkerError(f"assign: {out} exists and is not empty")
    with tempfile.TemporaryDirectory() as tmp:  # write everything first, so a refusal leaves nothing behind
        student, autograder = os.path.join(tmp, "student"), os.path.join(tmp, "autograder")
        write_package(files, regions, student, blank=set(chosen))
        write_package(files, regions, os.path.join(autograder, "reference"), blank=set())
        _write_marked(files, os.path.join(autograder, "marked"))
        _copy_tests(os.path.join(student, "tests"), hidden=False)
        _copy_tests(os.path.join(autograder, "tests"), hidden=True)
        with open(os.path.join(student, "tests", "assigned_tasks.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(chosen) + "\n")
        license_text = shipped_text("LICENSE")
        for folder in (student, autograder):  # MIT: the license travels with every copy of the source
            with open(os.path.join(folder, "LICENSE"), "w", encoding="utf-8") as f:
                f.write(license_text)
        data = manifest(tests, chosen)
        for task, info in data["tasks"].items():
            try:
                info["policy"] = policy.as_manifest(policy.resolve((policies or {}).get(task), task))
            except ValueError as err:
                raise HomeworkError(f"assign: {err}") from None
        with open(os.path.join(student, "README_STUDENT.md"), "w", encoding="utf-8") as f:
            f.write(student_readme(data, regions))
        # (what the student copy holds besides the package: a submission may hand it back, and it is not extra)
        data["handed_out"] = sorted(rel for rel in trees.files(student).files if not rel.startswith("tinyattn/"))
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
    ${TINYATTN_GRADER_WITHOUT:+--without "$TINYATTN_GRADER_WITHOUT"}
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


def solve(student_dir: str, tasks: list[str]) -> None:
    """Put the reference code of ``tasks`` back into a student copy (e.g. to release solutions)."""
    if not os.path.isdir(os.path.join(student_dir, "tinyattn")):
        raise HomeworkError(f"solve: {student_dir} is not a student copy (it has no tinyattn folder)")
    files, regions, _, chosen = load(tasks)
    for task in chosen:
        for region in regions[task]:
            if not fill_task(os.path.join(student_dir, region.path), region, files[region.path]):
                raise MarkerError(f"solve: no stub for task {task} in {region.path}")


def _task_packages(
    files: dict[str, list[str]], regions: dict[str, list[Region]], reading: Reading, dest: str, tasks: list[str]
) -> dict[str, str]:
    """The isolation rule: for each of ``tasks``, a package root with the student's code (``reading``) in that
    task's regions and the reference code in every other region."""
    roots = {}
    for task in tasks:
        roots[task] = os.path.join(dest, task)
        write_package(files, regions, roots[task], blank=set(), given=package_for(task, regions, reading))
    return roots


def check(
    tasks: list[str] | None = None,
    timeout: float = 600.0,
    workers: int = 2,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[bool, str]:
    """The self-check: are the reference, the blanks, the mistakes and the isolation each as they should be?

    1. the reference passes every test;
    2. the student copy fails every graded test (each task graded on its own, as ``grade`` does);
    3. blanking each task alone fails every one of its own tests;
    4. every common mistake (``mistakes.py``), planted alone, fails at least one test of its task;
    5. isolation: a student copy where only task T is solved is graded, for T, on a package
       identical to the reference, so T earns the full points check 1 showed;
    6. the call policy: each task's refuses neither its reference nor any of its mistakes (on the
       code), and the run-time half watches checks 1 and 4 (a mistake refused there is a hole).
    ``progress(done, total, what)`` is called as each of the test runs ends (``homework check``
    prints it). Returns ``(ok, table)``.
    """
    files, regions, tests, chosen = load(tasks)
    graded = [t for t in tests if t.task in chosen]
    public = [t for t in scan_tests(TESTS_DIR, "check_*.py") if t.task in chosen]
    rows: list[tuple[str, str, str, bool]] = []  # (check, subject, detail, ok)
    seed = secrets.randbits(31)
    reference = Reference(TESTS_DIR)
    for t in graded:  # here, before the threads: the reference's probes share tinyattn's global state
        reference.values(t.name, seed)
    with tempfile.TemporaryDirectory() as tmp:
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
            spans.append(write_package(files, regions, roots[-1], blank=blank, mutant=mutant, mutant_path=mutant_path))
        limits = sandbox.Limits(seconds=timeout)
        rules = {task: policy.resolve(None, task) for task in chosen}  # (each task's default, at run time too)

        def run(index: int) -> tuple[tuple[str, str, str, bool], dict[str, Outcome]]:
            label, subject, _, mutant, _, job_tests, expect = jobs[index]
            if subject.endswith("(public tests)"):
                outcomes = run_tests(roots[index], TESTS_DIR, job_tests, timeout=timeout)
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
        rows += policy_rows(files, regions, chosen)
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
    files: dict[str, list[str]], regions: dict[str, list[Region]], chosen: list[str]
) -> list[tuple[str, str, str, bool]]:
    """Check 6: each task's call policy (its default) refuses neither the reference nor any common mistake."""
    rows = []
    for task in chosen:
        rule, variants, refused = policy.resolve(None, task), 0, []
        for region in regions[task]:
            for name, code in region_variants(files[region.path], region):
                variants += 1
                if policy.check(code, rule, (files[region.path], region)):
                    refused.append(name)
        detail = (f"{rule.name}: refuses none of {variants} honest variants (the reference, the common mistakes)"
                  if not refused else f"{rule.name} refuses honest code: {'; '.join(refused)}")
        rows.append(("6. policy", task, detail, not refused))
    return rows


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def tasks_markdown() -> str:
    """The tasks table of docs/teaching.md: each task, what the student writes (``TASK_INFO``) and its points, the
    sum of its graded probes' points (so that the page and the grader cannot disagree)."""
    _, _, tests, chosen = load()
    lines = ["| task | what the student writes | points |", "| --- | --- | --- |"]
    for task in chosen:
        points = sum(t.points for t in tests if t.task == task)
        lines.append(f"| `{task}` | {TASK_INFO.get(task, '')} | {points:g} |")
    return "\n".join(lines)


def mistakes_markdown() -> str:
    """The "Common mistakes" table of docs/teaching.md, from ``mistakes.py``."""
    from .mistakes import MISTAKES

    lines = ["| task | instead of | a student writes | why it is wrong |", "| --- | --- | --- | --- |"]
    for m in MISTAKES:
        right = m.replaces.split("  #")[0]  # the shape comment is not part of the answer
        lines.append(f"| `{m.task}` | `{right}` | `{m.wrong}` | {m.why} |")
    return "\n".join(lines)


class GraderFailed(RuntimeError):
    """The grader itself failed part-way; what was graded is in the results file, the rest scores 0."""


def _test_entry(task: str, test: dict, passed: bool, output: str) -> dict:
    """One test of Gradescope's results."""
    return {"name": f"{task}: {test['name']}", "score": test["points"] if passed else 0.0,
            "max_score": test["points"], "status": "passed" if passed else "failed", "output": output,
            "tags": [task], "visibility": "visible" if test["visibility"] == "visible" else "after_published"}


class ResultsFile:
    """Gradescope's ``results.json``, rewritten after every task, so a file is there whatever happens next.

    Tasks not graded yet appear as failed with ``pending``'s reason; the grader writes the final
    file itself once every student process has ended, over anything else written there.
    """

    def __init__(self, path: str | None, tasks: dict):
        self.path, self.tasks = path, tasks
        self.graded: dict[str, list[dict]] = {}
        self.output: list[str] = []

    STOPPED = "not graded: the grader stopped before this task"

    def results(self, pending: str = STOPPED) -> dict:
        """The results dict: graded tasks as graded, the others failed with ``pending``."""
        tests = []
        for task, info in self.tasks.items():
            tests += self.graded.get(task) or [_test_entry(task, t, False, pending) for t in info["tests"]]
        results: dict = {"score": sum(t["score"] for t in tests), "tests": tests}
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
    without: tuple[str, ...] = (),
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
    the results' output says so.
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
    if not os.path.isdir(student_dir):
        raise HomeworkError(f"grade: no submission folder at {student_dir}")
    package_root = find_package(student_dir)
    if package_root is None:
        found = sorted(untrusted.text(name, 80) for name in itertools.islice(os.listdir(student_dir), 1000))
        listed = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "") if found else "nothing"
        raise HomeworkError(
            f"grade: no tinyattn folder in the submission (found: {listed}); hand in the whole tinyattn "
            "folder of your student copy, not single files"
        )
    log: list[str] = []
    table: list[tuple[str, int, int, float, float]] = []
    try:
        marked = os.path.join(autograder_dir, "marked", "tinyattn")
        files, regions, _, chosen = load(list(data["tasks"]), marked if os.path.isdir(marked) else PACKAGE_DIR)
        tests_dir = os.path.join(autograder_dir, "tests")
        reference = Reference(tests_dir if os.path.isfile(os.path.join(tests_dir, "probes.py")) else TESTS_DIR)
        iso = sandbox.isolation(private, adopt_orphans=adopt_orphans, without=without)
        log.append(iso.note or f"the student's code runs as {sandbox.STUDENT_USER}, behind every fence")
        log += iso.fences.remarks if iso.fences else []
        if iso.note:
            sheet.output.insert(0, iso.note)
        base: int | str = secrets.token_hex(16) if seed is None else seed
        log.append(f"the probes' seeds come from {base} (grade(..., seed={base!r}) replays them)")
        reading = read_submission(package_root, files, regions, set(chosen), tuple(data.get("handed_out", ())))
        if reading.outside:
            sheet.output.append("Not graded (edits outside the task regions):\n" + "\n".join(reading.outside))
        limits, redact = sandbox.Limits(seconds=timeout), _redactor(files, regions, tuple(reference.hidden_lines()))
        for task, info in data["tasks"].items():
            given = package_for(task, regions, reading)

            def write(dest: str, given: dict = given) -> dict:
                return write_package(files, regions, dest, blank=set(), given=given)

            task_tests = [GradedTest(**t) for t in info["tests"]]
            rule = rules[task]
            refused = [r for region in regions[task] if region.key in reading.code
                       for r in policy.check(reading.code[region.key], rule, (files[region.path], region))]
            if refused:  # the code's first check: it does not run at all
                message = policy.refusal_message(task, rule, refused)
                run = TaskRun(outcomes={g.node_id: Outcome(False, feedback(g, message, "")) for g in task_tests},
                              log=[f"refused by the policy {rule.name}: {message}"])
            else:
                run = run_graded(write, task_tests, reference, seed=task_seed(base, task), limits=limits, iso=iso,
                                 redact=redact, regions=regions, policies={task: rule})
            outcomes = [run.outcomes[g.node_id] for g in task_tests]
            entries = [_test_entry(task, t, o.passed, o.output) for t, o in zip(info["tests"], outcomes)]
            sheet.graded[task] = entries
            sheet.write()
            log += [f"{task}: {line}" for line in run.log]
            earned = sum(e["score"] for e in entries)
            table.append((task, sum(e["status"] == "passed" for e in entries), len(entries), earned, info["points"]))
    except (HomeworkError, MarkerError):
        raise
    except Exception as err:
        reason = f"not graded: the grader failed ({type(err).__name__}); your instructor has the details"
        sheet.write(reason)
        raise GraderFailed(f"the grader failed: {type(err).__name__}: {err}") from err
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


def failed_results(autograder_dir: str, reason: str) -> dict:
    """Gradescope's results when nothing could be graded: every test failed, with the reason."""
    try:
        with open(os.path.join(autograder_dir, "manifest.json"), encoding="utf-8") as f:
            tasks = json.load(f)["tasks"]
    except (OSError, ValueError, KeyError):
        return {"score": 0.0, "output": reason, "tests": []}
    sheet = ResultsFile(None, tasks)
    sheet.output.append(reason)
    return sheet.results(reason)


__all__ = [
    "GraderFailed", "HomeworkError", "assign", "check", "grade", "load", "mistakes_markdown", "regions_by_file",
    "solve", "tasks_markdown",
]
