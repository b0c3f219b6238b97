"""Which probes grade which task, running them in the student's child, judging them here, and feedback.

Graded tests are the probes of ``task_tests/probes.py``, tied to tasks by a marker,
``@task(id="softmax_backward", points=2)``, read from the source (``ast``), so the manifest
is known before anything runs. Grading one task (``run_graded``) runs its probes in a child
(``sandbox.py``) that sends back arrays only; the same probes run here on the reference,
and ``task_tests/judges.py`` decides each test in this process. The public tests a student
runs at home (``check_tasks.py``, pytest) are run by ``run_tests``, for ``check`` only.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Callable

from . import policy, sandbox
from .course import HARNESS, notebook_import
from .markers import Region
from .policy import Policy

PROBES_FILE = "probes.py"


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
        """The test's id, e.g. ``probes.py::test_softmax_gradients``."""
        return f"{self.file}::{self.name}"


def _task_marker(decorator: ast.expr) -> tuple[str, float, bool] | None:
    """``(id, points, hidden)`` from ``@task(id=..., points=..., hidden=...)`` (or ``@pytest.mark.task``)."""
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "task":
        return None
    kwargs = {k.arg: k.value for k in decorator.keywords}
    if "id" not in kwargs or not isinstance(kwargs["id"], ast.Constant):
        raise ValueError(f"task marker at line {decorator.lineno} needs id=\"...\"")
    points = kwargs.get("points")
    value = points.value if isinstance(points, ast.Constant) else 1
    if not isinstance(value, (int, float)):
        raise ValueError(f"task marker at line {decorator.lineno}: points must be a number, got {value!r}")
    hidden = kwargs.get("hidden")
    return str(kwargs["id"].value), float(value), isinstance(hidden, ast.Constant) and hidden.value is True


def scan_tests(tests_dir: str, pattern: str = PROBES_FILE) -> list[GradedTest]:
    """Every ``test_*`` function with a task marker in ``tests_dir/probes.py`` (the graded probes), or in
    the files ``check_*.py`` when ``pattern="check_*.py"`` (the public pytest tests)."""
    found = []
    for name in sorted(os.listdir(tests_dir)):
        wanted = name.startswith("check_") and name.endswith(".py") if pattern == "check_*.py" else name == pattern
        if not wanted:
            continue
        with open(os.path.join(tests_dir, name), encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=name)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for dec in node.decorator_list:
                    marker = _task_marker(dec)
                    if marker:
                        visibility = "hidden" if marker[2] else "visible"
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
    """How one test ended: passed, or failed with a share of its points (``fraction``: the outputs it got right)."""

    passed: bool
    output: str
    fraction: float = 0.0

    def __post_init__(self) -> None:
        if self.passed:
            self.fraction = 1.0


def run_tests(
    package_root: str,
    tests_dir: str,
    tests: list[GradedTest],
    *,
    timeout: float = 600.0,
) -> dict[str, Outcome]:
    """Run the public pytest ``tests`` against the ``tinyattn`` in ``package_root``; one that did not run failed.

    Used by ``check`` on the instructor's own packages; grading never runs pytest."""
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


def load_module(tests_dir: str, name: str) -> ModuleType:
    """``tests_dir/name.py`` as a module of this process (the probes on the reference, or the judges)."""
    spec = importlib.util.spec_from_file_location(f"_homework_{name}", os.path.join(tests_dir, name + ".py"))
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"cannot load {name}.py from {tests_dir}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Reference:
    """The reference's result of each probe, per seed, computed in this process by its own tinyattn.

    ``source_root``: where the course's marked files are (their regions hold the reference); the probes import
    them from there. A course's tests without a ``judges.py`` are judged by the library's."""

    def __init__(self, tests_dir: str, source_root: str | None = None):
        self.tests_dir = tests_dir
        if source_root is not None:
            if source_root not in sys.path:  # (after this process's own: the library's tinyattn stays the one imported)
                sys.path.append(source_root)
            notebook_import().install(source_root)  # (a course's notebook, imported as a module)
        if "probing" not in sys.modules:  # what the probes are written with (``from probing import task``)
            sys.modules["probing"] = load_module(HARNESS, "probing")
        self.probes = load_module(tests_dir, "probes")
        own = os.path.isfile(os.path.join(tests_dir, "judges.py"))
        self.judges = load_module(tests_dir if own else HARNESS, "judges")
        self._cache: dict[tuple[str, int], dict] = {}
        with open(os.path.join(tests_dir, PROBES_FILE), encoding="utf-8") as f:
            self._lines = f.read().split("\n")
        self._spans: dict[str, tuple[int, int, bool]] = {}  # graded probe -> (first line, end, hidden)
        for node in ast.parse("\n".join(self._lines)).body:  # (here, once: ast.parse is not thread-safe)
            if isinstance(node, ast.FunctionDef):
                marker = next((m for m in map(_task_marker, node.decorator_list) if m), None)
                if marker is not None:
                    first = min(d.lineno for d in node.decorator_list) - 1
                    self._spans[node.name] = (first, node.end_lineno or node.lineno, marker[2])

    def probes_for(self, tests: list[str]) -> str:
        """``probes.py`` with only ``tests``'s probes: the child grading one task sees no other task's."""
        dropped = sorted((a, b) for name, (a, b, _) in self._spans.items() if name not in tests)
        keep = [line for i, line in enumerate(self._lines) if not any(a <= i < b for a, b in dropped)]
        return "\n".join(keep)

    def hidden_lines(self) -> list[str]:
        """The lines of the hidden probes' bodies, which feedback must never show."""
        return [self._lines[i].strip() for a, b, hidden in self._spans.values() if hidden for i in range(a, b)]

    def values(self, test: str, seed: int) -> dict:
        """``{name: array}`` the reference's ``test`` returns for ``seed``."""
        if (test, seed) not in self._cache:
            import numpy as np

            result = getattr(self.probes, test)(seed)
            self._cache[test, seed] = {k: np.asarray(v) for k, v in result.items()}
        return self._cache[test, seed]


@dataclass
class TaskRun:
    """One task's grading: each test's outcome, and what the instructor should know."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)


Spans = dict[tuple[str, int], tuple[int, int]]  # a region's key -> its first and last line in the written package


def watch_requests(tests: list[GradedTest], spans: Spans, package: str, regions: dict[str, list[Region]],
                   policies: dict[str, Policy]) -> dict[str, dict]:
    """The run-time half of each test's task policy (``task_tests/runner.py``): the task's lines in the written
    package and the calls into the package they may make; tests whose policy allows any call are not watched."""
    requests = {}
    for t in tests:
        policy = policies.get(t.task)
        if policy is None or policy.calls is None:
            continue
        files: dict[str, list[list[int]]] = {}
        for r in regions.get(t.task, []):
            if r.key in spans:
                files.setdefault(os.path.join(package, r.path), []).append(list(spans[r.key]))
        requests[t.name] = {"files": files, "calls": list(policy.calls)}
    return requests


def run_graded(
    write: Callable[[str], Spans | None],
    tests: list[GradedTest],
    reference: Reference,
    *,
    seed: int,
    limits: sandbox.Limits,
    iso: sandbox.Isolation,
    redact: Callable[[str], str] = lambda text: text,
    regions: dict[str, list[Region]] | None = None,
    policies: dict[str, Policy] | None = None,
) -> TaskRun:
    """Grade ``tests`` on the package ``write(folder)`` puts in a fresh folder: probes in a child, verdicts here.

    ``write`` returns where the regions are in what it wrote (``markers.write_package``'s spans); with
    ``regions`` and ``policies``, the child watches the calls each test's task code makes at run time."""
    rules = policies or {}
    if any(not rules[t.task].numerical for t in tests if t.task in rules):
        limits = dataclasses.replace(limits, cpu=policy.DERIVED_CPU)
    work = sandbox.make_workdir([os.path.join(HARNESS, "runner.py"), os.path.join(HARNESS, "probing.py")], iso)
    try:
        with open(os.path.join(work.harness, PROBES_FILE), "w", encoding="utf-8") as f:
            f.write(reference.probes_for([t.name for t in tests]))
        spans = write(work.package)
        sandbox.seal(work.package)
        sandbox.seal(work.harness)
        watch = watch_requests(tests, spans or {}, work.package, regions or {}, policies or {})
        child = sandbox.run_child(work, [t.name for t in tests], seed, limits, iso, watch=watch)
    finally:
        try:  # (a cleanup that fails is reported, never raised: it must cost no other task anything)
            left = sandbox.remove_workdir(work)
            left = f"the task's folder is not all removed: {left}" if left else ""
        except Exception as err:  # noqa: BLE001
            left = f"removing the task's folder failed: {type(err).__name__}: {err}"
    run = TaskRun()
    for problem in child.cleanup + ([left] if left else []):
        run.log.append(f"cleanup: {problem}")
    if child.ended:
        run.log.append(f"the student's process {child.ended}")
    if child.malformed:
        run.log.append(f"{child.malformed} malformed line(s) on the results channel (ignored)")
    if child.forged:
        run.log.append(f"{child.forged} test(s) had more than one result on the results channel: the task's code "
                       "wrote the others, and none of them counts")
    if child.leftovers:
        run.log.append(f"killed {child.leftovers} process(es) the student's code left running")
    if child.removed:
        run.log.append(f"deleted {child.removed} file(s) or IPC object(s) the student's code left in shared places")
    if child.output.strip():
        run.log.append("its output (for the instructor only):\n" + child.output.rstrip())
    errors = {name: message["error"] for name, message in child.messages.items() if "error" in message}
    void = {task: policy.voided(task, rules[task], {t.name: errors[t.name] for t in tests
                                                    if t.task == task and t.name in errors}, child.over_cpu)
            for task in {t.task for t in tests} if task in rules}
    for t in tests:
        message = child.messages.get(t.name)
        if void.get(t.task):  # the task's code did what a mechanism stops, in one probe: none of its tests counts
            run.outcomes[t.node_id] = Outcome(False, feedback(t, void[t.task], ""))
            if message is not None and "error" in message:
                run.log.append(f"{t.name}: {message['error']['type']}: {message['error']['message']}")
        elif message is None:
            why = child.ended or "ended without sending a result"
            run.outcomes[t.node_id] = Outcome(False, feedback(t, f"did not run: the process {why}", ""))
        elif "error" in message:
            run.outcomes[t.node_id] = Outcome(False, feedback(t, *excerpt(message["error"], redact)))
            run.log.append(f"{t.name}: {message['error']['type']}: {message['error']['message']}")
        else:
            # (the reference failing is the grader's failure, not the test's: it raises out of here)
            want = reference.values(t.name, seed)
            fraction, wrong = judged(t.name, message["arrays"], want, reference.judges, rules.get(t.task))
            if not wrong:
                run.outcomes[t.node_id] = Outcome(True, "")
            else:
                notes = [redact(note) for note in message.get("notes", [])]  # (what a large input raised)
                said = "; ".join([wrong, *notes]) + f" ({fraction:.0%} of its outputs are right)"
                run.outcomes[t.node_id] = Outcome(False, feedback(t, said, ""), fraction)
                run.log.append(f"{t.name}: failed: {said}")
    run.log += [reason for reason in void.values() if reason]
    return run


def judged(test: str, got: dict, want: dict, judges: ModuleType, rule: Policy | None) -> tuple[float, str]:
    """The share of ``test``'s outputs the student's arrays ``got`` have right, and what is wrong ("" if nothing).

    First the properties the test's name promises, on the student's arrays alone (``judges.judge`` with nothing
    to compare): a result without them earns nothing. Then each output of the reference on its own, at the
    judges' tolerance and, under a policy that forbids differentiating numerically, at derived code's precision
    (``policy.imprecise``): an answer with dQ right and dK wrong earns dQ's share."""
    try:
        judges.judge(test, got, {})
    except judges.Failed as failed:
        return 0.0, str(failed)
    except Exception as err:  # noqa: BLE001 - arrays no property expected (forged, say): failed, never a crash
        return 0.0, f"the result could not be judged ({type(err).__name__})"
    wrong = []
    for name, expected in want.items():
        try:
            judges.matches_reference({name: got[name]} if name in got else {}, {name: expected})
            far = policy.imprecise(rule, name, got[name], expected) if rule is not None else ""
        except judges.Failed as failed:
            far = str(failed)
        except Exception as err:  # noqa: BLE001
            far = f"{name}: could not be judged ({type(err).__name__})"
        if far:
            wrong.append(far)
    right = len(want) - len(wrong)
    return (right / len(want) if want else 1.0), "; ".join(wrong)


def excerpt(error: dict, redact: Callable[[str], str], limit: int = 300) -> tuple[str, str]:
    """A student's exception as they may see it: its type, its message cut to ``limit`` characters and
    cleaned of reference code (``redact``), and where it was raised (files and lines, no source text)."""
    text = redact(error["message"].strip())
    if len(text) > limit:
        text = text[:limit] + f" [... {len(text) - limit} more characters]"

    def short(part: object, most: int = 80) -> str:  # the child sent these too: as untrusted as the message
        part = redact(str(part))
        return part if len(part) <= most else part[:most] + "..."

    where = "\n".join(f"  {short(path)}, line {line}, in {short(name)}" for path, line, name in error["frames"])
    return f"your code raised {short(error['type'])}: {text}", where


def feedback(test: GradedTest, message: str, trace: str, max_lines: int = 40) -> str:
    """What a student reads: the task, what the test checks, the error, then the end of the traceback."""
    lines = [f"Task {test.task}: {test.purpose}", message.strip() or "failed"]
    trace_lines = [line for line in trace.splitlines() if line.strip()]
    if trace_lines:
        lines += ["", f"Where (last {min(max_lines, len(trace_lines))} lines):"] + trace_lines[-max_lines:]
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
