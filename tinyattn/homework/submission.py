"""A student's submission, read region by region, and the package that grades one task.

**The isolation rule.** Task T is graded against a package in which T's regions hold
the student's code and every other region holds the reference code. So a blank or a
bug in one task never costs points in another, and a task's score depends on that
task's code alone.

The student's code for a region is found by comparing the student's file with the
copy ``assign`` handed out (rebuilt here from the marked source): the lines between
the unchanged line before the ``# TODO(task ...)`` stub and the unchanged line after
it. Edits anywhere else are reported as not graded, never silently used.

**Plain files only.** A submission is read as regular files: a symbolic link (to the
reference source, say), a hard link, a FIFO or a device is refused with a message, on the
file itself and on every folder above it, and the files are opened without following links.
Only the files the assignment names are read; any others are listed for the instructor.
"""

from __future__ import annotations

import difflib
import itertools
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from . import trees, untrusted
from .course import notebook_import
from .markers import Region, rewrite

Key = tuple[str, int]  # a region's file and BEGIN line


@dataclass
class Reading:
    """What was found in a student's package."""

    code: dict[Key, list[str]] = field(default_factory=dict)  # region -> the student's lines
    problems: dict[Key, str] = field(default_factory=dict)  # region -> why its code could not be read
    outside: list[str] = field(default_factory=list)  # "file:line: ..." edits outside every region
    extra: list[str] = field(default_factory=list)  # files in the submission the assignment does not name


def read_plain(package_root: str, rel: str) -> str:
    """The text of ``package_root/rel``, if it and every folder on the way are plain (no link, FIFO, device).

    Raises ``ValueError`` saying what was found instead. The file is opened without following a
    link and without blocking on a FIFO, then checked again on the open descriptor.
    """
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        folder = os.path.join(package_root, *parts[:depth])
        if os.path.islink(folder):
            raise ValueError(f"{'/'.join(parts[:depth])} is a symbolic link; submit the folder itself")
    path = os.path.join(package_root, *parts)
    if os.path.islink(path):
        raise ValueError(f"{rel} is a symbolic link; submit the file itself")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{rel} is not a plain file (a FIFO, a device or a socket)")
        if info.st_nlink > 1:
            raise ValueError(f"{rel} is a hard link to another file; submit a copy of your own file")
        with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
            fd = -1  # closed by the file object
            return f.read()
    finally:
        if fd >= 0:
            os.close(fd)


def regions_by_file(tasks: dict[str, list[Region]]) -> dict[str, list[Region]]:
    """``file -> its regions``, in file order."""
    out: dict[str, list[Region]] = {}
    for regions in tasks.values():
        for r in regions:
            out.setdefault(r.path, []).append(r)
    return {path: sorted(rs, key=lambda r: r.begin) for path, rs in out.items()}


def stub_spans(template: list[str], regions: list[Region], chosen: set[str]) -> dict[Key, tuple[int, int]]:
    """Where each blanked region's stub sits in the handed-out file: ``key -> (first line, end)``."""
    spans, start = {}, 0
    for r in regions:
        if r.task not in chosen:
            continue
        todo = f"{r.indent}# TODO(task {r.task}): write this part"
        at = template.index(todo, start)
        end = at + (len(r.stub) if r.stub else 1) + 1
        spans[r.key] = (at, end)
        start = end
    return spans


def student_lines(text: str) -> list[str]:
    """A submitted file's lines as its author meant them: no byte-order mark, no ``\\r`` of Windows line ends."""
    return [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]


def _same(a: str, b: str) -> bool:
    """Are a handed-out line and a student's line the same line? (An editor may strip trailing spaces.)"""
    return a.rstrip() == b.rstrip()


def _content_end(lines: list[str]) -> int:
    """The length of ``lines`` without the blank lines at its end (a trailing newline or not, or several)."""
    n = len(lines)
    while n and not lines[n - 1].strip():
        n -= 1
    return n


def _block_at(block: list[str], lines: list[str], i: int) -> bool:
    """Do ``lines`` hold ``block`` from index ``i`` on?"""
    if i + len(block) > len(lines):
        return False
    return all(_same(block[k], lines[i + k]) for k in range(len(block)))


def match_unchanged(
    template: list[str], student: list[str], spans: list[tuple[int, int]]
) -> list[tuple[int, int]] | None:
    """Where each stub's code lies in ``student`` (``(first, end)`` per span), if nothing outside the stubs changed.

    The handed-out file is fixed blocks with the stubs (``spans``, in file order) between them;
    the student's file must be the same blocks with any lines at all in place of each stub. The
    first block must open the file and the last must close it (trailing blank lines aside); each
    block between is looked for whole, after the previous one. So no line of a student's code (a
    blank line, a comment, a copy of the line after the stub) can be taken for the line that ends
    it. None when a block is not found: the file was edited outside its stubs.
    """
    edges = [0] + [i for span in spans for i in span] + [_content_end(template)]
    blocks = [template[edges[k] : edges[k + 1]] for k in range(0, len(edges), 2)]
    stop = _content_end(student)
    closing = stop - len(blocks[-1])
    if closing < 0 or not _block_at(blocks[-1], student, closing) or not _block_at(blocks[0], student, 0):
        return None
    found, position = [], len(blocks[0])
    for block in blocks[1:-1]:
        where = next((i for i in range(position, closing - len(block) + 1) if _block_at(block, student, i)), None)
        if where is None:
            return None
        found.append((position, where))
        position = where + len(block)
    if position > closing:
        return None
    return found + [(position, closing)] if spans else []


def read_submission(
    package_root: str, files: dict[str, list[str]], tasks: dict[str, list[Region]], chosen: set[str],
    handed_out: tuple[str, ...] = (), notebooks: dict[str, str] | None = None,
) -> Reading:
    """Read the student's code for every region of the ``chosen`` tasks from ``package_root/tinyattn/...``.

    Every file is compared with the handed-out copy. When nothing outside the stubs changed
    (``match_unchanged``), each stub's code is what lies between its fixed neighbours. Otherwise a
    change outside the stubs is listed in ``outside`` (and the reference is used there), whichever
    file it is in, and each stub's code is found between the nearest non-blank unchanged lines. Files the
    assignment handed out besides the package (``handed_out``: the README, the public tests) are never read,
    nor listed as extra. A module read from a notebook (``notebooks``: module -> notebook) is read from the
    student's notebook, as its code cells (``task_tests/notebook_import.py``): its outputs and metadata, and
    its markdown cells, are never read.
    """
    notebooks = notebooks or {}
    reading = Reading()
    by_file = regions_by_file(tasks)
    for rel in files:
        regions = by_file.get(rel, [])
        mine = [r for r in regions if r.task in chosen]
        template = rewrite(files[rel], regions, blank=chosen)
        spans = stub_spans(template, regions, chosen)
        stored = notebooks.get(rel, rel)  # (the file the student has)
        path = os.path.join(package_root, stored)
        if not os.path.lexists(path):
            for r in mine:
                reading.problems[r.key] = f"{stored} is missing from the submission"
            if not mine:
                reading.outside.append(f"{stored}: missing from the submission (the reference is used)")
            continue
        try:
            text = read_plain(package_root, stored)
            if rel in notebooks:
                text = "\n".join(notebook_import().text_module_lines(text))
            student = student_lines(text)
        except (ValueError, OSError) as err:
            reason = f"not read: {err.strerror if isinstance(err, OSError) else err}"
            for r in mine:
                reading.problems[r.key] = reason
            reading.outside.append(f"{stored}: {reason} (the reference is used)")
            continue
        found = match_unchanged(template, student, [spans[r.key] for r in mine])
        if found is not None:
            for r, (a, b) in zip(mine, found):
                reading.code[r.key] = student[a:b]
            continue
        _read_edited(rel, template, student, mine, spans, reading)
    named = set(files) | set(handed_out) | set(notebooks.values())
    listing = trees.files(package_root, skip=("__pycache__", ".pytest_cache"))  # (what running the tests leaves)
    reading.extra += [untrusted.text(rel, 300) for rel in listing.files
                      if rel not in named and not rel.endswith(".pyc")]
    if listing.cut:
        reading.extra.append(f"(the submission was not all looked at: {listing.cut})")
    return reading


def _flooding(template: list[str], student: list[str]) -> Callable[[str], bool]:
    """Which lines may not start a match in the diff: those the student's file holds far more often than the
    handed-out one (a blank line pasted after every line, say). Each line the diff tries as a start costs a
    pass over its copies in the student's file; with no line copied more than a few times beyond the
    handed-out count, reading a file costs time in proportion to its size, whatever it holds. Such lines
    still join a match that starts elsewhere, so an honest file reads the same."""
    handed_out = Counter(template)
    flooding = {line for line, n in Counter(student).items() if n > 2 * handed_out[line] + 50}
    return flooding.__contains__


def _read_edited(rel: str, template: list[str], student: list[str], mine: list[Region],
                 spans: dict[Key, tuple[int, int]], reading: Reading) -> None:
    """One file edited outside its stubs: the edits outside listed, each stub's code found by a diff.

    A stub's code lies between the nearest non-blank lines around the stub that the student left
    unchanged. With every edit outside those lines undone, the stubs' code is read exactly as
    ``match_unchanged`` reads an unedited file; if a blank line next to a stub was also changed,
    the code is read from one unchanged line to the other (the blank lines between come along).
    """
    a = [line.rstrip() for line in template[: _content_end(template)]]
    b = [line.rstrip() for line in student[: _content_end(student)]]
    ops = difflib.SequenceMatcher(_flooding(a, b), a, b, autojunk=False).get_opcodes()

    def where(i: int) -> int | None:
        """The student's line for the handed-out line ``i``, if that line is unchanged."""
        if i < 0 or i >= len(a):
            return -1 if i < 0 else len(b)  # (before the file's first line, after its last)
        for tag, i1, i2, j1, _ in ops:
            if tag == "equal" and i1 <= i < i2:
                return j1 + (i - i1)
        return None

    around = {}  # region -> the handed-out lines around its code: the nearest non-blank ones
    for r in mine:
        first, end = spans[r.key]
        before = next((i for i in range(first - 1, -1, -1) if a[i]), -1)
        after = next((i for i in range(end, len(a)) if a[i]), len(a))
        start, stop = where(before), where(after)
        if start is None or stop is None:
            changed = before + 1 if start is None else after + 1
            reading.problems[r.key] = (
                f"{rel}: the line {'before' if start is None else 'after'} the task {r.task} stub was "
                f"changed (handed-out line {changed}), so the task's code cannot be found"
            )
        else:
            around[r.key] = (before, after)
            reading.code[r.key] = student[start + 1 : stop]
    outside = [op for op in ops if op[0] != "equal" and not any(s < op[1] and op[2] <= e for s, e in around.values())]
    for tag, i1, _, j1, j2 in outside:
        if tag == "insert" and all(not line.strip() or line.lstrip().startswith("#") for line in b[j1:j2]):
            continue  # (comments added, a notebook's added cell marker or magic among them: no code changed)
        shown = next((j for j in range(j1, j2) if b[j].strip()), j1)  # (the first line of it that is not blank)
        reading.outside.append(f"{rel}:{shown + 1}: edited outside the task regions (not graded): "
                               f"{untrusted.text((b[shown] if shown < len(b) else a[i1]).strip(), 60)!r}")
    undone = list(student)
    for _, i1, i2, j1, j2 in reversed(outside):
        undone[j1:j2] = template[i1:i2]
    if not reading.problems.keys() & {r.key for r in mine}:
        found = match_unchanged(template, undone, [spans[r.key] for r in mine])
        for r, (first, end) in zip(mine, found or []):
            reading.code[r.key] = undone[first:end]


def package_for(task: str, tasks: dict[str, list[Region]], reading: Reading) -> dict[Key, list[str]]:
    """The ``given`` regions of the package that grades ``task``: its regions from the student, no others."""
    given = {}
    for r in tasks[task]:
        if r.key in reading.code:
            given[r.key] = reading.code[r.key]
        else:  # unreadable or missing: the stub stands there, and the tests say why they fail
            given[r.key] = [f"{r.indent}raise NotImplementedError({reading.problems.get(r.key, 'no code')!r})"]
    return given


def find_package(submission: str, anchor: str = "tinyattn") -> str | None:
    """The folder holding ``anchor`` (the submitted ``tinyattn`` package, or the first file of a course of its
    own): the submission itself or up to three levels in (looking at the first 1,000 entries of each folder: a
    submission is not a haystack)."""
    frontier = [submission]
    for _ in range(4):
        deeper = []
        for folder in frontier:
            if os.path.lexists(os.path.join(folder, anchor)):
                return folder  # (a symbolic link there is refused when its files are read)
            try:
                names = sorted(itertools.islice(os.listdir(folder), 1000))
            except OSError:
                continue
            deeper += [
                os.path.join(folder, name)
                for name in names
                if os.path.isdir(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name))
                and not name.startswith((".", "__"))
            ]
        frontier = deeper[:1000]
    return None
