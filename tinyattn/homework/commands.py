"""The homework commands: ``assign``, ``check``, ``grade``, ``solve``, ``tasks``, ``mistakes``."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Callable

import numpy as np

import tinyattn

from .grading import GradedTest, Outcome, manifest, run_tests, scan_tests
from .markers import MarkerError, Mutant, Region, fill_task, find_regions, package_files, write_package
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


def reference_values(path: str) -> None:
    """Run every probe with the reference package (this process's tinyattn) and save the arrays."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_homework_probes", os.path.join(TESTS_DIR, "probes.py"))
    if spec is None or spec.loader is None:
        raise HomeworkError(f"cannot load the probes from {TESTS_DIR}")
    probes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probes)
    np.savez(path, **probes.compute_all())


def _copy_tests(dest: str, hidden: bool) -> None:
    os.makedirs(dest, exist_ok=True)
    for name in os.listdir(TESTS_DIR):
        if name.endswith((".py", ".ini")) and (hidden or name not in ("check_hidden.py", "probes.py")):
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
    for task, info in data["tasks"].items():
        where = ", ".join(sorted({r.path for r in regions[task]}))
        rows.append(f"| `{task}` | {info['points']:g} | `{where}` | {TASK_INFO.get(task, '')} |")
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

Tests of tasks not in this assignment are skipped. Locally a blank task can make the
tests of another fail (attention needs its heads split); the grader does not: each
task is graded with every other task's code taken from the reference.

**What to hand in:** the `tinyattn` folder, whole (zip it, or upload the folder). Single
files cannot be graded. More tests, hidden from you, grade the same tasks.
"""


def assign(out: str, tasks: list[str] | None = None) -> dict:
    """Write ``out/student``, ``out/autograder``, ``out/manifest.json`` and ``out/gradescope_autograder.zip``."""
    files, regions, tests, chosen = load(tasks)
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
        reference_values(os.path.join(autograder, "tests", "reference_values.npz"))
        license_text = shipped_text("LICENSE")
        for folder in (student, autograder):  # MIT: the license travels with every copy of the source
            with open(os.path.join(folder, "LICENSE"), "w", encoding="utf-8") as f:
                f.write(license_text)
        data = manifest(tests, chosen)
        with open(os.path.join(student, "README_STUDENT.md"), "w", encoding="utf-8") as f:
            f.write(student_readme(data, regions))
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


SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. tinyattn itself comes in
# this zip (source/grader), so only its dependencies are installed: the versions the
# assignment was made with. (numpy 2.x needs Python >= 3.10: pick such a base image.)
set -euo pipefail
pip3 install --no-cache-dir {numpy} {matplotlib} {pytest}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. It grades /autograder/submission, each task
# on its own, and writes /autograder/results/results.json. AUTOGRADER_ROOT replaces
# /autograder (for a local trial run); AUTOGRADER_TIMEOUT is the seconds per task.
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
mkdir -p "$ROOT/results"
PYTHONPATH="$SOURCE/grader" python3 -m tinyattn.homework grade "$ROOT/submission" \\
    --autograder "$SOURCE/autograder" --json "$ROOT/results/results.json" \\
    --gradescope --timeout "${AUTOGRADER_TIMEOUT:-300}"
"""


def gradescope_zip(autograder: str, path: str) -> None:
    """A zip to upload to Gradescope as is: setup.sh, run_autograder, the grader and the autograder folder."""
    script = {"numpy": _pinned("numpy"), "matplotlib": _pinned("matplotlib"), "pytest": _pinned("pytest")}
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
       identical to the reference, so T earns the full points check 1 showed.
    ``progress(done, total, what)`` is called as each of the test runs ends (``homework check``
    prints it). Returns ``(ok, table)``.
    """
    files, regions, tests, chosen = load(tasks)
    graded = [t for t in tests if t.task in chosen]
    rows: list[tuple[str, str, str, bool]] = []  # (check, subject, detail, ok)
    with tempfile.TemporaryDirectory() as tmp:
        reference = os.path.join(tmp, "reference_values.npz")
        reference_values(reference)
        # (label, subject, blank set, mutant, mutant path, tests, expectation)
        jobs: list[tuple[str, str, set[str], Mutant | None, str | None, list[GradedTest], str]] = []
        jobs.append(("1. reference passes", "all tasks", set(), None, None, graded, "all pass"))
        for task in chosen:
            own = [t for t in graded if t.task == task]
            jobs.append(("3. blank one task", task, {task}, None, None, own, "all fail"))
            for region in regions[task]:
                for planted in region.mutants:
                    subject = f"{task}: {region.path}:{planted.line}"
                    jobs.append(("4. mistake caught", subject, set(), planted, region.path, own, "some fail"))

        # Write every variant first, in this thread: ast.parse is not safe to call from several threads.
        roots = []
        for index, (_, _, blank, mutant, mutant_path, _, _) in enumerate(jobs):
            roots.append(os.path.join(tmp, f"variant{index}"))
            write_package(files, regions, roots[-1], blank=blank, mutant=mutant, mutant_path=mutant_path)

        def run(index: int) -> tuple[tuple[str, str, str, bool], dict[str, Outcome]]:
            label, subject, _, mutant, _, job_tests, expect = jobs[index]
            outcomes = run_tests(roots[index], TESTS_DIR, job_tests, reference_values=reference, timeout=timeout)
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
    width = max(len(r[1]) for r in rows)
    lines = [f"{'check':<24} {'subject':<{width}}  {'result':<6} detail", "-" * (width + 60)]
    for label, subject, detail, ok in rows:
        lines.append(f"{label:<24} {subject:<{width}}  {'ok' if ok else 'HOLE':<6} {detail}")
    holes = sum(not r[3] for r in rows)
    lines.append(f"\n{len(rows)} checks, {holes} hole(s)")
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


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def mistakes_markdown() -> str:
    """The "Common mistakes" table of docs/teaching.md, from ``mistakes.py``."""
    from .mistakes import MISTAKES

    lines = ["| task | instead of | a student writes | why it is wrong |", "| --- | --- | --- | --- |"]
    for m in MISTAKES:
        right = m.replaces.split("  #")[0]  # the shape comment is not part of the answer
        lines.append(f"| `{m.task}` | `{right}` | `{m.wrong}` | {m.why} |")
    return "\n".join(lines)


def grade(
    student_dir: str, autograder_dir: str, json_path: str | None = None, timeout: float = 300.0
) -> tuple[dict, str]:
    """Grade each task of a submission on its own; return Gradescope's results dict and a table.

    ``student_dir`` holds the ``tinyattn`` folder (directly or up to three levels in). Each task
    is graded against the autograder's marked source with the student's code in that task's
    regions only (``submission.py``), so a blank or broken task costs only its own points.
    """
    manifest_path = os.path.join(autograder_dir, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise HomeworkError(
            f"grade: {autograder_dir} is not an autograder folder (no manifest.json; `assign` makes one)"
        )
    with open(manifest_path, encoding="utf-8") as f:
        data = json.load(f)
    if not os.path.isdir(student_dir):
        raise HomeworkError(f"grade: no submission folder at {student_dir}")
    package_root = find_package(student_dir)
    if package_root is None:
        found = sorted(os.listdir(student_dir))
        listed = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "") if found else "nothing"
        raise HomeworkError(
            f"grade: no tinyattn folder in the submission (found: {listed}); hand in the whole tinyattn "
            "folder of your student copy, not single files"
        )
    marked = os.path.join(autograder_dir, "marked", "tinyattn")
    files, regions, _, chosen = load(list(data["tasks"]), marked if os.path.isdir(marked) else PACKAGE_DIR)
    tests_dir = os.path.join(autograder_dir, "tests")
    reference = os.path.join(tests_dir, "reference_values.npz")
    results_tests, table = [], []
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        reading = read_submission(package_root, files, regions, set(chosen))
        roots = _task_packages(files, regions, reading, tmp, chosen)
        for task, info in data["tasks"].items():
            task_tests = [GradedTest(**t) for t in info["tests"]]
            outcomes = run_tests(roots[task], tests_dir, task_tests, timeout=timeout, reference_values=reference)
            earned = 0.0
            passed = 0
            for t in task_tests:
                o = outcomes[t.node_id]
                score = t.points if o.passed else 0.0
                earned += score
                passed += o.passed
                results_tests.append({
                    "name": f"{task}: {t.name}",
                    "score": score,
                    "max_score": t.points,
                    "status": "passed" if o.passed else "failed",
                    "output": o.output,
                    "tags": [task],
                    "visibility": "visible" if t.visibility == "visible" else "after_published",
                })
            total += earned
            table.append((task, passed, len(task_tests), earned, info["points"]))
    results = {"score": total, "tests": results_tests}
    if reading.outside:
        results["output"] = "Not graded (edits outside the task regions):\n" + "\n".join(reading.outside)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    width = max([len("task")] + [len(r[0]) for r in table])
    lines = [f"{'task':<{width}}  passed  points", "-" * (width + 18)]
    for task, passed, n, earned, possible in table:
        lines.append(f"{task:<{width}}  {passed:>2}/{n:<3}  {earned:g}/{possible:g}")
    lines.append(f"{'total':<{width}}          {total:g}/{sum(r[4] for r in table):g}")
    lines += [f"note: {line}" for line in reading.outside]
    lines += [f"note: extra file in the submission (not read): {name}" for name in reading.extra]
    return results, "\n".join(lines)


def failed_results(autograder_dir: str, reason: str) -> dict:
    """Gradescope's results when nothing could be graded: every test failed, with the reason."""
    results: dict = {"score": 0.0, "output": reason, "tests": []}
    try:
        with open(os.path.join(autograder_dir, "manifest.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return results
    for task, info in data["tasks"].items():
        for t in info["tests"]:
            results["tests"].append({
                "name": f"{task}: {t['name']}", "score": 0.0, "max_score": t["points"], "status": "failed",
                "output": reason, "tags": [task],
                "visibility": "visible" if t["visibility"] == "visible" else "after_published",
            })
    return results


__all__ = ["HomeworkError", "assign", "check", "grade", "load", "mistakes_markdown", "regions_by_file", "solve"]
