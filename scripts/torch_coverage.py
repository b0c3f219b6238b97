"""Which of torch's names a set of programs uses, and which of them ``import tinyattn as torch`` provides.

    python scripts/torch_coverage.py PROGRAM_OR_FOLDER ...           # the table, most used first
    python scripts/torch_coverage.py corpus/ --min-programs 2        # only names two programs or more use
    python scripts/torch_coverage.py corpus/ --json coverage.json    # every name, its programs, provided or not

A program is a ``.py`` file or a notebook's code cells (``.ipynb``). It is read, never run: its
imports say which local names stand for torch (``import torch as t``, ``import torch.nn as nn``,
``from torch.nn import functional as F``, ``from torch.utils.data import DataLoader``), and
every attribute chain from one of them (``F.relu``, ``nn.init.xavier_uniform_``,
``torch.backends.cudnn.benchmark``) is a name used, written out in full (``torch.nn.functional.relu``),
as is every module path imported (``torch.utils.data.dataloader``). Tensor methods are the
attributes called on anything (``x.view(...)``, ``loss.backward()``) whose name is a method of
``torch.Tensor``; that list is read from torch when it is installed (without it, only the
methods tinyattn's Tensor has are seen, so no missing method can be found: install torch).

A name is provided when the same path, ``torch`` replaced by ``tinyattn``, resolves to a module or
an attribute (``importlib`` and ``getattr``), and a Tensor method when ``tinyattn.Tensor`` has it.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field

TENSOR = "Tensor."  # the prefix of a Tensor method's entry: "Tensor.view"


@dataclass
class Usage:
    """The names one program uses (full torch paths, and ``Tensor.<method>`` for methods)."""

    names: set[str] = field(default_factory=set)
    called_attributes: set[str] = field(default_factory=set)  # every ``x.name(...)`` called, whatever ``x``
    problem: str = ""  # why the program could not be read, if it could not


def _code_of(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not path.endswith(".ipynb"):
        return text
    cells = json.loads(text).get("cells", [])
    lines = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            lines += [line for line in source.splitlines() if not line.lstrip().startswith(("!", "%"))]
    return "\n".join(lines)


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None if the chain does not start at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def read_program(path: str) -> Usage:
    """The torch names the program at ``path`` uses."""
    usage = Usage()
    try:
        tree = ast.parse(_code_of(path), filename=path)
    except (SyntaxError, ValueError, OSError) as err:
        usage.problem = f"{type(err).__name__}: {err}"
        return usage
    aliases: dict[str, str] = {}  # a local name -> the torch path it stands for
    imported: set[str] = set()  # the module paths the program imports (kept even where a longer name starts so)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    usage.names.add(alias.name)
                    imported.add(alias.name)
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
                node.module == "torch" or node.module.startswith("torch.")):
            usage.names.add(node.module)
            imported.add(node.module)
            for alias in node.names:
                if alias.name != "*":
                    full = f"{node.module}.{alias.name}"
                    usage.names.add(full)
                    aliases[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _chain(node)
            if parts and parts[0] in aliases:
                usage.names.add(".".join([aliases[parts[0]], *parts[1:]]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            parts = _chain(node.func)
            if not (parts and parts[0] in aliases):  # (torch.ones(...) is a function of torch's, no method)
                usage.called_attributes.add(node.func.attr)
    # a chain's prefixes on the way (torch.nn in torch.nn.Linear) are not names used, unless imported as modules
    usage.names = {n for n in usage.names if n in imported or not any(m.startswith(n + ".") for m in usage.names)}
    return usage


def provided(name: str) -> bool:
    """Does ``import tinyattn as torch`` give ``name`` (a torch path, or ``Tensor.<method>``)?"""
    import tinyattn

    if name.startswith(TENSOR):
        return hasattr(tinyattn.Tensor, name[len(TENSOR):])
    parts = ["tinyattn", *name.split(".")[1:]]
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes from it
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
            return True
        except AttributeError:
            return False
    return False


def tensor_methods(programs: dict[str, Usage]) -> set[str]:
    """torch.Tensor's method names: from torch, or (without it) what tinyattn's Tensor and namespace know."""
    try:
        import torch

        return {n for n in dir(torch.Tensor) if not n.startswith("_")}
    except ImportError:
        import tinyattn

        called = set().union(*(u.called_attributes for u in programs.values())) if programs else set()
        return {n for n in called if hasattr(tinyattn.Tensor, n)}


def programs_in(paths: list[str]) -> list[str]:
    """The ``.py`` and ``.ipynb`` files among ``paths`` and in the folders among them, sorted."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for here, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(here, f) for f in sorted(files) if f.endswith((".py", ".ipynb"))]
        else:
            found.append(path)
    return found


def coverage(paths: list[str]) -> dict[str, dict]:
    """``name -> {"programs": [...], "provided": bool}`` over the programs under ``paths``."""
    programs = {path: read_program(path) for path in programs_in(paths)}
    methods = tensor_methods(programs)
    users: dict[str, set[str]] = defaultdict(set)
    for path, usage in programs.items():
        for name in usage.names:
            users[name].add(path)
        for attribute in usage.called_attributes & methods:
            users[TENSOR + attribute].add(path)
    return {name: {"programs": sorted(users[name]), "provided": provided(name)} for name in sorted(users)}


def main(argv: list[str] | None = None) -> int:
    """Print the table (and write the JSON); the exit status is 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="programs (.py, .ipynb) or folders of them")
    parser.add_argument("--min-programs", type=int, default=1, help="only names this many programs use")
    parser.add_argument("--json", help="also write every name, its programs and whether it is provided")
    args = parser.parse_args(argv)
    table = coverage(args.paths)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1)
    rows = sorted(((len(v["programs"]), name, v["provided"]) for name, v in table.items()
                   if len(v["programs"]) >= args.min_programs), key=lambda r: (-r[0], r[1]))
    width = max([len("name")] + [len(r[1]) for r in rows])
    print(f"{'name':<{width}}  programs  provided")
    for count, name, ok in rows:
        print(f"{name:<{width}}  {count:>8}  {'yes' if ok else 'NO'}")
    missing = sum(not ok for _, _, ok in rows)
    print(f"\n{len(rows)} names used by {args.min_programs} or more programs: {len(rows) - missing} provided, "
          f"{missing} not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
