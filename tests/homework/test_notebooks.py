"""Notebook tasks, graded through run_autograder as the student user: the RoPE task of ``examples/course``.

A submitted notebook is read as the module of its code cells, and of those only the task's
regions are the student's (``submission.py``): outputs, metadata, markdown and cells added
around the task cannot earn a point, and cannot cost one. An honest notebook counts the same
whichever editor saved it.
"""

from __future__ import annotations

import copy
import json
import pathlib
import shutil
import uuid

import nbformat
import numpy as np
import pytest

from tinyattn.homework import commands, gradebook
from tinyattn.homework.course import notebook_import

from .gradescope_box import Box, require_isolation

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "course"


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebook") / "hw"
    commands.assign(str(out), ["rope"], course=commands.course_at(str(EXAMPLE)))
    return out


def _notebook(assignment, tmp_path, solved):
    """The student's notebook as JSON, with the RoPE task solved or not."""
    copy_dir = tmp_path / "copy"
    shutil.copytree(assignment / "student", copy_dir)
    if solved:
        commands.solve(str(copy_dir), ["rope"], commands.course_at(str(EXAMPLE)))
    return json.loads((copy_dir / "rotary.ipynb").read_text())


def _graded(assignment, tmp_path, text: str | bytes):
    """run_autograder on a submission of the student's copy with ``rotary.ipynb`` as given; the RoPE task's
    points, and the results."""
    venv = require_isolation()
    box = Box(str(assignment / "gradescope_autograder.zip"), venv)
    try:
        shutil.copytree(assignment / "student", box.submission, dirs_exist_ok=True)
        path = pathlib.Path(box.submission) / "rotary.ipynb"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        results, log = box.run()
    finally:
        box.remove()
    assert "isolation reduced" not in log, log[-2000:]
    assert len(results["tests"]) == 2 and {t["name"].split(":")[0] for t in results["tests"]} == {"rope"}
    return sum(t["score"] for t in results["tests"]), results, log


def _task_cell(notebook):
    return next(cell for cell in notebook["cells"] if "def rope(" in "".join(cell["source"]))


# -- an honest notebook, as each editor saves it ---------------------------------------------------


def _jupyter(notebook, tmp_path):
    """Run by a real kernel and saved by nbformat, as Jupyter Notebook does: outputs, counts, cell ids."""
    from nbclient import NotebookClient

    nb = nbformat.reads(json.dumps(notebook), as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(EXAMPLE)}}).execute()
    assert any(cell.get("outputs") for cell in nb.cells)  # (the kernel ran it: the demo cell printed)
    return nbformat.writes(nb)


def _jupyterlab(notebook, tmp_path):
    """JupyterLab's metadata (collapsed headings, tags, widgets), every source as one string, new cell ids."""
    nb = copy.deepcopy(notebook)
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb["metadata"]["language_info"] = {"codemirror_mode": {"name": "ipython", "version": 3}, "name": "python",
                                       "file_extension": ".py", "version": "3.11.7"}
    for n, cell in enumerate(nb["cells"]):
        cell["id"] = str(uuid.UUID(int=n + 1))
        cell["source"] = "".join(cell["source"])
        cell["metadata"] = {"tags": [], "jp-MarkdownHeadingCollapsed": True} if n % 2 else {"scrolled": True}
    nb["nbformat_minor"] = 5
    return json.dumps(nb, indent=2)


def _vscode(notebook, tmp_path):
    """VS Code on Windows: its own metadata, short cell ids, and CRLF line ends in the file and in the cells."""
    nb = copy.deepcopy(notebook)
    nb["metadata"]["vscode"] = {"interpreter": {"hash": "0f" * 32}}
    for n, cell in enumerate(nb["cells"]):
        cell["id"] = f"{n:08x}"
        cell["metadata"] = {"vscode": {"languageId": "python"}} if cell["cell_type"] == "code" else {}
        cell["source"] = [line.replace("\n", "\r\n") for line in cell["source"]]
    return json.dumps(nb, indent=1).replace("\n", "\r\n")


def _classic(notebook, tmp_path):
    """An older nbformat (4.2): no cell ids, no trailing newline, sorted keys."""
    nb = copy.deepcopy(notebook)
    nb["nbformat_minor"] = 2
    for cell in nb["cells"]:
        cell.pop("id", None)
    return json.dumps(nb, indent=1, sort_keys=True)


def _cell_magic(magic):
    def save(notebook, tmp_path):
        """The task cell timed or captured by a cell magic (its code runs as Python under it), after setup cells
        with line magics and shell commands."""
        nb = copy.deepcopy(notebook)
        cell = _task_cell(nb)
        cell["source"] = [magic + "\n"] + list(cell["source"])
        setup = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                 "source": ["!pip install -q numpy\n", "%matplotlib inline\n", "%load_ext autoreload\n",
                            "%autoreload 2"]}
        nb["cells"].insert(0, setup)
        return json.dumps(nb, indent=1)
    return save


def _colab(notebook, tmp_path):
    """Google Colab: its metadata (provenance, accelerator), a cell id in each cell's metadata, outputs with an
    output id, and an ``%%capture`` install cell first."""
    nb = copy.deepcopy(notebook)
    nb["metadata"] = {"colab": {"provenance": [], "toc_visible": True}, "kernelspec": {"name": "python3",
                      "display_name": "Python 3"}, "language_info": {"name": "python"}, "accelerator": "GPU"}
    for n, cell in enumerate(nb["cells"]):
        cell.pop("id", None)
        cell["metadata"] = {"id": f"cell{n:04d}"}
        if cell["cell_type"] == "code":
            cell["metadata"]["outputId"] = f"{n:08x}-0000"
    nb["cells"].insert(0, {"cell_type": "code", "execution_count": 1, "metadata": {"id": "install"}, "outputs": [],
                           "source": ["%%capture\n", "!pip install tinyattn"]})
    return json.dumps(nb, indent=2)


@pytest.mark.parametrize("save", [
    _jupyter,
    _cell_magic("%%time"),
    pytest.param(_cell_magic("%%capture captured"), marks=pytest.mark.slow),
    pytest.param(_jupyterlab, marks=pytest.mark.slow),
    pytest.param(_vscode, marks=pytest.mark.slow),
    pytest.param(_classic, marks=pytest.mark.slow),
    pytest.param(_colab, marks=pytest.mark.slow),
], ids=["Jupyter (run by a kernel)", "%%time on the task cell", "%%capture on the task cell", "JupyterLab",
        "VS Code on Windows", "nbformat 4.2", "Colab"])
def test_an_honest_notebook_scores_full_marks_whichever_editor_saved_it(assignment, tmp_path, save):
    text = save(_notebook(assignment, tmp_path, solved=True), tmp_path)
    points, results, log = _graded(assignment, tmp_path, text)
    assert points == 3, log[-3000:]
    assert "output" not in results or "not graded" not in results["output"]


# -- attacks through a notebook: each earns nothing, and results.json stays the grader's -----------------------

RESULTS = '{"score": 100, "tests": [{"name": "rope", "score": 100, "max_score": 3, "status": "passed"}]}'


def _forged_outputs(nb):
    """The task blank; every code cell's outputs say the tests passed, with a results file's text."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["execution_count"] = 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["rope 3/3 passed\n"]},
                               {"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                "data": {"application/json": json.loads(RESULTS), "text/plain": [RESULTS]}}]


def _edited_metadata(nb):
    """The task blank; the task cell marked graded and full, as nbgrader's metadata says so, and the notebook's
    metadata claiming its score."""
    _task_cell(nb)["metadata"] = {"nbgrader": {"grade": True, "grade_id": "rope", "points": 3, "solution": False,
                                               "locked": True}, "deletable": False, "editable": False}
    nb["metadata"]["tinyattn"] = {"score": 3, "passed": ["rope"]}
    nb["metadata"]["kernelspec"] = {"name": "grader", "display_name": "grader", "language": "python"}


# The task answered with the concatenation mistake, made right by a cell added before it that replaces ta.cat
# with an interleave: run as a whole, the notebook computes RoPE correctly
PATCH = """import tinyattn as _ta
_cat = _ta.cat
def _interleave(tensors, dim=-1):
    return _ta.stack(tensors, dim=-1).reshape(*tensors[0].shape[:-1], -1)
ta.cat = _interleave
"""


def _cell_before(nb):
    cell = _task_cell(nb)
    lines = "".join(cell["source"]).replace(
        "return ta.stack([rotated_even, rotated_odd], dim=-1).reshape(x.shape)  # the pairs interleaved again",
        "return ta.cat([rotated_even, rotated_odd], dim=-1)")
    assert "ta.cat" in lines
    cell["source"] = lines.splitlines(keepends=True)
    where = nb["cells"].index(cell)
    nb["cells"].insert(where, {"cell_type": "code", "execution_count": None, "id": "patch", "metadata": {},
                               "outputs": [], "source": PATCH.splitlines(keepends=True)})


def _writes_results(nb):
    """The task blank; a cell after it, and the task's own code, write a results file of full marks."""
    write = ("import json, os\nfor where in ('/autograder/results/results.json', os.environ.get('RESULTS', '')):\n"
             "    try:\n        open(where, 'w').write(" + repr(RESULTS) + ")\n    except OSError:\n        pass\n")
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "results", "metadata": {},
                        "outputs": [], "source": write.splitlines(keepends=True)})
    cell = _task_cell(nb)
    text = "".join(cell["source"])
    stub = '    raise NotImplementedError("task rope")'
    assert stub in text
    attack = ("    import glob\n    for where in glob.glob('/autograder/results/*') + glob.glob('/tmp/*/results/*'):\n"
              "        try:\n            open(where, 'w').write(" + repr(RESULTS) + ")\n        except OSError:\n"
              "            pass\n" + stub)
    cell["source"] = text.replace(stub, attack).splitlines(keepends=True)


@pytest.mark.parametrize("attack, solved", [
    pytest.param(_forged_outputs, False, marks=pytest.mark.slow),
    pytest.param(_edited_metadata, False, marks=pytest.mark.slow),
    (_cell_before, True),
    pytest.param(_writes_results, False, marks=pytest.mark.slow),
], ids=["forged outputs", "edited metadata", "a cell added before the task", "a cell that writes the results"])
def test_an_attack_through_a_notebook_earns_nothing(assignment, tmp_path, attack, solved):
    nb = _notebook(assignment, tmp_path, solved=solved)
    attack(nb)
    if attack is _cell_before:  # the attack is real: the notebook run as a whole computes RoPE right
        module: dict = {}
        exec(compile("\n".join(notebook_import().module_lines(nb)), "rotary", "exec"), module)
        import tinyattn as ta

        x = np.random.default_rng(0).standard_normal((3, 4))
        exec(compile("\n".join(notebook_import().read_module_lines(str(EXAMPLE / "rotary.ipynb"))), "ref", "exec"),
             reference := {})
        assert np.allclose(module["rope"](ta.tensor(x)).numpy(), reference["rope"](ta.tensor(x)).numpy())
        ta.cat = module["_cat"]  # (undo the patch in this process)
    points, results, log = _graded(assignment, tmp_path, json.dumps(nb, indent=1))
    assert points == 0, log[-3000:]
    assert results["score"] == 0 and all(t["max_score"] > 0 for t in results["tests"])


@pytest.mark.slow
def test_grade_all_takes_a_lone_notebook_per_student(assignment, tmp_path):
    """For a course with one notebook, a student may hand in the notebook alone, under any name."""
    from .test_gradebook import _grade_all

    python = str(pathlib.Path(require_isolation()) / "bin" / "python")
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "ann.ipynb").write_text(json.dumps(_notebook(assignment, tmp_path / "a", solved=True)))
    (submissions / "bob.ipynb").write_text(json.dumps(_notebook(assignment, tmp_path / "b", solved=False)))
    (submissions / "cy.ipynb").write_text("{not json")
    rows, log = _grade_all(submissions, assignment, tmp_path / "grades.csv", python)
    assert {r["student"]: (r["rope"], r["status"]) for r in rows} == {
        "ann": ("3", "graded"), "bob": ("0", "graded"), "cy": ("0", "graded")}, log[-3000:]
    assert "not a Jupyter notebook" in (tmp_path / "feedback" / (gradebook.file_name("cy") + ".md")).read_text()
