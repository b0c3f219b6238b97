"""Which tests grade which task, running them against a copy of the package, and the results files.

Tests are tied to tasks by a marker, ``@pytest.mark.task(id="softmax_backward", points=2)``,
read from the test files' source (``ast``), so the manifest is known before any test runs.
Each run is a separate ``python -m pytest`` process with ``PYTHONPATH`` pointing at the
package under test, a time limit, and a JUnit XML report to read the outcomes from.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass

HIDDEN_FILES = {"check_hidden.py"}  # shipped to the autograder only


@dataclass
class GradedTest:
    """One test function: where it is, which task it grades, how many points."""

    file: str
    name: str
    task: str
    points: float
    visibility: str  # "visible" (students have it) or "hidden"
    purpose: str = ""  # the first line of the test's docstring, else its name in words

    @property
    def node_id(self) -> str:
        """pytest's id, e.g. ``check_tasks.py::test_softmax_gradients``."""
        return f"{self.file}::{self.name}"


def _task_marker(decorator: ast.expr) -> tuple[str, float] | None:
    """``(id, points)`` from ``@pytest.mark.task(id=..., points=...)``, else None."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
        return None
    if decorator.func.attr != "task":
        return None
    kwargs = {k.arg: k.value for k in decorator.keywords}
    if "id" not in kwargs or not isinstance(kwargs["id"], ast.Constant):
        raise ValueError(f"task marker at line {decorator.lineno} needs id=\"...\"")
    points = kwargs.get("points")
    value = points.value if isinstance(points, ast.Constant) else 1
    if not isinstance(value, (int, float)):
        raise ValueError(f"task marker at line {decorator.lineno}: points must be a number, got {value!r}")
    return str(kwargs["id"].value), float(value)


def scan_tests(tests_dir: str) -> list[GradedTest]:
    """Every ``test_*`` function in ``tests_dir/check_*.py`` with a task marker."""
    found = []
    for name in sorted(os.listdir(tests_dir)):
        if not (name.startswith("check_") and name.endswith(".py")):
            continue
        with open(os.path.join(tests_dir, name), encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=name)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for dec in node.decorator_list:
                    marker = _task_marker(dec)
                    if marker:
                        visibility = "hidden" if name in HIDDEN_FILES else "visible"
                        doc = (ast.get_docstring(node) or "").strip().split("\n")[0]
                        purpose = doc or node.name[len("test_"):].replace("_", " ")
                        found.append(GradedTest(name, node.name, marker[0], marker[1], visibility, purpose))
    return found


def manifest(tests: list[GradedTest], tasks: list[str]) -> dict:
    """``{"tasks": {id: {"points": total, "tests": [...]}}}`` for the chosen tasks."""
    out: dict = {"tasks": {}}
    for task in tasks:
        chosen = [t for t in tests if t.task == task]
        out["tasks"][task] = {"points": sum(t.points for t in chosen), "tests": [asdict(t) for t in chosen]}
    return out


@dataclass
class Outcome:
    """How one test ended."""

    passed: bool
    output: str


def run_tests(
    package_root: str,
    tests_dir: str,
    tests: list[GradedTest],
    *,
    timeout: float = 600.0,
    reference_values: str | None = None,
) -> dict[str, Outcome]:
    """Run ``tests`` against the ``tinyattn`` found in ``package_root``; a test that did not run failed."""
    if not tests:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the task tests need no plugin; loading them all takes ~0.7 s
        env["PYTHONPATH"] = os.pathsep.join([package_root, tests_dir])
        env["TINYATTN_PACKAGE_ROOT"] = package_root
        env["MPLBACKEND"] = "Agg"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if reference_values:
            env["TINYATTN_REFERENCE_VALUES"] = reference_values
        cmd = [
            sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", "--rootdir", tests_dir,
            "-c", os.path.join(tests_dir, "pytest.ini"), f"--junitxml={report}",
            *[os.path.join(tests_dir, t.file) + "::" + t.name for t in tests],
        ]
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
            log = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            message = f"timed out after {timeout:g} s: an endless loop, or far too slow a solution"
            return {t.node_id: Outcome(False, feedback(t, message, "")) for t in tests}
        results = _read_junit(report) if os.path.exists(report) else {}
    outcomes = {}
    for t in tests:
        key = (t.file[:-3], t.name)
        if key in results:
            passed, message, trace = results[key]
            outcomes[t.node_id] = Outcome(passed, "" if passed else feedback(t, message, trace))
        else:
            outcomes[t.node_id] = Outcome(False, feedback(t, f"did not run: {_first_error(log)}", log))
    return outcomes


def _first_error(log: str) -> str:
    """The error that stopped a test run, with the student's file and line when the log names them."""
    lines = log.splitlines()
    error = next((x.replace("INTERNALERROR>", "").strip() for x in reversed(lines) if "Error" in x), "see below")
    places = re.findall(r'File "[^"]*?(tinyattn/[^"]+)", line (\d+)', log)
    return f"{error} (in {places[-1][0]}, line {places[-1][1]})" if places else error


def feedback(test: GradedTest, message: str, trace: str, max_lines: int = 40) -> str:
    """What a student reads: the task, what the test checks, the error, then the end of the traceback."""
    lines = [f"Task {test.task}: {test.purpose}", message.strip() or "failed"]
    trace_lines = [line for line in trace.strip().splitlines() if line.strip()]
    if trace_lines:
        lines += ["", f"Traceback (last {min(max_lines, len(trace_lines))} lines):"] + trace_lines[-max_lines:]
    return "\n".join(lines)


def _read_junit(path: str) -> dict[tuple[str, str], tuple[bool, str, str]]:
    """``(module, test) -> (passed, the error's message, its traceback)`` from pytest's JUnit XML."""
    outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        problems = [c for c in case if c.tag in ("failure", "error", "skipped")]
        message = "\n".join((c.get("message") or "").strip() for c in problems)
        trace = "\n".join(c.text or "" for c in problems)
        outcomes[(module, case.get("name", ""))] = (not problems, message, trace)
    return outcomes
