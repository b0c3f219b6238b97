"""What a task's code may call: a policy per task, checked on the code before it runs and watched while it runs.

A backward task asks the student to *derive* a gradient. It can be answered without
deriving it: by numerical differentiation through a forward (central differences, or the
complex step, which in float64 matches to 1e-7), or by calling another part of the shipped
package that computes the same gradient (another op's backward, autograd through other
ops). A policy names what the task's code may not do, and the grader holds it twice:

1. **on the code** (``check``, in the grader's process, before anything runs): the region's
   code is parsed, and an ``import``, a forbidden name (``eval``, ``getattr``, ``complex``...),
   a forbidden attribute (``.forward``, ``.backward``, ``.imag``...), any ``__dunder__``
   (the way around every name rule), a complex literal (``1j``) or a string naming a complex
   dtype is refused, with its line;
2. **at run time** (``task_tests/runner.py``, in the child): every call the region's lines make
   into the package's own Python code is checked against the functions the policy allows (a
   helper the task needs, such as ``unbroadcast``); any other fails the probe that made it.

A third line is the probes': a hidden probe of each backward task runs on an input large
enough that differentiating numerically takes minutes, under a time budget of seconds.

The instructor picks a policy per task (``assign --policy task=name``; it is written into
``manifest.json``): ``derive`` (the default for the backward tasks), ``no-imports`` (the
default for the others), ``open``, or a dict of ``Policy``'s fields in ``manifest.json``.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

# What lets code reach anything by a name it builds: a policy that forbids imports forbids these too
DYNAMIC = ("eval", "exec", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars", "__import__",
           "open", "breakpoint", "input", "memoryview", "help")
COMPLEX = ("complex", "complex64", "complex128", "complex256", "complex_", "csingle", "cdouble", "clongdouble",
           "imag", "conj", "conjugate", "iscomplex", "iscomplexobj", "real_if_close")


@dataclass(frozen=True)
class Policy:
    """What a task's code may not do (``names``, ``attributes``: identifiers it may not use), and what it may
    call in the package at run time (``calls``: function names; None for anything)."""

    name: str = "open"
    imports: bool = True
    dunder: bool = True  # may it name ``__x__`` attributes and names
    complex_numbers: bool = True
    names: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    calls: tuple[str, ...] | None = None
    numerical: bool = True  # may it differentiate numerically (False: a probe over its time budget voids the task)
    why: str = ""  # what the policy is for, said to the student with every refusal

    def describe(self) -> str:
        """One line for the student: what this task's code may not do."""
        parts = [] if self.imports else ["import"]
        parts += [] if self.dunder else ["use __dunder__ names"]
        parts += [] if self.complex_numbers else ["use complex numbers"]
        parts += [f"use {', '.join(self.attributes)} of any object"] if self.attributes else []
        parts += [f"call {', '.join(self.names)}"] if self.names else []
        if self.calls is not None:
            allowed = ", ".join(self.calls) or "none"
            parts.append(f"call the package's own functions (allowed: {allowed})")
        parts += [] if self.numerical else ["differentiate numerically"]
        return "may not " + "; ".join(parts) if parts else "may use anything"


# Refused names that honest code may bind as its own variables (then they are no builtin, nor the package's)
VARIABLE_NAMES = ("input", "help", "tensor", "Tensor")

# Autograd and the ops: as attributes (an op's forward or backward, a tensor's .grad, NumPy's gradient),
# and as names (what a module imports to build a graph); a local variable may well be called ``grad``
AUTOGRAD_ATTRIBUTES = ("forward", "backward", "apply", "grad", "requires_grad", "requires_grad_", "retain_grad",
                       "gradient", "no_grad", "enable_grad", "autograd", "Tensor", "tensor", "vjp", "jvp")
AUTOGRAD_NAMES = ("no_grad", "enable_grad", "autograd", "Tensor", "tensor")

POLICIES: dict[str, Policy] = {
    "open": Policy(),
    "no-imports": Policy(
        "no-imports", imports=False, dunder=False, names=DYNAMIC,
        why="the task's code uses only what its file gives it"),
    "derive": Policy(
        "derive", imports=False, dunder=False, complex_numbers=False, names=DYNAMIC + AUTOGRAD_NAMES,
        attributes=AUTOGRAD_ATTRIBUTES, calls=("unbroadcast",), numerical=False,
        why="a backward is derived and written out, not computed numerically or by another op's backward"),
}

BACKWARD_TASKS = ("unbroadcast", "matmul_backward", "shape_backward", "softmax_backward", "log_softmax_backward")


def default_for(task: str) -> str:
    """The policy a task gets unless the instructor picks another."""
    return "derive" if task in BACKWARD_TASKS else "no-imports"


def resolve(spec: str | dict | None, task: str) -> Policy:
    """The ``Policy`` a manifest entry names: a preset's name, a dict of fields (over ``open``), or the default."""
    if spec is None:
        return POLICIES[default_for(task)]
    if isinstance(spec, str):
        if spec not in POLICIES:
            raise ValueError(f"task {task}: unknown policy {spec!r} (known: {', '.join(POLICIES)})")
        return POLICIES[spec]
    if not isinstance(spec, dict):
        raise TypeError(f"task {task}: a policy is a name or a dict of fields, got {type(spec).__name__}")
    known = {f.name for f in dataclasses.fields(Policy)}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(f"task {task}: unknown policy field(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()}
    return Policy(**{"name": "custom", **values})


def as_manifest(policy: Policy) -> str | dict:
    """How ``policy`` is written into manifest.json: its preset's name, or its fields."""
    if POLICIES.get(policy.name) == policy:
        return policy.name
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(policy).items()}


UNREADABLE = "code Python cannot read"  # a refusal of code that does not parse


@dataclass
class Refusal:
    """One thing the code does that its policy forbids."""

    line: int  # 1-based, within the region's code
    what: str


def _parse(code: list[str]) -> tuple[ast.Module, int] | str:
    """The region's code as a tree, read as the file reads it: a block inside the function it sits in (so that a
    comment indented otherwise, with a tab say, changes nothing), and how many lines come before it in the text
    parsed; else why Python cannot read it, with the line (a NUL byte, a syntax error, nesting too deep)."""
    for number, line in enumerate(code, 1):
        if "\0" in line:
            return f"a NUL byte (line {number} of your code)"
    why = ""
    for text, before in (("if True:\n" + "\n".join(code), 1), (textwrap.dedent("\n".join(code)), 0)):
        try:
            return ast.parse(text), before
        except SyntaxError as err:  # (the second reading's error is kept: code that is not indented reads there)
            where = f" (line {err.lineno - before} of your code)" if err.lineno and err.lineno > before else ""
            why = f"{type(err).__name__}: {err.msg}{where}"
        except (MemoryError, RecursionError):  # nesting deeper than the parser's stack
            why = "code nested too deeply for Python's parser"
    return why


def _names_complex_dtype(text: str) -> bool:
    """Would NumPy read ``text`` as a complex dtype, or one holding a complex field ("c16", "complex64", "f8,c8")?
    Words in messages ("the complexity is linear") are no dtype, and are never refused."""
    if len(text) > 200:
        return False
    try:
        dtype = np.dtype(text)
    except Exception:  # noqa: BLE001 - not a dtype at all
        return False
    return _holds_complex(dtype)


def _holds_complex(dtype: np.dtype) -> bool:
    if dtype.kind == "c":
        return True
    if dtype.subdtype is not None:
        return _holds_complex(dtype.subdtype[0])
    return any(_holds_complex(field[0]) for field in (dtype.fields or {}).values())


def _is_text(node: ast.AST) -> bool:
    """A string that is a statement of its own (a docstring, a string used as a comment): it computes nothing."""
    return isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr))


def check(code: list[str], policy: Policy) -> list[Refusal]:
    """What in ``code`` (a region's lines) ``policy`` refuses; [] when nothing. Code Python cannot read is refused
    under every policy, with its line: it could not run, and what cannot be read cannot be checked. Text is never
    refused: comments, docstrings, and strings in any words (only a string NumPy reads as a complex dtype is)."""
    parsed = _parse(code)
    if isinstance(parsed, str):
        return [Refusal(0, f"{UNREADABLE}: {parsed}")]
    tree, shift = parsed
    text = {id(part) for n in ast.walk(tree) if _is_text(n) for part in ast.walk(n)}
    # a name a student may well use for a variable (input, tensor), bound by the code itself, is its own variable;
    # the others (getattr, eval, open, ...) are refused even so: ``getattr = getattr`` would otherwise pass
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    own |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    own &= set(VARIABLE_NAMES)
    refused = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0) - shift
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not policy.imports:
            refused.append(Refusal(line, "an import"))
        elif isinstance(node, ast.Name):
            if not policy.dunder and node.id.startswith("__"):
                refused.append(Refusal(line, f"the name {node.id}"))
            elif node.id not in own and (node.id in policy.names or
                                         (not policy.complex_numbers and node.id in COMPLEX)):
                refused.append(Refusal(line, f"the name {node.id}"))
        elif isinstance(node, ast.Attribute):
            if not policy.dunder and node.attr.startswith("__"):
                refused.append(Refusal(line, f"the attribute .{node.attr}"))
            elif node.attr in policy.attributes or (not policy.complex_numbers and node.attr in COMPLEX):
                refused.append(Refusal(line, f"the attribute .{node.attr}"))
        elif isinstance(node, ast.Constant) and not policy.complex_numbers:
            if isinstance(node.value, complex):
                refused.append(Refusal(line, f"the complex number {node.value!r}"))
            elif isinstance(node.value, str) and id(node) not in text and _names_complex_dtype(node.value):
                refused.append(Refusal(line, f"the string {node.value[:40]!r}, which names a complex type"))
        elif isinstance(node, ast.alias) and not policy.dunder and node.name.startswith("__"):
            refused.append(Refusal(line, f"the name {node.name}"))
    return sorted(refused, key=lambda r: r.line)


REFUSED = "refused by the task's policy"  # in every refusal's message, what a failure for this reason says


def refusal_message(task: str, policy: Policy, refused: list[Refusal]) -> str:
    """What the student reads when the policy refuses their code (or when Python cannot read it)."""
    unreadable = [r for r in refused if r.what.startswith(UNREADABLE)]
    if unreadable:
        return f"not run: task {task}'s {unreadable[0].what}"
    first = "; ".join(f"{r.what} (line {r.line} of your code)" for r in refused[:5])
    more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
    why = f" ({policy.why})" if policy.why else ""
    return f"{REFUSED}, not run: task {task}'s code {policy.describe()}{why}; yours uses {first}{more}"


# The CPU seconds a child grading a task that may not differentiate numerically may use in all, measured and
# enforced by the grader from outside: the large probe's budget (probes.BUDGET, 30 s, which the child itself
# enforces first, with a message) and as much again for starting Python, NumPy and the other probes. Code that
# swallows the child's own alarm is stopped here, and its task earns nothing.
DERIVED_CPU = 60.0


def voided(task: str, policy: Policy, errors: dict[str, dict], over_cpu: bool = False) -> str:
    """Why every test of ``task`` fails, when one probe found the code breaking the policy at run time (a call
    it may not make, or the large input's time budget: numerical differentiation), or when the grader stopped
    the child at its CPU time (``over_cpu``) under a policy that forbids differentiating numerically; "" else."""
    if over_cpu and not policy.numerical:
        return (f"{REFUSED}: task {task}'s code {policy.describe()}; at run time, it used more than "
                f"{DERIVED_CPU:g} s of CPU time, where a derived backward takes milliseconds (is it differentiating "
                "numerically?)")
    for error in errors.values():
        if error["type"] == "PolicyError" or (error["type"] == "OverBudget" and not policy.numerical):
            return f"{REFUSED}: task {task}'s code {policy.describe()}; at run time, {error['message'][:300]}"
    return ""
