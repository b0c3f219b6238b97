"""Task markers in the reference source, and the rewrites built from them.

A task region is a run of lines between two comments, so the reference runs unchanged::

    def backward(ctx, grad_output):
        # BEGIN TASK softmax_backward
        (y,) = ctx.saved_tensors
        return (y * (grad_output - (grad_output * y).sum(axis=ctx.dim, keepdims=True)),)
        # END TASK

* In a student copy the region becomes ``# TODO(task <id>): ...`` and
  ``raise NotImplementedError("task <id>")`` at the ``BEGIN`` line's indentation,
  or the lines given by ``# STUB: <line>`` comments inside the region.
* The plausible wrong answers (a task's ``mistakes`` in ``course.toml``) each name a line of a region; a
  mutant variant of the package has that one line replaced. Markers never
  reach a student copy.
* One task id may have several regions (e.g. two functions).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from .course import Mistake

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN TASK (?P<id>[a-z][a-z0-9_]*)\s*$")
END = re.compile(r"^\s*# END TASK\s*$")
STUB = re.compile(r"^\s*# STUB: (?P<code>.*)$")
ANY_MARKER = re.compile(r"^\s*#\s*(BEGIN TASK|END TASK|STUB:|MUTANT:)")  # MUTANT: an old spelling, refused


class MarkerError(ValueError):
    """Unbalanced, nested or malformed task markers (the message names file and line)."""


@dataclass
class Mutant:
    """A wrong line: replaces line ``target`` (an index into the file's lines) of ``path``."""

    code: str
    target: int
    path: str
    why: str = ""

    @property
    def line(self) -> int:
        """The 1-based line it replaces."""
        return self.target + 1


@dataclass
class Region:
    """One ``BEGIN TASK`` .. ``END TASK`` block of a file."""

    task: str
    path: str  # relative to the package's parent directory, e.g. tinyattn/nn/attention.py
    begin: int  # index of the BEGIN line
    end: int  # index of the END line
    indent: str
    stub: list[str] = field(default_factory=list)
    mutants: list[Mutant] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, int]:
        """Which region this is: its file and the line its ``BEGIN`` marker is on."""
        return self.path, self.begin


def parse_file(path: str, rel: str, lines: list[str]) -> list[Region]:
    """Find the regions of one file, or raise ``MarkerError``."""
    regions: list[Region] = []
    current: Region | None = None
    for i, line in enumerate(lines):
        where = f"{rel}:{i + 1}"
        if m := BEGIN.match(line):
            if current is not None:
                raise MarkerError(f"{where}: BEGIN TASK {m['id']} inside task {current.task} (nested markers)")
            current = Region(m["id"], rel, i, -1, m["indent"])
        elif END.match(line):
            if current is None:
                raise MarkerError(f"{where}: END TASK without BEGIN TASK")
            current.end = i
            if not any(not _is_comment(x) for x in lines[current.begin + 1 : i]):
                raise MarkerError(f"{rel}:{current.begin + 1}: task {current.task} has no code")
            regions.append(current)
            current = None
        elif m := STUB.match(line):
            if current is None:
                raise MarkerError(f"{where}: STUB outside a task region")
            current.stub.append(m["code"])
        elif ANY_MARKER.search(line):
            if "MUTANT:" in line:
                raise MarkerError(f"{where}: wrong answers belong in course.toml (a task's mistakes), not in the "
                                  "source")
            raise MarkerError(f"{where}: malformed task marker: {line.strip()!r}")
    if current is not None:
        raise MarkerError(f"{rel}:{current.begin + 1}: BEGIN TASK {current.task} is never closed by END TASK")
    return regions


def _is_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def package_files(package_dir: str) -> dict[str, list[str]]:
    """``rel path -> lines`` for every .py file of the package (``tinyattn/...``), homework tooling excluded."""
    root = os.path.dirname(package_dir)
    files = {}
    for dirpath, dirnames, filenames in os.walk(package_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "homework"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    files[os.path.relpath(path, root)] = f.read().split("\n")
    return files


def find_regions(files: dict[str, list[str]], mistakes: tuple[Mistake, ...] = ()) -> dict[str, list[Region]]:
    """``task id -> its regions`` over all files, each region with the ``mistakes`` of its task on it."""
    tasks: dict[str, list[Region]] = {}
    for rel, lines in files.items():
        for region in parse_file(rel, rel, lines):
            tasks.setdefault(region.task, []).append(region)
    for mistake in mistakes:
        attach(mistake, tasks, files)
    return tasks


def attach(mistake: Mistake, tasks: dict[str, list[Region]], files: dict[str, list[str]]) -> None:
    """Find the one reference line ``mistake`` replaces in its task's regions; add it there as a ``Mutant``."""
    if mistake.task not in tasks:
        raise MarkerError(f"course.toml: task {mistake.task!r} has no region in the source")
    found = [
        (region, i)
        for region in tasks[mistake.task]
        for i in range(region.begin + 1, region.end)
        if files[region.path][i].strip() == mistake.replaces
    ]
    if len(found) != 1:
        how = "is not" if not found else f"is {len(found)} times"
        raise MarkerError(
            f"course.toml: the mistake's line {mistake.replaces!r} {how} in the regions of task {mistake.task} "
            "(did the reference change?)"
        )
    region, i = found[0]
    region.mutants.append(Mutant(mistake.wrong, i, region.path, mistake.why))


def _stub_lines(region: Region) -> list[str]:
    ind = region.indent
    if region.stub:
        return [f"{ind}# TODO(task {region.task}): write this part"] + [f"{ind}{code}" for code in region.stub]
    return [
        f"{ind}# TODO(task {region.task}): write this part",
        f'{ind}raise NotImplementedError("task {region.task}")',
    ]


def _reference_lines(lines: list[str], region: Region) -> list[str]:
    return [x for x in lines[region.begin + 1 : region.end] if not STUB.match(x)]


def _without_homework_note(lines: list[str]) -> list[str]:
    """Drop the "Homework: ..." paragraph of a module docstring (it speaks to instructors) and the blank line before."""
    out: list[str] = []
    skipping = False
    for line in lines:
        if line.startswith("Homework: "):
            skipping = True
            if out and not out[-1].strip():
                out.pop()
            continue
        if skipping and line.strip() and not line.startswith('"""'):
            continue
        skipping = False
        out.append(line)
    return out


def rewrite(
    lines: list[str],
    regions: list[Region],
    blank: set[str],
    mutant: Mutant | None = None,
    given: dict[tuple[str, int], list[str]] | None = None,
    spans: dict[tuple[str, int], tuple[int, int]] | None = None,
) -> list[str]:
    """One file's text with the tasks in ``blank`` stubbed, the rest as reference, markers removed.

    With ``mutant``, the line it targets is replaced by the wrong code (same indentation).
    ``given`` maps a region's ``key`` to the lines that stand in it instead (a student's code);
    ``spans``, if given, gets the first and last line (1-based) of each region not blanked.
    The module docstring's "Homework: ..." note goes too: the copy has no markers left.
    """
    out: list[str] = []
    i = 0
    by_begin = {r.begin: r for r in regions}
    while i < len(lines):
        region = by_begin.get(i)
        if region is None:
            out.append(lines[i])
            i += 1
            continue
        if given is not None and region.key in given:
            out += [_Edge(region.key), *given[region.key], _Edge(region.key)]
        elif region.task in blank:
            out.extend(_stub_lines(region))
        else:
            out.append(_Edge(region.key))  # (where the region's lines start and end, found again below)
            for j in range(region.begin + 1, region.end):
                if STUB.match(lines[j]):
                    continue
                if mutant is not None and j == mutant.target:
                    indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
                    out.append(indent + mutant.code)
                else:
                    out.append(lines[j])
            out.append(_Edge(region.key))
        i = region.end + 1
    text: list[str] = []
    opened: dict[tuple[str, int], int] = {}  # a region whose start was seen -> its first line
    for line in _without_homework_note(out):
        if not isinstance(line, _Edge):
            text.append(line)
        elif line.key not in opened:
            opened[line.key] = len(text) + 1
        elif spans is not None:
            spans[line.key] = (opened[line.key], len(text))
    return text


class _Edge(str):
    """A mark in ``rewrite``'s lines where a given region starts or ends (never written)."""

    key: tuple[str, int]

    def __new__(cls, key: tuple[str, int]) -> _Edge:
        edge = super().__new__(cls, "")
        edge.key = key
        return edge


def region_variants(lines: list[str], region: Region) -> list[tuple[str, list[str]]]:
    """The code ``region`` holds in the reference and with each of its mistakes planted: ``(what, lines)``."""
    variants = []
    for what, mutant in [("the reference", None), *((m.code.strip(), m) for m in region.mutants)]:
        spans: dict[tuple[str, int], tuple[int, int]] = {}
        text = rewrite(lines, [region], blank=set(), mutant=mutant, spans=spans)
        first, last = spans[region.key]
        variants.append((what, text[first - 1 : last]))
    return variants


def write_package(
    files: dict[str, list[str]],
    tasks: dict[str, list[Region]],
    dest_root: str,
    blank: set[str],
    mutant: Mutant | None = None,
    mutant_path: str | None = None,
    given: dict[tuple[str, int], list[str]] | None = None,
) -> dict[tuple[str, int], tuple[int, int]]:
    """Write every file under ``dest_root`` (blanked, mutated, or with ``given`` regions as asked).

    A file that does not parse is refused, unless a ``given`` region (a student's code) is in it:
    then it is written as it is, and the test run reports the error. Returns where each region
    not blanked lies in its written file (``rewrite``'s ``spans``).
    """
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    regions_of: dict[str, list[Region]] = {}
    for regions in tasks.values():
        for r in regions:
            regions_of.setdefault(r.path, []).append(r)
    for rel, lines in files.items():
        here = regions_of.get(rel, [])
        text = "\n".join(rewrite(lines, here, blank, mutant if rel == mutant_path else None, given, spans))
        try:
            ast.parse(text, filename=rel)
        except SyntaxError as err:
            if not (given and any(r.key in given for r in here)):
                raise MarkerError(f"{rel}: the rewritten file does not parse: {err}") from None
        path = os.path.join(dest_root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return spans


def fill_lines(lines: list[str], region: Region, reference_lines: list[str]) -> list[str] | None:
    """``lines`` with the stub of ``region`` replaced by its reference code (from ``reference_lines``, the marked
    file's); None if the stub is not there."""
    todo = f"{region.indent}# TODO(task {region.task}): write this part"
    if todo not in lines:
        return None
    start = lines.index(todo)
    stub_len = len(_stub_lines(region))
    return lines[:start] + _reference_lines(reference_lines, region) + lines[start + stub_len:]


def fill_task(student_file: str, region: Region, reference_lines: list[str]) -> bool:
    """Put the reference code of ``region`` back in place of its stub in a student file; True if found."""
    with open(student_file, encoding="utf-8") as f:
        lines = f.read().split("\n")
    filled = fill_lines(lines, region, reference_lines)
    if filled is None:
        return False
    with open(student_file, "w", encoding="utf-8") as f:
        f.write("\n".join(filled))
    return True
