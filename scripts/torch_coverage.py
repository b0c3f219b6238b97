"""Which of torch's names a set of programs uses, and which of them ``import tinyattn as torch`` provides.

    python scripts/torch_coverage.py PROGRAM_OR_FOLDER ...           # the table, most used first
    python scripts/torch_coverage.py corpus/ --min-programs 2        # only names two programs or more use
    python scripts/torch_coverage.py corpus/ --json coverage.json    # every name, its programs, provided or not
    python scripts/torch_coverage.py --corpus docs/corpus.json --min-programs 2 --check   # (CI) the recorded corpus
    python scripts/torch_coverage.py --record sources.tsv --root DIR --out docs/corpus.json  # record a corpus

The corpus (``docs/corpus.json``) is a list of public programs: for each its repository, path and
commit, whether it is in the ``build`` set (read while the surface was built) or the ``held-out`` set
(run only to measure), and the names it uses, recorded by this tool from a local copy of the
program. The programs' code is not kept, only the names. ``impossible`` lists, with the reason, the
names a CPU NumPy library cannot provide; ``--check`` fails if a name used by ``--min-programs``
programs or more is neither provided nor listed there. ``--markdown`` writes the table of docs/coverage.md.

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


def record(sources: str, root: str) -> dict:
    """The corpus from local copies: ``sources`` has one line per program, ``local_path<TAB>repo<TAB>path<TAB>commit``
    (a local path under ``held/`` puts the program in the held-out set)."""
    rows = [line.rstrip("\n").split("\t") for line in open(sources, encoding="utf-8") if line.strip()]
    local = {row[0]: read_program(os.path.join(root, row[0])) for row in rows}
    methods = tensor_methods(local)
    programs = []
    for row in rows:
        usage = local[row[0]]
        if usage.problem:
            raise SystemExit(f"{row[0]}: {usage.problem}")
        names = sorted(usage.names | {TENSOR + m for m in usage.called_attributes & methods})
        programs.append({"repo": row[1], "path": row[2], "commit": row[3],
                         "set": "held-out" if row[0].startswith("held/") else "build", "names": names})
    return {"programs": programs}


def corpus_coverage(corpus: dict) -> dict[str, dict]:
    """``name -> {"programs": [...], "provided": bool}`` over a recorded corpus."""
    users: dict[str, set[str]] = defaultdict(set)
    for program in corpus["programs"]:
        for name in program["names"]:
            users[name].add(f"{program['repo']}/{program['path']}")
    return {name: {"programs": sorted(users[name]), "provided": provided(name)} for name in sorted(users)}


def markdown(corpus: dict, table: dict[str, dict], min_programs: int) -> str:
    """docs/coverage.md: the programs, and every name two programs or more use, provided or why not."""
    impossible = corpus.get("impossible", {})
    held = [p for p in corpus["programs"] if p["set"] == "held-out"]
    lines = [
        "# What real programs use, and what tinyattn provides",
        "",
        f"Measured over {len(corpus['programs'])} public PyTorch programs (tutorials, course code, the PyTorch "
        f"examples, small GPT and Llama-style models, textbook code): {len(held)} of them held out, run only to "
        "measure. Each program's names were read by `scripts/torch_coverage.py` from a copy of it; the code is "
        "not kept here, only its names (`docs/corpus.json`). CI runs "
        "`python scripts/torch_coverage.py --corpus docs/corpus.json --min-programs 2 --check`.",
        "",
        "<!-- BEGIN GENERATED: python scripts/torch_coverage.py --corpus docs/corpus.json "
        "--markdown docs/coverage.md -->",
        "",
        f"## Names used by {min_programs} programs or more",
        "",
        "| name | programs | provided |",
        "|---|---:|---|",
    ]
    rows = sorted(((len(v["programs"]), n, v["provided"]) for n, v in table.items()
                   if len(v["programs"]) >= min_programs), key=lambda r: (-r[0], r[1]))
    for count, name, ok in rows:
        verdict = ("yes" if name not in impossible else f"the name exists, the call refuses: {impossible[name]}") \
            if ok else "no: " + impossible.get(name, "MISSING")
        lines.append(f"| `{name}` | {count} | {verdict} |")
    rare = sorted(n for n, v in table.items() if len(v["programs"]) < min_programs and not v["provided"])
    lines += ["", f"## Used by fewer programs and not provided ({len(rare)})", "",
              ", ".join(f"`{n}`" + (f" ({impossible[n]})" if n in impossible else "") for n in rare) or "none",
              "", "## The programs", "", "| set | repository | path | commit |", "|---|---|---|---|"]
    for p in sorted(corpus["programs"], key=lambda p: (p["set"], p["repo"], p["path"])):
        lines.append(f"| {p['set']} | {p['repo']} | `{p['path']}` | `{p['commit'][:10]}` |")
    return "\n".join(lines + ["", "<!-- END GENERATED -->", ""])


def main(argv: list[str] | None = None) -> int:
    """Print the table (and write the JSON); with ``--check``, 1 if a name is missing without a reason."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="programs (.py, .ipynb) or folders of them")
    parser.add_argument("--min-programs", type=int, default=1, help="only names this many programs use")
    parser.add_argument("--json", help="also write every name, its programs and whether it is provided")
    parser.add_argument("--corpus", help="a recorded corpus (docs/corpus.json) instead of program files")
    parser.add_argument("--check", action="store_true", help="exit 1 if a counted name is missing without a reason")
    parser.add_argument("--markdown", help="write the table for the docs (with --corpus)")
    parser.add_argument("--record", help="a sources list (local path, repo, path, commit per line) to record")
    parser.add_argument("--root", default=".", help="where --record's local paths are")
    parser.add_argument("--out", help="where --record writes the corpus (keeping its 'impossible' reasons)")
    args = parser.parse_args(argv)
    if args.record:
        corpus = record(args.record, args.root)
        if args.out and os.path.exists(args.out):
            with open(args.out, encoding="utf-8") as f:
                corpus["impossible"] = json.load(f).get("impossible", {})
        with open(args.out or "corpus.json", "w", encoding="utf-8") as f:
            json.dump(corpus, f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    corpus = None
    if args.corpus:
        with open(args.corpus, encoding="utf-8") as f:
            corpus = json.load(f)
        table = corpus_coverage(corpus)
    elif args.paths:
        table = coverage(args.paths)
    else:
        parser.error("give programs, or --corpus, or --record")
    if args.markdown and corpus is not None:
        with open(args.markdown, encoding="utf-8") as f:
            text = f.read()
        begin, end = "<!-- BEGIN GENERATED", "<!-- END GENERATED -->"
        generated = markdown(corpus, table, args.min_programs)
        if begin in text:
            head = text[:text.index(begin)]
            tail = text[text.index(end) + len(end):]
            generated = head + generated[generated.index(begin):].rstrip("\n") + tail
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(generated)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1)
    rows = sorted(((len(v["programs"]), name, v["provided"]) for name, v in table.items()
                   if len(v["programs"]) >= args.min_programs), key=lambda r: (-r[0], r[1]))
    width = max([len("name")] + [len(r[1]) for r in rows])
    print(f"{'name':<{width}}  programs  provided")
    refusing = corpus.get("impossible", {}) if corpus is not None else {}
    for count, name, ok in rows:  # (a name that exists but whose call refuses, with its reason, says so)
        print(f"{name:<{width}}  {count:>8}  {('refuses' if name in refusing else 'yes') if ok else 'NO'}")
    missing = sum(not ok for _, _, ok in rows)
    print(f"\n{len(rows)} names used by {args.min_programs} or more programs: {len(rows) - missing} provided, "
          f"{missing} not")
    if corpus is not None:
        impossible = corpus.get("impossible", {})
        unexplained = [name for _, name, ok in rows if not ok and name not in impossible]
        for name in sorted({name for _, name, ok in rows if not ok} - set(unexplained)):
            print(f"  {name}: not provided: {impossible[name]}")
        if args.check and unexplained:
            print(f"missing, with no reason given in the corpus: {', '.join(unexplained)}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
