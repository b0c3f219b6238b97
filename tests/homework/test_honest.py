"""Honest submissions lose no point, and files the grader cannot read cost only their own tasks.

Each submission is graded by the real run_autograder on a fake /autograder, with the student user
working where it can be. An honest answer may be written in any words (a docstring that speaks of
"complexity", comments in Chinese, a non-ASCII name), saved by any editor (a byte-order mark, Windows
line ends, tabs, no final newline), and be slow (an explicit Jacobian per row, about a thousand times
the reference's CPU time on the large probe) while both cores are busy. A file with a NUL byte, or a
region nested deeper than Python's parser goes, costs only its own task; a file flooded with blank
lines is read in time proportional to its size.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import shutil
import subprocess
import textwrap
import time

import pytest

from tinyattn.homework import commands, policy, submission

from . import honest_corpus as corpus
from .gradescope_box import Box, require_isolation, solved_student
from .test_attacks import earned, manifest

TASKS = ["softmax_backward", "log_softmax_backward", "adam_step"]


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    """The three tasks under their default policies (``derive`` for the two backward tasks)."""
    out = tmp_path_factory.mktemp("honest") / "hw"
    commands.assign(str(out), TASKS)
    return str(out)

SOFTMAX = os.path.join("tinyattn", "autograd", "core", "ops", "softmax.py")
ADAM = os.path.join("tinyattn", "optim", "adam.py")
STUB = 'raise NotImplementedError("task softmax_backward")'
LATER_STUB = 'raise NotImplementedError("task log_softmax_backward")'

# softmax's backward, written as an honest student might: its own words, its own helper, its own names
WORDY = '''\
"""The backward of softmax. Its complexity is linear in the row's length: no Jacobian is formed.
(Words such as complex, complexity or imaginary in a docstring are only words.)"""
# 反向传播：dX = Y ⊙ (dY − Σ(dY ⊙ Y))，按行求和
def row_sum(values):
    \t# (a helper of my own, indented with a tab)
    return values.sum(axis=ctx.dim, keepdims=True)
(y,) = ctx.saved_tensors
größe = row_sum(grad_output * y)  # the complex-looking part is just a weighted mean
if grad_output.shape != y.shape:
    raise ValueError("shapes differ: the complexity of broadcasting is not handled here")
return (y * (grad_output - größe),)'''

# log_softmax's backward through an explicit Jacobian per row: right, and slow (about 4.5 s of CPU time on
# the large probe, where the reference takes milliseconds)
JACOBIAN_PER_ROW = '''\
(y,) = ctx.saved_tensors
p = np.exp(y)
dim = ctx.dim % y.ndim
g = np.moveaxis(grad_output, dim, -1)
q = np.moveaxis(p, dim, -1)
flat_g = g.reshape(-1, g.shape[-1])
flat_q = q.reshape(-1, q.shape[-1])
out = np.empty_like(flat_g)
for r in range(flat_g.shape[0]):
    jacobian = np.eye(flat_q.shape[1]) - np.outer(np.ones(flat_q.shape[1]), flat_q[r])
    out[r] = flat_g[r] @ jacobian
return (np.moveaxis(out.reshape(g.shape), -1, dim),)'''


def _fill(text: str, stub: str, code: str) -> str:
    indent = " " * 8
    body = "\n".join(indent + line if line else line for line in code.split("\n"))
    return text.replace(stub, body.lstrip())


def _graded(assignment, tmp_path, edit, timeout=120, without=""):
    """The results and log of grading a submission with adam_step solved and the softmax file edited."""
    venv = require_isolation()
    box = Box(os.path.join(assignment, "gradescope_autograder.zip"), venv)
    try:
        student = solved_student(assignment, str(tmp_path / "work"), ["adam_step"])
        edit(student)
        shutil.copytree(os.path.join(student, "tinyattn"), os.path.join(box.submission, "tinyattn"))
        began = time.monotonic()
        results, log = box.run(timeout=timeout, without=without)
        return results, log, time.monotonic() - began
    finally:
        box.remove()


def _points(assignment):
    return {task: info["points"] for task, info in manifest(assignment)["tasks"].items()}


def test_an_answer_in_any_words_saved_by_any_editor_scores_full_marks(assignment, tmp_path):
    def edit(student):
        path = os.path.join(student, SOFTMAX)
        with open(path, encoding="utf-8") as f:
            text = _fill(f.read(), STUB, WORDY)
        text = "\ufeff" + text.replace("\n", "\r\n").rstrip("\r\n")  # a BOM, Windows line ends, no final newline
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    results, log, _ = _graded(assignment, tmp_path, edit)
    points = _points(assignment)
    assert earned(results, "softmax_backward") == points["softmax_backward"], log[-3000:]
    assert earned(results, "adam_step") == points["adam_step"]
    assert "refused" not in log


def _busy(stop):
    os.setsid()  # (a session of its own, as another user's job: the kernel shares the cores between sessions)
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@pytest.mark.slow  # (about half a minute: the slow answer on busy cores)
@pytest.mark.parametrize("without", ["", "cgroup"], ids=["every fence", "without the task's cgroup"])
def test_a_slow_honest_answer_scores_full_marks_with_both_cores_busy(assignment, tmp_path, without):
    """Four busy processes beside the grading: without its own cgroup, the child gets a third of a core or so."""
    def edit(student):
        path = os.path.join(student, SOFTMAX)
        with open(path, encoding="utf-8") as f:
            text = _fill(f.read(), LATER_STUB, JACOBIAN_PER_ROW)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    stop = multiprocessing.Event()
    load = [multiprocessing.Process(target=_busy, args=(stop,)) for _ in range(2 * (os.cpu_count() or 2))]
    for process in load:
        process.start()
    try:
        results, log, _ = _graded(assignment, tmp_path, edit, timeout=300, without=without)
    finally:
        stop.set()
        for process in load:
            process.join()
    points = _points(assignment)
    assert earned(results, "log_softmax_backward") == points["log_softmax_backward"], log[-3000:]
    assert earned(results, "adam_step") == points["adam_step"]


def test_unreadable_and_costly_files_cost_only_their_own_tasks(assignment, tmp_path):
    """softmax_backward holds a NUL byte, log_softmax_backward a region nested deeper than Python's parser goes
    (both in the same file), and adam.py is flooded to 320 KB with 400 blank lines after every line."""
    def edit(student):
        path = os.path.join(student, SOFTMAX)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = _fill(text, STUB, "(y,) = ctx.saved_tensors  # \0\nreturn (y,)")
        text = _fill(text, LATER_STUB, "z = " + "-" * 200_000 + "1\nreturn (z,)")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        adam = os.path.join(student, ADAM)
        with open(adam, encoding="utf-8") as f:
            lines = f.read().split("\n")
        notes = [f"# note {i}" for i in range(800 - len(lines))]
        with open(adam, "w", encoding="utf-8") as f:
            f.write("\n".join(line + "\n" * 400 for line in lines + notes))
        assert os.path.getsize(adam) > 320_000

    results, log, seconds = _graded(assignment, tmp_path, edit)
    points = _points(assignment)
    assert earned(results, "adam_step") == points["adam_step"], log[-3000:]
    assert earned(results, "softmax_backward") == 0 and earned(results, "log_softmax_backward") == 0
    outputs = {t["tags"][0]: t["output"] for t in results["tests"]}
    assert "code Python cannot read: a NUL byte (line" in outputs["softmax_backward"]
    assert "code nested too deeply for Python's parser" in outputs["log_softmax_backward"]
    assert seconds < 60, f"grading took {seconds:.1f} s"


# -- the honest corpus: ten right answers to every task, in ten styles, each scoring full marks and no flag --------

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                       "course")


def _fill_lines(lines: list[str], task: str, codes: list[str]) -> list[str]:
    """``lines`` with each stub of ``task``, in order, replaced by the next of ``codes`` at the stub's indentation."""
    stub = f'raise NotImplementedError("task {task}")'
    queue = list(codes)
    out = []
    for line in lines:
        if line.strip() == stub and queue:
            indent = line[: len(line) - len(line.lstrip())]
            code = textwrap.dedent(queue.pop(0)).strip("\n")
            out += [indent + part if part.strip() else part for part in code.split("\n")]
        else:
            out.append(line)
    assert not queue, f"{task}: {len(queue)} answer(s) with no stub left"
    return out


def corpus_submission(course_dir: str | None, student: str, k: int) -> str:
    """The student copy ``student`` with answer ``k`` of the corpus in every task, saved in style ``k``'s way;
    returns the folder to hand in (the package, for the shipped course)."""
    course = commands.course_at(course_dir)
    answers = corpus.EXAMPLE if course_dir else corpus.SHIPPED
    _, regions, _, _ = commands.load(list(answers), course)
    by_file: dict[str, dict[str, list[str]]] = {}
    for task, variants in answers.items():
        for region, code in zip(regions[task], variants[k]):
            by_file.setdefault(region.path, {}).setdefault(task, []).append(code)
    for rel, tasks in by_file.items():
        notebook = course.notebooks.get(rel)
        path = os.path.join(student, notebook or rel)
        if notebook:
            _fill_notebook(path, tasks, k)
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for task, codes in tasks.items():
            lines = _fill_lines(lines, task, codes)
        text = "\n".join(lines)
        text = text.replace("\n", "\r\n") if k == corpus.CRLF else text
        text = "\ufeff" + text if k == corpus.BOM else text
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return student if course_dir else os.path.join(student, "tinyattn")


def _fill_notebook(path: str, tasks: dict[str, list[str]], k: int) -> None:
    """The notebook with its task cells filled, saved as editor ``k % 4`` saves it (Jupyter, JupyterLab, Colab, VS
    Code on Windows), with ``%%time`` on the task cell for odd ``k`` and a setup cell of magics for ``k % 3 == 0``."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for task, codes in tasks.items():
            if f'raise NotImplementedError("task {task}")' in source:
                source = "\n".join(_fill_lines(source.split("\n"), task, codes))
                source = "%%time\n" + source if k % 2 else source
        cell["source"] = source.splitlines(keepends=True)
    if k % 3 == 0:
        nb["cells"].insert(0, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                               "source": ["!pip install -q numpy\n", "%matplotlib inline\n", "%load_ext autoreload"]})
    editor = k % 4
    if editor == 1:  # JupyterLab: every source one string, cell ids
        for n, cell in enumerate(nb["cells"]):
            cell["source"] = "".join(cell["source"])
            cell["id"] = f"cell-{n}"
        nb["nbformat_minor"] = 5
    elif editor == 2:  # Colab: its metadata, a cell id in each cell's metadata
        nb["metadata"]["colab"] = {"provenance": []}
        for n, cell in enumerate(nb["cells"]):
            cell.pop("id", None)
            cell["metadata"] = {"id": f"c{n:04d}"}
    text = json.dumps(nb, indent=1)
    if editor == 3:  # VS Code on Windows: CRLF in the file and in the cells
        for cell in nb["cells"]:
            cell["source"] = [line.replace("\n", "\r\n") for line in cell["source"]]
        text = json.dumps(nb, indent=1).replace("\n", "\r\n")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


@pytest.fixture(scope="module")
def corpus_assignments(tmp_path_factory):
    """Every task of the shipped course, and of examples/course, under their courses' policies."""
    made = {}
    for name, course_dir in (("shipped", None), ("example", EXAMPLE)):
        out = tmp_path_factory.mktemp(f"corpus-{name}") / "hw"
        commands.assign(str(out), None, course=commands.course_at(course_dir))
        made[name] = (str(out), course_dir)
    return made


@pytest.mark.parametrize("name", ["shipped", "example"])
def test_no_answer_of_the_honest_corpus_is_flagged(corpus_assignments, tmp_path, name):
    """The policy's check, as ``grade`` runs it, on the code as the grader reads it from each submission."""
    assignment, course_dir = corpus_assignments[name]
    course = commands._assigned_course(os.path.join(assignment, "autograder"),
                                       manifest(assignment))
    files, regions, _, chosen = commands.load(None, course)
    rules = {task: policy.resolve(info.get("policy"), task) for task, info in manifest(assignment)["tasks"].items()}
    answers = corpus.EXAMPLE if course_dir else corpus.SHIPPED
    assert set(answers) == set(chosen) and all(len(v) == 10 for v in answers.values())
    for k in range(10):
        student = str(tmp_path / f"copy{k}")
        shutil.copytree(os.path.join(assignment, "student"), student)
        corpus_submission(course_dir, student, k)
        anchor = commands._anchor(regions, course.notebooks, chosen)
        reading = submission.read_submission(submission.find_package(student, anchor), files, regions, set(chosen),
                                             tuple(manifest(assignment).get("handed_out", ())), course.notebooks)
        assert not reading.outside and not reading.problems, (k, reading.outside, reading.problems)
        for task in chosen:
            for region in regions[task]:
                found = policy.check(reading.code[region.key], rules[task], (files[region.path], region))
                assert not found, (task, corpus.STYLES[k], [(f.line, f.what) for f in found])


@pytest.mark.slow  # (twenty gradings of every task, two at a time: about a minute on two cores)
@pytest.mark.parametrize("name", ["shipped", "example"])
def test_every_answer_of_the_honest_corpus_scores_full_marks_with_both_cores_busy(corpus_assignments, tmp_path,
                                                                                   name):
    """The ten submissions of a course graded as a class: ``grade-all``, one ``grade`` process per core (both
    cores busy with gradings), each grading as run_autograder's, behind every fence."""
    assignment, course_dir = corpus_assignments[name]
    python = os.path.join(require_isolation(), "bin", "python")
    total = sum(info["points"] for info in manifest(assignment)["tasks"].values())
    submissions = tmp_path / "class"
    submissions.mkdir()
    for k in range(10):
        student = str(tmp_path / f"copy{k}")
        shutil.copytree(os.path.join(assignment, "student"), student)
        root = corpus_submission(course_dir, student, k)
        if course_dir:
            shutil.copytree(root, submissions / f"style{k}")
        else:
            shutil.copytree(root, submissions / f"style{k}" / "tinyattn")
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([python, "-m", "tinyattn.homework", "grade-all", str(submissions), "--autograder",
                           os.path.join(assignment, "autograder"), "--csv", str(tmp_path / "grades.csv"),
                           "--workers", "2", "--timeout", "300"], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONPATH": checkout})
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "grades.csv", encoding="utf-8", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    state = json.loads((tmp_path / "grades.csv.state.json").read_text())
    for k in range(10):
        row, kept = rows[f"style{k}"], state[f"style{k}"]
        lost = {t["name"]: t["output"][:300] for t in kept["tests"] if t["status"] != "passed"}
        assert (float(row["total"]), row["status"], row["flags"]) == (total, "graded", ""), (corpus.STYLES[k], lost)
        assert kept["flags"] == [] and "Not graded" not in kept["notes"], (corpus.STYLES[k], kept["notes"])
        assert "isolation reduced" not in kept["notes"], kept["notes"]
