"""A Jupyter notebook read as a Python module: its code cells, top to bottom, as a kernel runs them.

A course's task may live in a notebook (``rotary.ipynb``). The grader, the probes and the public
tests import it as the module ``rotary``: the text of its code cells, each after a ``# %%`` line,
with IPython's magics (``%time``, ``!pip ...``, a ``%%bash`` cell) turned into comments (the cell under
``%%time`` or ``%%capture`` runs, as Python), so that every
line keeps its place. Markdown cells, outputs and metadata are not part of it: they cannot change
what the code does, and so cannot earn or cost a point.
"""

import importlib.abc
import importlib.util
import json
import os
import sys

CELL = "# %%"  # the line before each code cell
# Cell magics whose cell is Python, which IPython runs as Python (timing it, capturing its output...)
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun", "%%debug", "%%python", "%%python3")


def module_lines(notebook):
    """The module's lines from a notebook (the parsed JSON of an ``.ipynb``); ``ValueError`` if it is not one."""
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no list of cells)")
    lines = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        cell_lines = cell_source(cell).split("\n")
        magic = cell_lines[0].split()[0] if cell_lines[0].startswith("%%") and cell_lines[0].split() else ""
        if magic and magic not in PYTHON_CELL_MAGICS:  # a cell for another language (%%bash, %%html...)
            cell_lines = ["# " + line for line in cell_lines]
        else:  # (a magic that runs its cell as Python, %%time say, runs it once here: its own line is a comment)
            cell_lines = ["# " + line if line.lstrip().startswith(("%", "!")) else line for line in cell_lines]
        lines += [CELL, *cell_lines]
    return lines


def cell_source(cell):
    """A cell's text (Jupyter writes it as one string or as a list of lines); ``ValueError`` if it is neither."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise ValueError("a code cell's source is neither text nor a list of lines")
    return source


def text_module_lines(text):
    """``module_lines`` of a notebook's file text; ``ValueError`` if it is not a notebook."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError) as err:  # (JSON nested past the parser's depth)
        raise ValueError(f"not a Jupyter notebook (not JSON: {str(err)[:100]})") from None
    return module_lines(notebook)


def read_module_lines(path):
    """``module_lines`` of the notebook at ``path``."""
    with open(path, encoding="utf-8") as f:
        return text_module_lines(f.read())


class _NotebookFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``name`` from ``folder/name.ipynb``."""

    def __init__(self, folder):
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        notebook = os.path.join(self.folder, name + ".ipynb")
        if "." in name or not os.path.isfile(notebook):
            return None
        return importlib.util.spec_from_loader(name, self, origin=notebook)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path = module.__spec__.origin
        module.__file__ = path
        code = compile("\n".join(read_module_lines(path)), path, "exec")
        exec(code, module.__dict__)


def install(folder):
    """Let ``import name`` find ``folder/name.ipynb`` (after every other finder: a ``name.py`` comes first)."""
    if not any(isinstance(f, _NotebookFinder) and f.folder == folder for f in sys.meta_path):
        sys.meta_path.append(_NotebookFinder(folder))
