"""An honest student's code is read whole, whatever it holds and however the file was saved.

Every task region of every file is filled with its reference code plus what real code and
real editors add: blank lines (first, inside, last, several), comment lines, tabs, a copy of
the blank line that follows the stub, the stub's TODO line kept or dropped; and the file is
saved with Windows line ends, a byte-order mark, no final newline or several, trailing
spaces. Each region's code must come back exactly as written, nothing reported as edited
outside the regions, and the graded package must hold the student's lines.
"""

from __future__ import annotations

import ast
import os
import shutil

import pytest

from tinyattn.homework import commands
from tinyattn.homework.markers import STUB, rewrite, write_package
from tinyattn.homework.submission import package_for, read_submission, regions_by_file

from .gradescope_box import Box, require_isolation


def _reference(files, region):
    return [line for line in files[region.path][region.begin + 1 : region.end] if not STUB.match(line)]


def _honest(reference, indent, variant):
    """The reference code with what a student's editor and habits add to it (``variant`` picks which)."""
    code = list(reference)
    if variant in ("blank lines", "all of it"):
        code = ["", *code[:1], "", "", *code[1:], "", ""]
    if variant in ("comments", "all of it"):
        code = [f"{indent}# my answer:", *code, f"{indent}# (checked by hand)", "#", ""]
    if variant in ("tabs", "all of it"):
        code = ["\t# a comment indented by a tab", *code, f"{indent}pass\t# a tab before the comment"]
    if variant == "only blank lines after":
        code = [*code, "", "", ""]
    return code


VARIANTS = ["blank lines", "comments", "tabs", "only blank lines after", "all of it"]
SAVED = {  # how the whole file is saved
    "as handed out": lambda text: text,
    "CRLF line ends": lambda text: text.replace("\n", "\r\n"),
    "a byte-order mark": lambda text: "\ufeff" + text,
    "no final newline": lambda text: text.rstrip("\n"),
    "three final newlines": lambda text: text.rstrip("\n") + "\n\n\n",
    "trailing spaces everywhere": lambda text: text.replace("\n", "   \n"),
    "all of it": lambda text: "\ufeff" + (text.rstrip("\n") + "  ").replace("\n", " \r\n"),
}
TASKS = list(commands.load()[1])


@pytest.fixture(scope="module")
def handed_out(tmp_path_factory):
    files, regions, _, chosen = commands.load()
    copy = tmp_path_factory.mktemp("handed_out") / "student"
    write_package(files, regions, str(copy), blank=set(chosen))
    return files, regions, chosen, copy


def _fill(student_root, files, regions, variant, keep_todo):
    """Put each region's honest code in place of its stub; the lines planted, by region."""
    planted, searched = {}, {}
    for region in sorted((r for rs in regions.values() for r in rs), key=lambda r: r.key):
        path = os.path.join(student_root, region.path)
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
        todo = f"{region.indent}# TODO(task {region.task}): write this part"
        at = lines.index(todo, searched.get(region.path, 0))
        stub_length = 1 + (len(region.stub) or 1)
        code = _honest(_reference(files, region), region.indent, variant)
        if keep_todo:
            code = [todo, *code]
        lines[at : at + stub_length] = code
        planted[region.key] = code
        searched[region.path] = at + len(code)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(lines))
    return planted


def _closing(files, regions):
    """The regions that end their file."""
    return {r.key for rs in regions.values() for r in rs if not "".join(files[r.path][r.end + 1 :]).strip()}


def _save(student_root, files, how):
    for rel in files:
        path = os.path.join(student_root, rel)
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(SAVED[how](text))


@pytest.mark.parametrize("how", list(SAVED))
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_region_of_every_file_is_read_whole(tmp_path, handed_out, variant, how):
    files, regions, chosen, copy = handed_out
    student = tmp_path / "student"
    shutil.copytree(copy, student)
    planted = _fill(str(student), files, regions, variant, keep_todo=variant != "tabs")
    _save(str(student), files, how)
    reading = read_submission(str(student), files, regions, set(chosen))
    assert reading.outside == [] and reading.problems == {}
    for key, code in planted.items():
        if key in _closing(files, regions):  # blank lines that end a file are nobody's code
            code = code[: max(i + 1 for i, line in enumerate(code) if line.strip())]
        spaces = how in ("trailing spaces everywhere", "all of it")
        got = [line.rstrip() for line in reading.code[key]] if spaces else reading.code[key]
        assert got == ([line.rstrip() for line in code] if spaces else code), key
    by_file = regions_by_file(regions)
    for task in chosen:  # the file grading each task holds the student's lines, and parses
        for region in regions[task]:
            text = "\n".join(rewrite(files[region.path], by_file[region.path], blank=set(),
                                     given=package_for(task, regions, reading)))
            assert "\n".join(reading.code[region.key]) in text
            ast.parse(text)


def test_the_blank_line_after_the_last_region_of_a_file_does_not_end_the_students_code(tmp_path, handed_out):
    """softmax.py ends with log_softmax_backward's stub: a blank line in its code must not end the region."""
    files, regions, chosen, copy = handed_out
    student = tmp_path / "student"
    shutil.copytree(copy, student)
    planted = _fill(str(student), files, regions, "blank lines", keep_todo=False)
    last = max(regions["log_softmax_backward"], key=lambda r: r.begin)
    assert last.key in _closing(files, regions)
    reading = read_submission(str(student), files, regions, set(chosen))
    assert reading.code[last.key] == planted[last.key][:-2] and reading.outside == []  # (all but the file's end)


def test_an_edit_outside_the_regions_still_reads_code_with_blank_lines_whole(tmp_path, handed_out):
    """With an import added at the top of the file, the code of the file's last region is still read whole."""
    files, regions, chosen, copy = handed_out
    student = tmp_path / "student"
    shutil.copytree(copy, student)
    planted = _fill(str(student), files, regions, "all of it", keep_todo=True)
    last = max(regions["log_softmax_backward"], key=lambda r: r.begin)
    path = student / last.path
    path.write_text("import math  # added\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    reading = read_submission(str(student), files, regions, set(chosen))
    assert reading.problems == {}
    assert [o.split(": ", 1)[0] for o in reading.outside] == [f"{last.path}:1"]
    assert reading.code[regions["softmax_backward"][0].key] == planted[regions["softmax_backward"][0].key]
    assert reading.code[last.key] == planted[last.key]


def test_an_honest_full_solution_saved_by_an_unkind_editor_scores_everything(tmp_path):
    """Through run_autograder, as the student user: every region holding blank lines, comments and tabs, every
    file saved with CRLF line ends, a byte-order mark and no final newline."""
    venv = require_isolation()
    out = tmp_path / "hw"
    data = commands.assign(str(out), TASKS)
    files, regions, _, chosen = commands.load(TASKS)
    student = tmp_path / "student"
    shutil.copytree(out / "student", student)
    _fill(str(student), files, regions, "all of it", keep_todo=True)
    _save(str(student), files, "all of it")
    box = Box(str(out / "gradescope_autograder.zip"), venv)
    try:
        shutil.copytree(student / "tinyattn", os.path.join(box.submission, "tinyattn"))
        results, log = box.run()
    finally:
        box.remove()
    assert results["score"] == sum(info["points"] for info in data["tasks"].values()), log[-3000:]
    assert "edited outside" not in results.get("output", "")
