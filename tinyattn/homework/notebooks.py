"""A course's notebooks: the student's copy of one, and a solution put back into it.

A notebook's task regions are in its code cells, marked as in a file. The grader reads a notebook
as a module (``task_tests/notebook_import.py``); what is written here is for people: the student's
notebook keeps every cell, its metadata and the notebook's own, with each task region stubbed and
every output cleared (outputs of the reference would show the answers).
"""

from __future__ import annotations

import json
import os

from .course import notebook_import
from .markers import MarkerError, Region, fill_lines, parse_file, rewrite


def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _save(notebook: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(notebook, f, indent=1, ensure_ascii=False)
        f.write("\n")


def _source(cell: dict) -> list[str]:
    return str(notebook_import().cell_source(cell)).split("\n")


def _set_source(cell: dict, lines: list[str]) -> None:
    text = "\n".join(lines)
    cell["source"] = text.splitlines(keepends=True)  # (the list of lines Jupyter writes)


def student_notebook(source: str, dest: str, blank: set[str]) -> None:
    """Write the notebook ``source`` to ``dest`` with the regions of the tasks in ``blank`` stubbed, the others'
    markers removed, and every output and execution count cleared."""
    notebook = _load(source)
    for n, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        lines = _source(cell)
        regions = parse_file(source, f"{os.path.basename(source)}, cell {n + 1}", lines)
        _set_source(cell, rewrite(lines, regions, blank) if regions else lines)
        cell["outputs"] = []
        cell["execution_count"] = None
    _save(notebook, dest)


def fill_notebook(path: str, region: Region, reference: list[str]) -> bool:
    """Put the reference code of ``region`` (from the module's lines ``reference``) back in place of its stub in
    the student's notebook at ``path``; True if the stub was found."""
    notebook = _load(path)
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        lines = _source(cell)
        filled = fill_lines(lines, region, reference)
        if filled is not None:
            _set_source(cell, filled)
            _save(notebook, path)
            return True
    return False


__all__ = ["MarkerError", "fill_notebook", "student_notebook"]
