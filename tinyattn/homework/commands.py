"""The homework commands: ``assign``, ``check``, ``grade``, ``solve``, ``tasks``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import tinyattn

from .grading import GradedTest, Outcome, manifest, run_tests, scan_tests
from .markers import MarkerError, Region, fill_task, find_regions, package_files, write_package

PACKAGE_DIR = os.path.dirname(os.path.abspath(tinyattn.__file__))
TESTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "task_tests")


Loaded = tuple[dict[str, list[str]], dict[str, list[Region]], list[GradedTest], list[str]]


def load(tasks: list[str] | None = None) -> Loaded:
    """The reference files, their task regions, the graded tests, and the chosen task ids (validated)."""
    files = package_files(PACKAGE_DIR)
    regions = find_regions(files)
    tests = scan_tests(TESTS_DIR)
    chosen = list(regions) if not tasks else tasks
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
    probes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probes)
    np.savez(path, **probes.compute_all())


def _copy_tests(dest: str, hidden: bool) -> None:
    os.makedirs(dest, exist_ok=True)
    for name in os.listdir(TESTS_DIR):
        if name.endswith((".py", ".ini")) and (hidden or name not in ("test_hidden.py", "probes.py")):
            shutil.copy(os.path.join(TESTS_DIR, name), os.path.join(dest, name))


STUDENT_README = """# tinyattn homework

Your tasks: {tasks}.

Each task is a `# TODO(task <id>)` in the `tinyattn/` package, followed by
`raise NotImplementedError`. Replace both with your code. Find them with:

    grep -rn "TODO(task" tinyattn

Check your work with the public tests (each names its task and points):

    python -m pytest tests

More tests, hidden from you, grade the same tasks against the reference implementation.
"""


def assign(out: str, tasks: list[str] | None = None) -> dict:
    """Write ``out/student``, ``out/autograder`` and ``out/manifest.json``; return the manifest."""
    files, regions, tests, chosen = load(tasks)
    if os.path.exists(out) and os.listdir(out):
        raise MarkerError(f"assign: {out} exists and is not empty")
    with tempfile.TemporaryDirectory() as tmp:  # write everything first, so a refusal leaves nothing behind
        student, autograder = os.path.join(tmp, "student"), os.path.join(tmp, "autograder")
        write_package(files, regions, student, blank=set(chosen))
        write_package(files, regions, os.path.join(autograder, "reference"), blank=set())
        _copy_tests(os.path.join(student, "tests"), hidden=False)
        _copy_tests(os.path.join(autograder, "tests"), hidden=True)
        reference_values(os.path.join(autograder, "tests", "reference_values.npz"))
        with open(os.path.join(student, "README.md"), "w", encoding="utf-8") as f:
            f.write(STUDENT_README.format(tasks=", ".join(chosen)))
        data = manifest(tests, chosen)
        for path in (os.path.join(tmp, "manifest.json"), os.path.join(autograder, "manifest.json")):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
        os.makedirs(out, exist_ok=True)
        for name in os.listdir(tmp):
            shutil.move(os.path.join(tmp, name), os.path.join(out, name))
    return data


def solve(student_dir: str, tasks: list[str]) -> None:
    """Put the reference code of ``tasks`` back into a student copy (e.g. to release solutions)."""
    files, regions, _, chosen = load(tasks)
    for task in chosen:
        for region in regions[task]:
            if not fill_task(os.path.join(student_dir, region.path), region, files[region.path]):
                raise MarkerError(f"solve: no stub for task {task} in {region.path}")


def check(tasks: list[str] | None = None, timeout: float = 600.0, workers: int = 2) -> tuple[bool, str]:
    """The self-check: are the reference, the blanks and the mutants each caught as they should be?

    1. the reference passes every test;
    2. the student copy (all chosen tasks blanked) fails every graded test;
    3. blanking each task alone fails at least one of its own tests;
    4. every common mistake (``mistakes.py``), planted alone, fails at least one test of its task.
    Returns ``(ok, table)``.
    """
    files, regions, tests, chosen = load(tasks)
    graded = [t for t in tests if t.task in chosen]
    rows: list[tuple[str, str, str, bool]] = []  # (check, subject, detail, ok)
    with tempfile.TemporaryDirectory() as tmp:
        reference = os.path.join(tmp, "reference_values.npz")
        reference_values(reference)
        jobs = []  # (label, subject, blank set, mutant, tests, expectation)
        jobs.append(("1. reference passes", "all tasks", set(), None, None, graded, "all pass"))
        blanked = f"{len(chosen)} tasks blanked"
        jobs.append(("2. student copy fails", blanked, set(chosen), None, None, graded, "all fail"))
        for task in chosen:
            own = [t for t in graded if t.task == task]
            jobs.append(("3. blank one task", task, {task}, None, None, own, "some fail"))
            for region in regions[task]:
                for mutant in region.mutants:
                    subject = f"{task}: {region.path}:{mutant.line}"
                    jobs.append(("4. mistake caught", subject, set(), mutant, region.path, own, "some fail"))

        # Write every variant first, in this thread: ast.parse is not safe to call from several threads.
        roots = []
        for index, (_, _, blank, mutant, mutant_path, _, _) in enumerate(jobs):
            roots.append(os.path.join(tmp, f"variant{index}"))
            write_package(files, regions, roots[-1], blank=blank, mutant=mutant, mutant_path=mutant_path)

        def run(index: int) -> tuple[str, str, str, bool]:
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
            return label, subject, detail, ok

        with ThreadPoolExecutor(max_workers=workers) as pool:  # the test runs are subprocesses
            rows = list(pool.map(run, range(len(jobs))))
    width = max(len(r[1]) for r in rows)
    lines = [f"{'check':<24} {'subject':<{width}}  {'result':<6} detail", "-" * (width + 60)]
    for label, subject, detail, ok in rows:
        lines.append(f"{label:<24} {subject:<{width}}  {'ok' if ok else 'HOLE':<6} {detail}")
    holes = sum(not r[3] for r in rows)
    lines.append(f"\n{len(rows)} checks, {holes} hole(s)")
    return holes == 0, "\n".join(lines)


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
    """Grade ``student_dir/tinyattn`` with the autograder's tests; return Gradescope's results dict and a table."""
    with open(os.path.join(autograder_dir, "manifest.json"), encoding="utf-8") as f:
        data = json.load(f)
    tests_dir = os.path.join(autograder_dir, "tests")
    reference = os.path.join(tests_dir, "reference_values.npz")
    student_root = os.path.abspath(student_dir)
    results_tests, table = [], []
    total = 0.0
    for task, info in data["tasks"].items():
        task_tests = [GradedTest(**t) for t in info["tests"]]
        if not os.path.isdir(os.path.join(student_root, "tinyattn")):
            outcomes = {t.node_id: Outcome(False, f"no tinyattn package in {student_dir}") for t in task_tests}
        else:  # one run per task, so a hang or a crash costs only that task
            outcomes = run_tests(student_root, tests_dir, task_tests, timeout=timeout, reference_values=reference)
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
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    width = max([len("task")] + [len(r[0]) for r in table])
    lines = [f"{'task':<{width}}  passed  points", "-" * (width + 18)]
    for task, passed, n, earned, possible in table:
        lines.append(f"{task:<{width}}  {passed:>2}/{n:<3}  {earned:g}/{possible:g}")
    lines.append(f"{'total':<{width}}          {total:g}/{sum(r[4] for r in table):g}")
    return results, "\n".join(lines)
