"""The mutation score per file, from the results ``mutmut run`` leaves in ``mutants/``.

    OMP_NUM_THREADS=1 mutmut run
    python scripts/mutation_score.py                 # the table: killed, survived, cosmetic, score
    python scripts/mutation_score.py --survivors     # and each non-cosmetic survivor's edit

A mutant is *cosmetic* when what it changes cannot be a slip a user would see as a wrong value,
gradient, dtype or exception type: only a string literal changed (an error message's wording,
mutmut's ``"XXmessageXX"``), only the message of a ``raise`` line, or a ``__repr__``/``extra_repr``.
The score is ``killed / (killed + survived)`` over the other mutants; a mutant no test reaches
counts as survived.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import io
import json
import re
import sys
import tokenize
from pathlib import Path

ORIGINAL = "__mutmut_orig"


def without_strings(source: str) -> str:
    """The tokens of ``source`` with every string literal replaced by ``S`` (comments and layout dropped)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    tokens = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING or tok.type in getattr(tokenize, "FSTRING_MIDDLE", ()):
            tokens.append("S")
        elif tok.type not in skip:
            tokens.append(tok.string)
    return " ".join(tokens)


def function_bodies(path: Path) -> dict[str, list[str]]:
    """Every function in a mutated file, by name, as its lines (its own name replaced by ``f``).

    The signature stays in: mutmut mutates default arguments too.
    """
    source = path.read_text()
    lines = source.split("\n")
    bodies = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = lines[node.lineno - 1 : node.end_lineno]
            body[0] = body[0].replace(f"def {node.name}(", "def f(", 1)
            bodies[node.name] = body
    return bodies


def edit(original: list[str], mutant: list[str]) -> list[str]:
    """The changed lines, ``-`` then ``+``."""
    return [
        line for line in difflib.unified_diff(original, mutant, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("---", "+++"))
    ]


def is_cosmetic(name: str, original: list[str], mutant: list[str]) -> bool:
    """Only a string, a raise's message, or a repr changed (see the module docstring)."""
    if "repr" in name:
        return True
    try:
        if without_strings("\n".join(original)) == without_strings("\n".join(mutant)):
            return True
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    removed = [line[1:].strip() for line in edit(original, mutant) if line.startswith("-")]
    return bool(removed) and all(line.startswith(("raise ", 'f"', '"', "f'", "'")) for line in removed)


def main() -> int:
    """Print the table (and with --survivors each survivor's edit); 2 if there are no results."""
    parser = argparse.ArgumentParser(description="The mutation score per file, from mutmut's results.")
    parser.add_argument("--mutants", default="mutants", help="mutmut's working copy (default: mutants)")
    parser.add_argument("--survivors", action="store_true", help="print each non-cosmetic survivor's edit")
    args = parser.parse_args()

    metas = sorted(Path(args.mutants).glob("tinyattn/**/*.py.meta"))
    if not metas:
        print(f"no mutmut results under {args.mutants}/: run `OMP_NUM_THREADS=1 mutmut run` first", file=sys.stderr)
        return 2
    total: collections.Counter[str] = collections.Counter()
    survivors: list[tuple[str, list[str]]] = []
    print("| file | killed | survived | cosmetic | score |\n| --- | ---: | ---: | ---: | ---: |")
    for meta in metas:
        path = meta.with_suffix("")  # x.py.meta -> x.py
        bodies = function_bodies(path)
        counts: collections.Counter[str] = collections.Counter()
        for key, exit_code in json.loads(meta.read_text())["exit_code_by_key"].items():
            name = key.split(".")[-1]
            original = bodies.get(re.sub(r"__mutmut_\d+$", ORIGINAL, name), [])
            mutant = bodies.get(name, [])
            if exit_code is None:
                counts["pending"] += 1
            elif is_cosmetic(name, original, mutant):
                counts["cosmetic"] += 1
            elif exit_code in (0, 5, 33):  # 0: the tests passed; 5 / 33: no test reached the mutant
                counts["survived"] += 1
                survivors.append((key + ("" if exit_code == 0 else "  (no test reaches it)"), edit(original, mutant)))
            else:
                counts["killed"] += 1
        total.update(counts)
        scored = counts["killed"] + counts["survived"]
        pending = f" ({counts['pending']} pending)" if counts["pending"] else ""
        print(f"| `{path.relative_to(args.mutants)}` | {counts['killed']} | {counts['survived']} | "
              f"{counts['cosmetic']} | {100 * counts['killed'] / max(scored, 1):.1f}% |{pending}")
    scored = total["killed"] + total["survived"]
    print(f"| total | {total['killed']} | {total['survived']} | {total['cosmetic']} | "
          f"{100 * total['killed'] / max(scored, 1):.1f}% |")
    if args.survivors:
        for key, lines in survivors:
            print(f"\n{key}")
            print("\n".join("    " + line.strip() for line in lines[:6]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
