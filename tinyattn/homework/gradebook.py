"""Grading a class: every submission in a folder, each as ``grade`` grades one, into a CSV gradebook.

``grade_all(submissions, autograder, csv_path)`` finds one submission per student in
``submissions`` (a folder, a ``.zip`` or, for a course with one notebook, an ``.ipynb`` each; or Gradescope's
export, whose
``submission_metadata.yml`` names the students), grades each in a ``grade`` process of its own
(so each has every fence ``grade`` has, and a grading that fails costs only its student), up to
one at a time per core, and writes:

* the gradebook, a CSV: ``student``, ``submission``, each task's points, ``total``, ``status``;
* one feedback file per student (``feedback/<student>.md``): each test, its points and, for the
  tests students may see, what failed;
* ``<csv>.state.json``: each submission's fingerprint (a hash of its files and of the
  autograder), so that a run again grades only what is new or changed.

Each worker's student code runs as a user of its own (``tinyattn-student``, ``tinyattn-student1``,
…): the end of one task kills every process of its user, which must not be another grading's. Each
submission is graded from a private copy, and the folder of submissions and the autograder folder are
named to ``grade`` as private: where the student users can read them (a classmate's submission, the
hidden tests), the state and the command's last line say so, as ``grade``'s log does.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, TextIO

from . import sandbox, trees, untrusted

METADATA = "submission_metadata.yml"  # Gradescope's export: which student each submission_<id> folder is
MAX_UNZIPPED = 256 << 20  # bytes a submission's zip may hold, unpacked
MAX_MEMBERS = 10_000


class GradebookError(ValueError):
    """A class that cannot be graded as asked; the message says why, in one line."""


@dataclass
class Entry:
    """One student's submission: who, the file or folder, and its fingerprint."""

    student: str
    path: str
    fingerprint: str = ""


@dataclass
class Graded:
    """One student's grading: the points per task, and why it has none (``status``) when it could not run."""

    student: str
    submission: str
    fingerprint: str
    points: dict[str, float] = field(default_factory=dict)
    status: str = "graded"
    tests: list[dict] = field(default_factory=list)
    output: str = ""


def _gradescope_students(folder: str) -> dict[str, str]:
    """``submission_<id> -> the student`` from Gradescope's ``submission_metadata.yml`` (the first submitter's
    email, else name), read line by line: the file is YAML, and only these two keys are needed."""
    path = os.path.join(folder, METADATA)
    if not os.path.isfile(path):
        return {}
    found: dict[str, dict[str, str]] = {}  # submission -> {"email": ..., "name": ...}, each the first given
    current = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if m := re.match(r"^(submission_\d+):\s*$", line):
                current = m[1]
                found[current] = {}
            elif current and (m := re.match(r"^\s*-?\s*:(email|name):\s*(.+?)\s*$", line)):
                found[current].setdefault(m[1], m[2].strip("'\""))
    return {sub: keys.get("email") or keys["name"] for sub, keys in found.items() if keys}


def find_submissions(folder: str) -> list[Entry]:
    """One ``Entry`` per student: each folder, ``.zip`` or ``.ipynb`` in ``folder`` (hidden files and Gradescope's
    metadata aside), named by Gradescope's metadata when it is there, else by the file's name."""
    if not os.path.isdir(folder):
        raise GradebookError(f"grade-all: no folder of submissions at {folder}")
    named = _gradescope_students(folder)
    entries = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or name == METADATA or os.path.islink(path):
            continue
        if os.path.isdir(path) or name.endswith((".zip", ".ipynb")):
            stem = os.path.splitext(name)[0] if os.path.isfile(path) else name
            entries.append(Entry(named.get(stem, stem), path))
    students = [e.student for e in entries]
    twice = sorted({s for s in students if students.count(s) > 1})
    if twice:
        raise GradebookError(f"grade-all: more than one submission for {', '.join(twice)}")
    if not entries:
        raise GradebookError(f"grade-all: no submission in {folder} (a folder, a .zip or an .ipynb per student)")
    return entries


def fingerprint(path: str, autograder: str) -> str:
    """A hash of a submission's files (names and bytes) and of the autograder's manifest."""
    digest = hashlib.sha256()
    with open(os.path.join(autograder, "manifest.json"), "rb") as f:
        digest.update(f.read())
    if os.path.isfile(path):
        with open(path, "rb") as f:
            digest.update(f.read())
        return digest.hexdigest()
    for rel in trees.files(path, skip=("__pycache__", ".pytest_cache")).files:
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(os.path.join(path, rel), "rb") as f:
                digest.update(f.read())
        except OSError:
            digest.update(b"(unreadable)")
    return digest.hexdigest()


def unpack(zip_path: str, dest: str) -> None:
    """A student's zip into ``dest``: plain files only, every path inside ``dest``, at most ``MAX_UNZIPPED``
    bytes and ``MAX_MEMBERS`` entries; ``GradebookError`` otherwise."""
    try:
        with zipfile.ZipFile(zip_path) as z:
            members = z.infolist()
            if len(members) > MAX_MEMBERS or sum(m.file_size for m in members) > MAX_UNZIPPED:
                raise GradebookError(f"the zip holds more than {MAX_MEMBERS} files or {MAX_UNZIPPED >> 20} MiB")
            root = os.path.realpath(dest)
            for m in members:
                target = os.path.realpath(os.path.join(dest, m.filename))
                if not (target == root or target.startswith(root + os.sep)):
                    raise GradebookError(f"the zip names a path outside its folder: {untrusted.text(m.filename, 80)}")
                if (m.external_attr >> 16) & 0o170000 == 0o120000:
                    raise GradebookError(f"the zip holds a symbolic link: {untrusted.text(m.filename, 80)}")
            z.extractall(dest)
    except zipfile.BadZipFile as err:
        raise GradebookError(f"not a zip file ({err})") from None


def _copy_plain_files(source: str, dest: str) -> None:
    """A student's folder into ``dest``: its files and links (nothing else), at most ``MAX_MEMBERS`` entries and
    ``MAX_UNZIPPED`` bytes, as for a zip; ``GradebookError`` otherwise."""
    listing = trees.files(source, skip=("__pycache__", ".pytest_cache"), max_entries=MAX_MEMBERS)
    if listing.cut:
        raise GradebookError(f"the folder is too large to grade ({listing.cut})")
    if sum(os.lstat(os.path.join(source, rel)).st_size for rel in listing.files) > MAX_UNZIPPED:
        raise GradebookError(f"the folder holds more than {MAX_UNZIPPED >> 20} MiB")
    for rel in listing.files:
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        mode = os.lstat(os.path.join(source, rel)).st_mode
        if stat.S_ISREG(mode):
            shutil.copyfile(os.path.join(source, rel), os.path.join(dest, rel))
        elif stat.S_ISLNK(mode):  # (kept a link: the grader refuses it by name when it reads the file)
            os.symlink(os.readlink(os.path.join(source, rel)), os.path.join(dest, rel))


def _grade_one(entry: Entry, autograder: str, timeout: float, user: str, tasks: dict, notebooks: list[str],
               private: tuple[str, ...] = ()) -> Graded:
    """Grade one submission in a ``grade`` process of its own; a submission that cannot be graded scores 0.
    A lone notebook stands for the course's one notebook (``notebooks``: the course's), whatever its name."""
    graded = Graded(entry.student, os.path.basename(entry.path), entry.fingerprint,
                    points={task: 0.0 for task in tasks})
    with tempfile.TemporaryDirectory(prefix="tinyattn-class-") as tmp:  # (made 0700: this grading's own)
        folder = os.path.join(tmp, "submission")
        os.mkdir(folder)
        try:
            if os.path.isdir(entry.path):
                _copy_plain_files(entry.path, folder)
            elif not entry.path.endswith(".ipynb"):
                unpack(entry.path, folder)
            elif len(notebooks) == 1:
                shutil.copyfile(entry.path, os.path.join(folder, notebooks[0]))
            else:
                raise GradebookError(f"a lone notebook, where the course has {len(notebooks)} notebooks")
        except GradebookError as err:
            graded.status = f"not graded: {err}"
            return graded
        results_path = os.path.join(tmp, "results.json")
        command = [sys.executable, "-m", "tinyattn.homework", "grade", folder, "--autograder", autograder,
                   "--json", results_path, "--gradescope", "--timeout", str(timeout), "--as-user", user]
        for path in private:
            command += ["--private", path]
        budget = timeout * (len(tasks) + 1) + 120
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=budget,
                                  env={**os.environ, "PYTHONPATH": _grader_path()})
            graded.output = (done.stdout + done.stderr)[-20000:]
        except subprocess.TimeoutExpired:
            graded.status = f"not graded: the grading took more than {budget:g} s"
            return graded
        try:
            with open(results_path, encoding="utf-8") as f:
                results = json.load(f)
        except (OSError, ValueError):
            graded.status = "not graded: the grader wrote no results (its output is in the state file)"
            return graded
    graded.tests = results.get("tests", [])
    for test in graded.tests:
        task = test.get("tags", [""])[0]
        if task in graded.points:
            graded.points[task] += float(test.get("score", 0.0))
    refused = [line for line in graded.output.splitlines() if line.startswith("error: ")]
    if refused:  # the submission could not be graded at all (no folder of the course's, say): the reason
        graded.status = "not graded: " + refused[0][len("error: "):][:300]
    return graded


def _grader_path() -> str:
    """The folder this tinyattn is imported from, for the ``grade`` processes."""
    import tinyattn

    return os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))


def _safe_name(student: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", student)[:100] or "student"


def feedback_text(graded: Graded, title: str) -> str:
    """What one student reads: the points per task, then each test, with what failed where they may see it."""
    lines = [f"# {title}: feedback for {graded.student}", "",
             f"Total: {sum(graded.points.values()):g} points", ""]
    if graded.status != "graded":
        lines += [graded.status, ""]
    lines += ["| task | points |", "| --- | --- |"] + [f"| `{t}` | {p:g} |" for t, p in graded.points.items()]
    for test in graded.tests:
        mark = "passed" if test.get("status") == "passed" else "failed"
        lines += ["", f"## {test.get('name', '')}: {mark} ({test.get('score', 0):g}/{test.get('max_score', 0):g})"]
        if mark == "failed":
            if test.get("visibility") == "visible":
                lines += ["", "```", str(test.get("output", "")).rstrip(), "```"]
            else:
                lines += ["", "(a hidden test: what failed is shown once grades are published)"]
    return "\n".join(lines) + "\n"


@dataclass
class Run:
    """What ``grade_all`` did: every student's grading, and which were graded now."""

    graded: list[Graded]
    fresh: list[str]  # students graded in this run (the others were unchanged since the last)
    reduced: str = ""  # the first "isolation reduced" line of this run's gradings, if any


def grade_all(submissions: str, autograder: str, csv_path: str, feedback_dir: str | None = None,
              workers: int | None = None, timeout: float = 300.0,
              progress: Callable[[int, int, str], None] | None = None) -> Run:
    """Grade every submission in ``submissions`` against ``autograder``; write the CSV gradebook, the feedback
    files (``feedback_dir``, default ``feedback`` beside the CSV) and the state; return what was done."""
    manifest_path = os.path.join(autograder, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise GradebookError(f"grade-all: {autograder} is not an autograder folder (no manifest.json; `assign` "
                             "makes one)")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    tasks = manifest["tasks"]
    title = str(manifest.get("course", {}).get("name", "tinyattn homework"))
    notebooks = sorted(manifest.get("course", {}).get("notebooks", {}).values())
    entries = find_submissions(submissions)
    for entry in entries:
        entry.fingerprint = fingerprint(entry.path, autograder)
    state_path = csv_path + ".state.json"
    state: dict[str, dict] = {}
    if os.path.isfile(state_path):
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
    todo = [e for e in entries if state.get(e.student, {}).get("fingerprint") != e.fingerprint]
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    users = [sandbox.STUDENT_USER] + [f"{sandbox.STUDENT_USER}{n}" for n in range(1, workers)]
    free = list(users)
    lock = threading.Lock()
    done = 0

    def run(entry: Entry) -> Graded:
        nonlocal done
        with lock:
            user = free.pop()
        try:
            graded = _grade_one(entry, os.path.abspath(autograder), timeout, user, tasks, notebooks,
                                (os.path.abspath(submissions), os.path.abspath(autograder)))
        finally:
            with lock:
                free.append(user)
        with lock:
            done += 1
            state[entry.student] = {"fingerprint": graded.fingerprint, "submission": graded.submission,
                                    "points": graded.points, "status": graded.status, "tests": graded.tests,
                                    "output": graded.output}
            _write_json(state_path, state)
            if progress is not None:
                progress(done, len(todo), entry.student)
        return graded

    with ThreadPoolExecutor(max_workers=workers) as pool:  # each grading is a process of its own
        list(pool.map(run, todo))
    graded = [Graded(e.student, state[e.student]["submission"], e.fingerprint, state[e.student]["points"],
                     state[e.student]["status"], state[e.student]["tests"]) for e in entries]
    _write_csv(csv_path, graded, list(tasks))
    folder = feedback_dir or os.path.join(os.path.dirname(os.path.abspath(csv_path)), "feedback")
    os.makedirs(folder, exist_ok=True)
    for g in graded:
        with open(os.path.join(folder, _safe_name(g.student) + ".md"), "w", encoding="utf-8") as f:
            f.write(feedback_text(g, title))
    notes = [line for e in todo for line in state[e.student].get("output", "").splitlines()
             if line.startswith("isolation reduced")]
    return Run(graded, [e.student for e in todo], notes[0] if notes else "")


def _write_json(path: str, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".state-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def _write_csv(path: str, graded: list[Graded], tasks: list[str]) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".grades-", suffix=".csv")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "submission", *tasks, "total", "status"])
        for g in graded:
            points = [g.points.get(t, 0.0) for t in tasks]
            writer.writerow([g.student, g.submission, *(f"{p:g}" for p in points), f"{sum(points):g}", g.status])
    os.replace(tmp, path)


def progress_bar(stream: TextIO | None = None) -> Callable[[int, int, str], None]:
    """A progress bar on ``stream`` (stderr): redrawn in place on a terminal, a line per submission otherwise."""
    out = stream or sys.stderr
    live = out.isatty()

    def show(done: int, total: int, student: str) -> None:
        width = 30
        filled = width * done // max(total, 1)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} graded ({untrusted.text(student, 40)})"
        out.write(("\r" + line.ljust(100) + ("\n" if done == total else "")) if live else line + "\n")
        out.flush()

    return show


__all__ = ["GradebookError", "Run", "feedback_text", "find_submissions", "grade_all", "progress_bar", "unpack"]
