"""Task markers: parsing, the refusals, the common mistakes attached to them, and the student/mutant rewrites."""

import ast

import pytest

from tinyattn.homework.course import Mistake
from tinyattn.homework.markers import MarkerError, find_regions, parse_file, rewrite, write_package

SOURCE = '''def f(x):
    # BEGIN TASK double
    y = x + x
    return y
    # END TASK


def g(x):
    # BEGIN TASK square
    # STUB: return None
    return x * x
    # END TASK
'''


def lines(text=SOURCE):
    return text.split("\n")


MISTAKES = (Mistake("double", "return y", "return y + 1", "off by one"),)


def regions_with_mistakes(mistakes=MISTAKES):
    return find_regions({"m.py": lines()}, mistakes)


def test_parse_regions_stubs_and_mistakes():
    assert [r.task for r in parse_file("m.py", "m.py", lines())] == ["double", "square"]
    (double,), (square,) = regions_with_mistakes().values()
    assert double.indent == "    " and square.stub == ["return None"]
    (mutant,) = double.mutants
    assert mutant.code == "return y + 1" and lines()[mutant.target].strip() == "return y" and mutant.line == 4
    assert mutant.path == "m.py" and mutant.why == "off by one"


@pytest.mark.parametrize(
    "mistake,message",
    [
        (Mistake("double", "return x", "return 0", ""), "is not in the regions of task double"),
        (Mistake("square", "y = x + x", "y = 0", ""), "is not in the regions of task square"),  # another task's line
        (Mistake("triple", "return y", "return 0", ""), "task 'triple' has no region"),
    ],
)
def test_a_mistake_must_name_one_line_of_its_task(mistake, message):
    with pytest.raises(MarkerError, match=message):
        regions_with_mistakes((mistake,))


def test_student_copy_blanks_chosen_tasks_and_drops_every_marker():
    regions = parse_file("m.py", "m.py", lines())
    text = "\n".join(rewrite(lines(), regions, blank={"double", "square"}))
    ast.parse(text)
    assert "# TODO(task double): write this part" in text
    assert 'raise NotImplementedError("task double")' in text
    assert "# TODO(task square): write this part\n    return None" in text
    for leftover in ("BEGIN TASK", "END TASK", "MUTANT", "STUB", "x + x", "x * x", "y + 1"):
        assert leftover not in text
    namespace = {}
    exec(text, namespace)
    with pytest.raises(NotImplementedError, match="task double"):
        namespace["f"](2)
    assert namespace["g"](3) is None


def test_reference_and_mutant_rewrites_run():
    regions = [r for rs in regions_with_mistakes().values() for r in rs]
    reference, mutated = {}, {}
    exec("\n".join(rewrite(lines(), regions, blank=set())), reference)
    exec("\n".join(rewrite(lines(), regions, blank=set(), mutant=regions[0].mutants[0])), mutated)
    assert reference["f"](2) == 4 and reference["g"](3) == 9
    assert mutated["f"](2) == 5


@pytest.mark.parametrize(
    "text,message",
    [
        ("# BEGIN TASK a\n# BEGIN TASK b\nx = 1\n# END TASK\n# END TASK", "nested"),
        ("x = 1\n# END TASK", "without BEGIN"),
        ("# BEGIN TASK a\nx = 1\n", "never closed"),
        ("# BEGIN TASK a\n# just a comment\n# END TASK", "has no code"),
        ("# BEGIN TASK a\nx = 1\n# MUTANT: x = 2\n# END TASK", "belong in course.toml"),
        ("# STUB: x = 2\nx = 1", "outside a task region"),
        ("# BEGIN TASK\nx = 1\n# END TASK", "malformed"),
    ],
)
def test_unbalanced_or_malformed_markers_are_refused(text, message):
    with pytest.raises(MarkerError, match=message):
        parse_file("bad.py", "bad.py", text.split("\n"))


def test_output_that_does_not_parse_is_refused(tmp_path):
    text = "x = (\n    # BEGIN TASK t\n    1 +\n    # END TASK\n    2)\n"
    regions = parse_file("pkg/m.py", "pkg/m.py", text.split("\n"))
    with pytest.raises(MarkerError, match="does not parse"):
        write_package({"pkg/m.py": text.split("\n")}, {"t": regions}, str(tmp_path), blank={"t"})
    assert not (tmp_path / "pkg" / "m.py").exists()


def test_the_instructors_homework_note_leaves_every_copy():
    text = '"""A module.\n\nHomework: the markers in this file\nmark tasks; see the docs.\n\nMore.\n"""\nx = 1'
    out = "\n".join(rewrite(text.split("\n"), [], blank=set()))
    assert out == '"""A module.\n\nMore.\n"""\nx = 1'
