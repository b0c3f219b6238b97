"""Grading a class: every submission in a folder, each as ``grade`` grades one, into a CSV gradebook.

``grade_all(submissions, autograder, csv_path)`` finds one submission per student in
``submissions`` (a folder, a ``.zip`` or, for a course with one notebook, an ``.ipynb`` each; or
Gradescope's export, whose ``submission_metadata.yml`` names the students, every member of a group
among them), grades each in a ``grade`` process of its own (so each has every fence ``grade`` has,
and a grading that fails costs only its student), up to one at a time per core, and writes:

* the gradebook, a CSV: ``student``, ``submission``, each task's points, ``total``, ``late``
  (hours after the due date, from Gradescope's ``:created_at:``), ``flags`` (the policy's findings,
  for review), ``status``;
* one feedback file per student (``feedback/<student>-<hash>.md``, a name no other student's can
  share): each test, its points and, for the tests students may see, what failed; the grader's
  notes to the student (edits outside the task regions, flags); the instructor's overrides;
* one log per student (``logs/<student>-<hash>.log``): the ``grade`` process's whole output;
* ``<csv>.state.json``: each submission's fingerprint (a hash of its files, of the whole
  autograder folder and of the settings), so that a run again grades only what is new or changed,
  and everyone again when the autograder changed.

One submission can harm only its own row: a zip that cannot be read (encrypted, a compression
Python lacks, corrupt data), links (never followed), special files, too many files or bytes,
each becomes that student's status ("not graded: why"), and the others are graded. A grading's
status comes from the results file its ``grade`` process writes (``extra_data.status``), never
from what the student's code prints. The ``grade`` processes run in sessions of their own: the
terminal's Ctrl-C reaches only this process, which stops them, keeps only the gradings that
finished, and says so; a run again finishes the job.

Each worker's student code runs as a user of its own (``tinyattn-student``, ``tinyattn-student1``,
…): the end of one task kills every process of its user, which must not be another grading's. Each
submission is graded from a private copy, and the folder of submissions and the autograder folder are
named to ``grade`` as private: where the student users can read them (a classmate's submission, the
hidden tests), the state and the command's last line say so, as ``grade``'s log does.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from . import sandbox, trees, untrusted

METADATA = "submission_metadata.yml"  # Gradescope's export: which students each submission_<id> folder is
MAX_UNZIPPED = 256 << 20  # bytes a submission's zip may hold, unpacked
MAX_MEMBERS = 10_000
STOP_GRACE = 10.0  # seconds a stopped ``grade`` process has to clean up after its student's code


class GradebookError(ValueError):
    """A class that cannot be graded as asked; the message says why, in one line."""


class Stopped(RuntimeError):
    """grade-all was stopped (Ctrl-C, SIGTERM); the gradings that finished are kept, the rest are not."""


@dataclass
class Entry:
    """One submission: its students (a group has several), the file or folder, its fingerprint, when it came."""

    student: str
    path: str
    fingerprint: str = ""
    members: list[str] = field(default_factory=list)  # everyone who handed it in (the first is ``student``)
    created: str = ""  # Gradescope's ``:created_at:``, as written there


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
    flags: list[dict] = field(default_factory=list)
    notes: str = ""  # what the grader tells the student besides the tests (edits outside the regions, flags)
    created: str = ""
    final: bool = True  # False: the grader itself failed (not the submission), so a run again grades it again


def _gradescope_submissions(folder: str) -> dict[str, tuple[list[str], str]]:
    """``submission_<id> -> (its students, its :created_at:)`` from Gradescope's ``submission_metadata.yml``: each
    submitter's email, else name, read line by line (the file is YAML, and only these keys are needed)."""
    path = os.path.join(folder, METADATA)
    if not os.path.isfile(path):
        return {}
    found: dict[str, list[dict[str, str]]] = {}  # submission -> its submitters, each {"email": ..., "name": ...}
    created: dict[str, str] = {}
    current = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if m := re.match(r"^(submission_\d+):\s*$", line):
                current = m[1]
                found[current] = []
            elif current and (m := re.match(r"^\s*:created_at:\s*(.+?)\s*$", line)):
                created[current] = m[1].strip("'\"")
            elif current and (m := re.match(r"^\s*(-)?\s*:(email|name):\s*(.+?)\s*$", line)):
                if m[1] or not found[current]:  # ("- " starts the next submitter)
                    found[current].append({})
                found[current][-1].setdefault(m[2], m[3].strip("'\""))
    submissions = {}
    for sub, submitters in found.items():
        students = [who.get("email") or who["name"] for who in submitters if who]
        if students:
            submissions[sub] = (students, created.get(sub, ""))
    return submissions


def find_submissions(folder: str) -> list[Entry]:
    """One ``Entry`` per submission: each folder, ``.zip`` or ``.ipynb`` in ``folder`` (hidden files, links and
    Gradescope's metadata aside), named by Gradescope's metadata when it is there, else by the file's name."""
    if not os.path.isdir(folder):
        raise GradebookError(f"grade-all: no folder of submissions at {folder}")
    named = _gradescope_submissions(folder)
    entries = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or name == METADATA or os.path.islink(path):
            continue
        if os.path.isdir(path) or name.endswith((".zip", ".ipynb")):
            stem = os.path.splitext(name)[0] if os.path.isfile(path) else name
            students, created = named.get(stem, ([stem], ""))
            entries.append(Entry(students[0], path, members=list(students), created=created))
    students = [who for e in entries for who in e.members]
    twice = sorted({s for s in students if students.count(s) > 1})
    if twice:
        raise GradebookError(f"grade-all: more than one submission for {', '.join(twice)}")
    if not entries:
        raise GradebookError(f"grade-all: no submission in {folder} (a folder, a .zip or an .ipynb per student)")
    return entries


def _hash_tree(digest: Any, path: str, limit: int = MAX_UNZIPPED) -> None:
    """Add a file's or a folder's names and bytes to ``digest``, never following a link (its target's name is
    hashed), never opening anything but a plain file (a FIFO would block, ``/dev/zero`` never end), and reading
    at most ``limit`` bytes in all."""
    listing = [""] if os.path.isfile(path) and not os.path.islink(path) else trees.files(
        path, skip=("__pycache__", ".pytest_cache"), max_entries=MAX_MEMBERS).files
    left = limit
    for rel in listing:
        full = os.path.join(path, rel) if rel else path
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            info = os.lstat(full)
        except OSError:
            digest.update(b"(gone)")
            continue
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link:" + os.fsencode(os.readlink(full)))
        elif not stat.S_ISREG(info.st_mode):
            digest.update(f"special:{stat.S_IFMT(info.st_mode)}".encode())
        else:
            try:
                fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
                with os.fdopen(fd, "rb") as f:
                    while chunk := f.read(1 << 20):
                        left -= len(chunk)
                        digest.update(chunk)
                        if left < 0:
                            digest.update(b"(more)")
                            return
            except OSError:
                digest.update(b"(unreadable)")


def autograder_fingerprint(autograder: str, timeout: float) -> str:
    """A hash of every file of the autograder folder (manifest, tests, probes, judges, reference) and of the
    settings a grading uses: a change to any of them grades everyone again."""
    digest = hashlib.sha256(f"timeout={timeout!r}\0".encode())
    _hash_tree(digest, autograder, limit=1 << 40)
    return digest.hexdigest()


def fingerprint(path: str, autograder_hash: str) -> str:
    """A hash of a submission's files (names and bytes; links and special files by what they are, never read)
    and of the autograder's fingerprint."""
    digest = hashlib.sha256(autograder_hash.encode() + b"\0")
    _hash_tree(digest, path)
    return digest.hexdigest()


def unpack(zip_path: str, dest: str) -> None:
    """A student's zip into ``dest``: plain files only, every path inside ``dest``, at most ``MAX_UNZIPPED``
    bytes and ``MAX_MEMBERS`` entries; ``GradebookError`` for anything else, and for a zip that cannot be read
    (encrypted, a compression Python lacks, corrupt data, a file where a folder should be)."""
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
                kind = (m.external_attr >> 16) & 0o170000
                if kind == 0o120000:
                    raise GradebookError(f"the zip holds a symbolic link: {untrusted.text(m.filename, 80)}")
                if kind not in (0, 0o100000, 0o040000):
                    raise GradebookError(f"the zip holds a special file: {untrusted.text(m.filename, 80)}")
            written = 0
            for m in members:  # (each member read in pieces: its header's size is not trusted)
                target = os.path.join(dest, m.filename)
                if m.is_dir():
                    os.makedirs(target, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(target) or dest, exist_ok=True)
                with z.open(m) as source, open(target, "wb") as out:
                    while chunk := source.read(1 << 20):
                        written += len(chunk)
                        if written > MAX_UNZIPPED:
                            raise GradebookError(f"the zip holds more than {MAX_UNZIPPED >> 20} MiB")
                        out.write(chunk)
    except GradebookError:
        raise
    except zipfile.BadZipFile as err:
        raise GradebookError(f"not a zip file ({err})") from None
    except Exception as err:  # noqa: BLE001 - whatever the zip does to Python's reader, it is this student's row
        raise GradebookError(f"the zip cannot be unpacked ({type(err).__name__}: {untrusted.text(str(err), 200)})") \
            from None


def _copy_plain_files(source: str, dest: str) -> None:
    """A student's folder into ``dest``: its files and links (nothing else), at most ``MAX_MEMBERS`` entries and
    ``MAX_UNZIPPED`` bytes, as for a zip; ``GradebookError`` otherwise."""
    listing = trees.files(source, skip=("__pycache__", ".pytest_cache"), max_entries=MAX_MEMBERS)
    if listing.cut:
        raise GradebookError(f"the folder is too large to grade ({listing.cut})")
    infos = {rel: os.lstat(os.path.join(source, rel)) for rel in listing.files}  # (links and special files unread)
    if sum(info.st_size for info in infos.values() if stat.S_ISREG(info.st_mode)) > MAX_UNZIPPED:
        raise GradebookError(f"the folder holds more than {MAX_UNZIPPED >> 20} MiB")
    for rel, info in infos.items():
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        if stat.S_ISREG(info.st_mode):
            shutil.copyfile(os.path.join(source, rel), os.path.join(dest, rel))
        elif stat.S_ISLNK(info.st_mode):  # (kept a link: the grader refuses it by name when it reads the file)
            os.symlink(os.readlink(os.path.join(source, rel)), os.path.join(dest, rel))


class _Children:
    """The ``grade`` processes running now, so that a stop can end them all; once stopping, none starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen] = set()
        self.stopping = False

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen | None:
        with self.lock:
            if self.stopping:
                return None
            # a session of its own: the terminal's Ctrl-C reaches grade-all only, which stops the child itself
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
            self.running.add(proc)
            return proc

    def done(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self.running.discard(proc)

    def stop(self) -> None:
        """Ask every ``grade`` process to stop (SIGINT: it cleans up after its student's code), then kill what is
        left after ``STOP_GRACE`` seconds."""
        with self.lock:
            self.stopping = True
            running = list(self.running)
        for proc in running:
            _signal_group(proc, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE
        for proc in running:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except OSError:
        pass


def _grade_one(entry: Entry, autograder: str, timeout: float, user: str, tasks: dict, notebooks: list[str],
               children: _Children, private: tuple[str, ...] = ()) -> Graded | None:
    """Grade one submission in a ``grade`` process of its own; a submission that cannot be graded scores 0, with
    why. None when grade-all is stopping (nothing of this grading is kept).
    A lone notebook stands for the course's one notebook (``notebooks``: the course's), whatever its name."""
    graded = Graded(entry.student, os.path.basename(entry.path), entry.fingerprint,
                    points={task: 0.0 for task in tasks}, created=entry.created)
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
        except OSError as err:  # (a file that vanished or cannot be read while it is copied)
            graded.status = f"not graded: the submission cannot be read ({type(err).__name__}: {err.strerror})"
            return graded
        results_path = os.path.join(tmp, "results.json")
        command = [sys.executable, "-m", "tinyattn.homework", "grade", folder, "--autograder", autograder,
                   "--json", results_path, "--gradescope", "--timeout", str(timeout), "--as-user", user]
        for path in private:
            command += ["--private", path]
        budget = timeout * (len(tasks) + 1) + 120
        proc = children.start(command, {**os.environ, "PYTHONPATH": _grader_path()})
        if proc is None:
            return None
        try:
            out, _ = proc.communicate(timeout=budget)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGINT)
            try:
                out, _ = proc.communicate(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                out, _ = proc.communicate()
            graded.status = f"not graded: the grading took more than {budget:g} s"
            graded.output = out.decode("utf-8", "replace")
            return graded
        finally:
            children.done(proc)
        graded.output = out.decode("utf-8", "replace")
        if children.stopping:
            return None
        try:
            with open(results_path, encoding="utf-8") as f:
                results = json.load(f)
            status = str(results["extra_data"]["status"])
        except (OSError, ValueError, KeyError, TypeError):
            graded.status = "not graded: the grader wrote no results (its output is in the student's log)"
            graded.final = False
            return graded
    graded.tests = [t for t in results.get("tests", []) if isinstance(t, dict)]
    for test in graded.tests:
        task = test.get("tags", [""])[0]
        if task in graded.points:
            graded.points[task] += float(test.get("score", 0.0))
    graded.flags = list(results["extra_data"].get("flags", []))
    graded.notes = str(results.get("output", ""))
    graded.status = status
    graded.final = not status.startswith("not graded: the grader failed")
    return graded


def _grader_path() -> str:
    """The folder this tinyattn is imported from, for the ``grade`` processes."""
    import tinyattn

    return os.path.dirname(os.path.dirname(os.path.abspath(tinyattn.__file__)))


def file_name(student: str) -> str:
    """A file name for ``student``'s feedback and log: readable, and theirs alone (two students whose names differ
    only in characters a file name cannot hold get names that differ too)."""
    readable = re.sub(r"[^A-Za-z0-9_.@-]+", "_", student)[:80].lstrip(".") or "student"
    return f"{readable}-{hashlib.sha256(student.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def _cell(value: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that would start a formula (``=``, ``+``, ``-``, ``@``, a tab
    or a carriage return first) gets a ``'`` before it."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


@dataclass
class Override:
    """The instructor's word on one task of one student: its points, and why (shown in the feedback)."""

    student: str
    task: str
    points: float
    comment: str


def read_overrides(path: str, tasks: dict) -> list[Override]:
    """The overrides file: a CSV with the columns ``student``, ``task``, ``points``, ``comment``;
    ``GradebookError`` naming the row for anything else."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise GradebookError(f"grade-all: cannot read the overrides file {path} ({err.strerror})") from None
    found = []
    for n, row in enumerate(rows, 2):
        where = f"{path}, row {n}"
        missing = [k for k in ("student", "task", "points") if not (row.get(k) or "").strip()]
        if missing:
            raise GradebookError(f"grade-all: {where}: no {', '.join(missing)} (the columns are student, task, "
                                 "points, comment)")
        if row["task"].strip() not in tasks:
            raise GradebookError(f"grade-all: {where}: unknown task {row['task'].strip()!r} (known: "
                                 f"{', '.join(tasks)})")
        try:
            points = float(row["points"])
        except ValueError:
            raise GradebookError(f"grade-all: {where}: points must be a number, got {row['points']!r}") from None
        found.append(Override(row["student"].strip(), row["task"].strip(), points, (row.get("comment") or "").strip()))
    return found


def _hours_late(created: str, due: datetime.datetime | None) -> str:
    """How many hours after ``due`` a submission came (Gradescope's ``:created_at:``), "" when on time or not
    known."""
    when = parse_time(created) if created and due is not None else None
    if when is None or due is None or when <= due:
        return ""
    return f"{(when - due).total_seconds() / 3600:.2f}"


def parse_time(text: str) -> datetime.datetime | None:
    """A time as Gradescope writes it (``2026-12-01 10:00:00.000000000 -08:00``) or as ISO 8601; a time without
    an offset is UTC. None if it is neither."""
    cleaned = re.sub(r"(\.\d{6})\d+", r"\1", text.strip())  # (nanoseconds: Python reads microseconds)
    cleaned = re.sub(r"\s+([+-]\d\d:?\d\d)$", r"\1", cleaned)
    try:
        when = datetime.datetime.fromisoformat(cleaned)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def feedback_text(graded: Graded, title: str, overrides: list[Override] | None = None) -> str:
    """What one student reads: the points per task, then the grader's notes, the instructor's overrides, and
    each test, with what failed where they may see it."""
    lines = [f"# {title}: feedback for {graded.student}", "",
             f"Total: {sum(graded.points.values()):g} points", ""]
    if graded.status != "graded":
        lines += [graded.status, ""]
    lines += ["| task | points |", "| --- | --- |"] + [f"| `{t}` | {p:g} |" for t, p in graded.points.items()]
    if graded.notes.strip():
        lines += ["", "## From the grader", "", "```", graded.notes.rstrip(), "```"]
    for o in overrides or []:
        lines += ["", f"## `{o.task}`: {o.points:g} points, set by your instructor", "", o.comment or "(no comment)"]
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
    """What ``grade_all`` did: every student's grading, which were graded now, and whose total changed."""

    graded: list[Graded]
    fresh: list[str]  # students graded in this run (the others were unchanged since the last)
    reduced: str = ""  # the first "isolation reduced" line of this run's gradings, if any
    changed: list[tuple[str, float, float]] = field(default_factory=list)  # (student, total before, total now)


def grade_all(submissions: str, autograder: str, csv_path: str, feedback_dir: str | None = None,
              workers: int | None = None, timeout: float = 300.0,
              progress: Callable[[int, int, str], None] | None = None, overrides: str | None = None,
              due: str | None = None) -> Run:
    """Grade every submission in ``submissions`` against ``autograder``; write the CSV gradebook, the feedback
    files (``feedback_dir``, default ``feedback`` beside the CSV), the logs (``logs`` beside the CSV) and the
    state; return what was done. ``overrides``: a CSV of the instructor's points (``read_overrides``); ``due``:
    the due date (ISO 8601), for the ``late`` column. Raises ``Stopped`` on SIGINT or SIGTERM, after ending every
    ``grade`` process and keeping the gradings that finished."""
    manifest_path = os.path.join(autograder, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise GradebookError(f"grade-all: {autograder} is not an autograder folder (no manifest.json; `assign` "
                             "makes one)")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    tasks = manifest["tasks"]
    title = str(manifest.get("course", {}).get("name", "tinyattn homework"))
    notebooks = sorted(manifest.get("course", {}).get("notebooks", {}).values())
    due_time = parse_time(due) if due else None
    if due and due_time is None:
        raise GradebookError(f"grade-all: --due {due!r} is not a date and time (ISO 8601: 2026-12-01T23:59-08:00)")
    changes = read_overrides(overrides, tasks) if overrides else []
    entries = find_submissions(submissions)
    autograder_hash = autograder_fingerprint(autograder, timeout)
    for entry in entries:
        entry.fingerprint = fingerprint(entry.path, autograder_hash)
    state_path = csv_path + ".state.json"
    state: dict[str, dict] = {}
    if os.path.isfile(state_path):
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
    before = {who: sum(state[who].get("points", {}).values()) for who in state}
    todo = [e for e in entries if state.get(e.student, {}).get("fingerprint") != e.fingerprint]
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    users = [sandbox.STUDENT_USER] + [f"{sandbox.STUDENT_USER}{n}" for n in range(1, workers)]
    free = list(users)
    lock = threading.Lock()
    children = _Children()
    done = 0
    here = os.path.dirname(os.path.abspath(csv_path))
    logs = os.path.join(here, "logs")
    os.makedirs(logs, exist_ok=True)

    def run(entry: Entry) -> None:
        nonlocal done
        with lock:
            user = free.pop()
        try:
            graded = _grade_one(entry, os.path.abspath(autograder), timeout, user, tasks, notebooks, children,
                                (os.path.abspath(submissions), os.path.abspath(autograder)))
        except Exception as err:  # noqa: BLE001 - the grader's own failure on one submission: that row, a retry
            graded = Graded(entry.student, os.path.basename(entry.path), entry.fingerprint,
                            points={task: 0.0 for task in tasks}, created=entry.created, final=False,
                            status=f"not graded: grade-all failed on it ({type(err).__name__}: {err})"[:500])
        finally:
            with lock:
                free.append(user)
        if graded is None:  # stopping: nothing partial is kept
            return
        with lock:
            done += 1
            with open(os.path.join(logs, file_name(entry.student) + ".log"), "w", encoding="utf-8") as f:
                f.write(graded.output)
            state[entry.student] = {"fingerprint": graded.fingerprint if graded.final else "",
                                    "submission": graded.submission, "points": graded.points,
                                    "status": graded.status, "tests": graded.tests, "flags": graded.flags,
                                    "notes": graded.notes, "created": graded.created, "members": entry.members}
            _write_json(state_path, state)
            if progress is not None:
                progress(done, len(todo), entry.student)

    def stop(signum: int, frame: object) -> None:
        children.stop()

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, stop)
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:  # each grading is a process of its own
            list(pool.map(run, todo))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if children.stopping:
        raise Stopped(f"grade-all: stopped; {done} of {len(todo)} gradings finished and are kept in {state_path}, "
                      "the others were not stored: run the same command again to finish")
    graded = []
    for e in entries:
        kept = state[e.student]
        graded.append(Graded(e.student, kept["submission"], e.fingerprint, kept["points"], kept["status"],
                             kept["tests"], flags=kept.get("flags", []), notes=kept.get("notes", ""),
                             created=kept.get("created", "")))
    rows = [(who, g) for e, g in zip(entries, graded) for who in e.members]
    _write_csv(csv_path, rows, list(tasks), changes, due_time)
    folder = feedback_dir or os.path.join(here, "feedback")
    os.makedirs(folder, exist_ok=True)
    for who, g in rows:
        mine = [o for o in changes if o.student == who]
        shown = Graded(who, g.submission, g.fingerprint, {**g.points, **{o.task: o.points for o in mine}}, g.status,
                       g.tests, notes=g.notes)
        with open(os.path.join(folder, file_name(who) + ".md"), "w", encoding="utf-8") as f:
            f.write(feedback_text(shown, title, mine))
    fresh = [e.student for e in todo]
    changed = [(e.student, before[e.student], sum(state[e.student]["points"].values())) for e in todo
               if e.student in before and before[e.student] != sum(state[e.student]["points"].values())]
    notes = [note for e in todo for note in _isolation_notes(state[e.student])]
    return Run(graded, fresh, notes[0] if notes else "", changed)


def _isolation_notes(kept: dict) -> list[str]:
    """The grader's "isolation reduced" note of one grading, from its results (never from the student's output)."""
    return [line for line in str(kept.get("notes", "")).splitlines() if line.startswith("isolation reduced")][:1]


def _write_json(path: str, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".state-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def _write_csv(path: str, rows: list[tuple[str, Graded]], tasks: list[str], overrides: list[Override],
               due: datetime.datetime | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".grades-", suffix=".csv")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "submission", *tasks, "total", "late", "flags", "status"])
        for who, g in rows:
            points = {**g.points, **{o.task: o.points for o in overrides if o.student == who}}
            values = [points.get(t, 0.0) for t in tasks]
            flagged = sorted({str(flag.get("task", "")) for flag in g.flags})
            status = g.status + ("; overridden by the instructor" if any(o.student == who for o in overrides) else "")
            writer.writerow([_cell(who), _cell(g.submission), *(f"{p:g}" for p in values), f"{sum(values):g}",
                             _hours_late(g.created, due), _cell(" ".join(flagged)), _cell(status)])
    os.replace(tmp, path)


def review(csv_path: str) -> str:
    """The flags of a class's last ``grade-all`` (its state file): each student's, task, file, line, rule, what the
    check found and the code, for the instructor to review (and to override in the overrides file)."""
    state_path = csv_path + ".state.json"
    if not os.path.isfile(state_path):
        raise GradebookError(f"review: no {state_path} (run grade-all with --csv {csv_path} first)")
    with open(state_path, encoding="utf-8") as f:
        state = json.load(f)
    lines = []
    flagged = set()
    for student in sorted(state):
        for flag in state[student].get("flags", []):
            flagged.add(student)
            where = f"{untrusted.text(str(flag.get('file')), 200)}, line {flag.get('line')} of the task's code"
            lines.append(f"{untrusted.text(student, 100)}: {flag.get('task')} ({flag.get('rule')}), {where}: "
                         f"{untrusted.text(str(flag.get('what')), 300)}")
            lines.append(f"    {untrusted.text(str(flag.get('code')), 200)}")
    if not lines:
        return "no flags"
    return "\n".join(lines + [f"{len(lines) // 2} flag(s), {len(flagged)} student(s)"])


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


__all__ = ["GradebookError", "Run", "Stopped", "feedback_text", "file_name", "find_submissions", "grade_all",
           "progress_bar", "read_overrides", "review", "unpack"]
