"""Task markers: parsing, the refusals, and the student/mutant rewrites."""

import ast

import pytest

from tinyattn.homework.markers import MarkerError, parse_file, rewrite, write_package

SOURCE = '''def f(x):
    # BEGIN TASK double
    y = x + x
    # MUTANT: return y + 1
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


def test_parse_regions_stubs_and_mutants():
    regions = parse_file("m.py", "m.py", lines())
    assert [r.task for r in regions] == ["double", "square"]
    double, square = regions
    assert double.indent == "    " and square.stub == ["return None"]
    (mutant,) = double.mutants
    assert mutant.code == "return y + 1" and lines()[mutant.target].strip() == "return y" and mutant.line == 4


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
    regions = parse_file("m.py", "m.py", lines())
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
        ("# BEGIN TASK a\nx = 1\n# MUTANT: x = 2\n# END TASK", "MUTANT has no code line"),
        ("# MUTANT: x = 2\nx = 1", "outside a task region"),
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
