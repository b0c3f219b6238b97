"""What a task's code may do: a policy per task, its code check (evidence) and its mechanisms (verdicts).

A backward task asks the student to *derive* a gradient. It can be answered without
deriving it: by numerical differentiation through a forward (central differences, a stencil,
the complex step), or by calling another part of the shipped package that computes the same
gradient (another op's backward, autograd through other ops). A check of the code cannot tell
derivation from numerical differentiation in general, and every rule it adds can refuse honest
code. So a policy is held in two ways:

1. **its code check** (``check``, in the grader's process, before anything runs): the region's
   code is parsed in its file, and an ``import``, a forbidden name (``eval``, ``getattr``,
   ``complex``...), a forbidden attribute (``.forward``, ``.imag``...), a ``__dunder__``, a
   complex literal, a string naming a complex dtype or, under ``derive``, anything off the
   allow-list (``allowlist.py``) is a *finding*, with its line. The grader reports each as a
   flag for the instructor (``commands.evidence``); the course's ``on_flag`` says whether the
   task keeps its points for review or has them set aside. Type annotations are never checked
   as code. Only code Python cannot read is not run.
2. **its mechanisms**, which decide, whatever the code reads like: at run time, in the child
   (``task_tests/runner.py``), every call the region's lines make into the package's own Python
   code is checked against the functions the policy allows (``unbroadcast``), and any other voids
   the task (``voided``); under a policy that forbids differentiating numerically, each float64
   output scores only within ``PRECISION`` of the reference (``imprecise``: no difference quotient
   gets there), and a large input that takes more CPU time than a derived backward ever does voids
   the task.

The instructor picks a policy per task (``course.toml``, or ``assign --policy task=name``; it is
written into ``manifest.json``): ``derive`` (the default for the backward tasks), ``no-imports``
(the default for the others), ``open``, or a dict of ``Policy``'s fields in ``manifest.json``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import allowlist
from .markers import Region, rewrite

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
    allow_list: bool = False  # may it use only what ``allowlist.py`` lists (syntax, names, attributes, dtypes)
    why: str = ""  # what the policy is for, said to the student with every refusal

    def describe(self) -> str:
        """One line for the student: what this task's code may not do."""
        if self.allow_list:
            helpers = "".join(f", {name}" for name in self.calls or ())
            said = ("may use only its allow-list (plain Python, NumPy's real-valued array functions, the inputs of "
                    f"the function it is written in{helpers})")
            said += "" if self.imports else "; may not import"
            return said + ("" if self.numerical else "; may not differentiate numerically")
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
        attributes=AUTOGRAD_ATTRIBUTES, calls=("unbroadcast",), numerical=False, allow_list=True,
        why="a backward is derived and written out, not computed numerically or by another op's backward"),
}

DEFAULT = "no-imports"  # a task's policy when its course names none


def resolve(spec: str | dict | None, task: str) -> Policy:
    """The ``Policy`` a manifest entry names: a preset's name, a dict of fields (over ``open``), or the default."""
    if spec is None:
        return POLICIES[DEFAULT]
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


def _nul_byte(code: list[str]) -> str:
    """Where ``code`` holds a NUL byte, which Python cannot parse; "" when it does not."""
    for number, line in enumerate(code, 1):
        if "\0" in line:
            return f"a NUL byte (line {number} of your code)"
    return ""


def _parse(code: list[str]) -> tuple[ast.Module, int] | str:
    """The region's code as a tree, read as the file reads it: a block inside the function it sits in (so that a
    comment indented otherwise, with a tab say, changes nothing), and how many lines come before it in the text
    parsed; else why Python cannot read it, with the line (a NUL byte, a syntax error, nesting too deep)."""
    if nul := _nul_byte(code):
        return nul
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


def _text_of(node: ast.AST) -> list[ast.AST]:
    """The text in ``node`` when it is a string that is a statement of its own (a docstring, a string used as a
    comment): the string, or an f-string's literal parts (what is between its braces is code, and runs)."""
    if not isinstance(node, ast.Expr):
        return []
    if isinstance(node.value, ast.Constant):
        return [node.value]
    if isinstance(node.value, ast.JoinedStr):
        return [part for part in node.value.values if isinstance(part, ast.Constant)]
    return []


@dataclass
class Reading:
    """A region's code as the interpreter reads it: its statements, the line of the parsed text its first line is
    on, and what else it can see (``allowlist.Scope``)."""

    nodes: list[ast.AST]
    first: int
    scope: allowlist.Scope
    modules: dict[str, str]  # a module-level name of the file -> what it imports ("numpy", "tinyattn.nn:F")
    _imported: set[int] | None = None

    def imported(self) -> set[int]:
        """The ids of the objects the file's imports bind (the modules it has without reaching for them)."""
        if self._imported is None:
            self._imported = {id(m) for m in (_module_of(s) for s in self.modules.values()) if m is not None}
        return self._imported


def read(code: list[str], policy: Policy, where: tuple[list[str], Region] | None = None) -> Reading | str:
    """Parse ``code``: in its file (``where``: the file's handed-out lines and the region), as it will run there,
    else on its own as a block; or say why Python cannot read it, with the line."""
    if where is None:
        parsed = _parse(code)
        if isinstance(parsed, str):
            return parsed
        tree, shift = parsed
        scope = allowlist.Scope(None, frozenset({"np", "numpy"}) - allowlist.own_names(tree),
                                frozenset(policy.calls or ()), None)
        return Reading(list(tree.body), shift + 1, scope, {"np": "numpy", "numpy": "numpy"})
    if nul := _nul_byte(code):
        return nul
    lines, region = where
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    reference = ast.parse("\n".join(rewrite(lines, [region], blank=set(), spans=spans)))
    outer = _statements_in(reference, *spans[region.key])
    chain = outer[0][1] if outer else []
    text = rewrite(lines, [region], blank=set(), given={region.key: code}, spans=spans)
    first, last = spans[region.key]
    try:
        tree = ast.parse("\n".join(text))
    except SyntaxError as err:
        at = (err.lineno or last) - first + 1
        where_said = f"line {at} of your code" if 1 <= at <= len(code) else "after your code, in its file"
        return f"{type(err).__name__}: {err.msg} ({where_said})"
    except (MemoryError, RecursionError, ValueError):  # nesting deeper than the parser's stack
        return "code nested too deeply for Python's parser"
    nodes = _statements_in(tree, first, last)
    for node, enclosing in nodes:
        if _names(enclosing) != _names(chain):
            return (f"code that leaves the function it is written in (line {node.lineno - first + 1} of your "
                    f"code is not inside {'.'.join(_names(chain)) or 'it'})")
    functions = [n for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inputs = frozenset().union(*(allowlist.own_names(f) for f in functions)) if functions else frozenset()
    modules = _imports(reference, region.path)
    numpy_names = frozenset(n for n, m in modules.items() if m == "numpy")
    defined = {n for n in modules} | {n.name for n in reference.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    helpers = frozenset(n for n in (policy.calls or ()) if n in defined)
    ctx = {n.attr for n in ast.walk(reference) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
           and isinstance(n.value, ast.Name) and n.value.id == "ctx"}
    scope = allowlist.Scope(inputs, numpy_names, helpers, frozenset(ctx))
    return Reading([n for n, _ in nodes], first, scope, modules)


def _statements_in(tree: ast.Module, first: int, last: int) -> list[tuple[ast.stmt, list[ast.AST]]]:
    """The outermost statements on lines ``first..last``, each with the functions and classes it is inside."""
    found: list[tuple[ast.stmt, list[ast.AST]]] = []
    todo: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while todo:
        node, chain = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and first <= child.lineno <= last:
                found.append((child, chain))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo.append((child, chain + [child]))
            elif getattr(child, "end_lineno", last) >= first:  # (what ends before the region holds none of it)
                todo.append((child, chain))
    return sorted(found, key=lambda pair: pair[0].lineno)


def _names(chain: list[ast.AST]) -> list[str]:
    return [getattr(n, "name", "") for n in chain]


def _imports(tree: ast.Module, path: str) -> dict[str, str]:
    """The names the file's own top-level imports bind, each to what it imports: a module (``numpy``), or a name
    from one (``tinyattn.nn:functional``: a module or anything else, found when it is used)."""
    package = ".".join(path.removesuffix(".py").split("/")[:-1])
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}:{alias.name}"
    return names


def _module_of(spec: str) -> Any:
    """The object an import names (``numpy``, ``tinyattn.nn:functional``), imported in the grader; None if it
    cannot be."""
    module, _, name = spec.partition(":")
    try:
        value = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - whatever it is, it is not followed
        return None
    if not name:
        return value
    try:
        return inspect.getattr_static(value, name)
    except AttributeError:
        try:
            return importlib.import_module(f"{module}.{name}")
        except Exception:  # noqa: BLE001
            return None


def _reaches_module(node: ast.Attribute, reading: Reading, own: set[str]) -> str:
    """The module an attribute chain rooted at one of the file's imports ends on, when the file does not import it
    itself (``np.lib.scimath``; each link is judged at its own node), found by reading the attributes without
    running anything; "" else."""
    chain = []
    base: ast.AST = node
    while isinstance(base, ast.Attribute):
        chain.append(base.attr)
        base = base.value
    if not isinstance(base, ast.Name) or base.id in own or base.id not in reading.modules:
        return ""
    if reading.scope.inputs is not None and base.id in reading.scope.inputs:
        return ""
    imported = reading.imported()
    value = _module_of(reading.modules[base.id])
    if value is None:
        return ""
    for number, attr in enumerate(reversed(chain), 1):  # (from the root to this node's attribute)
        try:
            value = inspect.getattr_static(value, attr)
        except AttributeError:
            submodule = _submodule(value, attr)  # a module NumPy, say, imports only when it is first asked for
            return submodule if submodule and number == len(chain) else ""
    return value.__name__ if inspect.ismodule(value) and id(value) not in imported else ""


def _submodule(module: Any, attr: str) -> str:
    """The name of ``module``'s submodule ``attr`` (imported or not), or ""."""
    if not inspect.ismodule(module) or not getattr(module, "__path__", None):
        return ""
    name = f"{module.__name__}.{attr}"
    try:
        return name if importlib.util.find_spec(name) is not None else ""
    except (ImportError, ValueError):
        return ""


def _refuses_attribute(policy: Policy, attr: str) -> bool:
    """Does ``policy`` refuse reading the attribute ``attr`` of any object, by its name?"""
    dunder = not policy.dunder and attr.startswith("__")
    return dunder or attr in policy.attributes or (not policy.complex_numbers and attr in COMPLEX)


def check(code: list[str], policy: Policy, where: tuple[list[str], Region] | None = None) -> list[Refusal]:
    """What in ``code`` (a region's lines) ``policy``'s check finds; [] when nothing (the grader flags each).

    ``where`` is the region's file (its handed-out lines) and the region: the code is then read in it, as it runs,
    and may not leave the function it is in. Code Python cannot read is found under every policy, with its line:
    it could not run, and what cannot be read cannot be checked. Text is never found: comments, docstrings, and
    strings in any words (only a string NumPy reads as a complex dtype is), nor are type annotations."""
    reading = read(code, policy, where)
    if isinstance(reading, str):
        return [Refusal(0, f"{UNREADABLE}: {reading}")]
    text = {id(part) for top in reading.nodes for n in ast.walk(top) for part in _text_of(n)}
    text |= allowlist.annotation_nodes(reading.nodes)  # (type annotations describe the code; they are not checked)
    own_all = set().union(*(allowlist.own_names(n) for n in reading.nodes)) if reading.nodes else set()
    # a name a student may well use for a variable (input, tensor), bound by the code itself, is its own variable;
    # the others (getattr, eval, open, ...) are refused even so: ``getattr = getattr`` would otherwise pass
    own = own_all & set(VARIABLE_NAMES)
    refused = []
    seen: set[int] = set()  # the nodes refused already (each is said once, by the first rule it breaks)

    def refuse(node: ast.AST, what: str) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            refused.append(Refusal(getattr(node, "lineno", reading.first) - reading.first + 1, what))

    for node in (n for top in reading.nodes for n in ast.walk(top)):
        if id(node) in text:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not policy.imports:
            refuse(node, "an import")
        elif isinstance(node, ast.Name):
            if not policy.dunder and node.id.startswith("__"):
                refuse(node, f"the name {node.id}")
            elif node.id not in own and (node.id in policy.names or
                                         (not policy.complex_numbers and node.id in COMPLEX)):
                refuse(node, f"the name {node.id}")
        elif isinstance(node, ast.Attribute):
            if _refuses_attribute(policy, node.attr):
                refuse(node, f"the attribute .{node.attr}")
            elif not policy.imports and (module := _reaches_module(node, reading, own_all)):
                refuse(node, f"the attribute .{node.attr}, which reaches the module {module} (an import by "
                             "another way)")
        elif isinstance(node, ast.MatchClass):  # ``case C(x=...)`` reads the attribute ``x``
            for attr in node.kwd_attrs:
                if _refuses_attribute(policy, attr):
                    refuse(node, f"the attribute .{attr} (read by a case pattern)")
        elif isinstance(node, ast.Constant) and not policy.complex_numbers:
            if isinstance(node.value, complex):
                refuse(node, f"the complex number {node.value!r}")
            elif isinstance(node.value, str) and id(node) not in text and _names_complex_dtype(node.value):
                refuse(node, f"the string {node.value[:40]!r}, which names a complex type")
        elif isinstance(node, ast.alias) and not policy.dunder and node.name.startswith("__"):
            refuse(node, f"the name {node.name}")
    if policy.allow_list:
        allowlist.check(reading.nodes, reading.scope, own_all, refuse, text | seen)
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
# enforced by the grader from outside: the large probe's budget (probing.BUDGET, 30 s, which the child itself
# enforces first, with a message) and as much again for starting Python, NumPy and the other probes. Code that
# swallows the child's own alarm is stopped here, and its task earns nothing.
DERIVED_CPU = 60.0


def voided(task: str, policy: Policy, errors: dict[str, dict], over_cpu: bool = False) -> str:
    """Why every test of ``task`` fails, when the task's code did what a mechanism stops, whatever its code reads
    like: a call into the package its policy does not allow (the run-time watch), or, under a policy that forbids
    differentiating numerically, more CPU time than a derived backward ever takes (the large input's budget, or
    the child's whole CPU time, ``over_cpu``); "" else."""
    if over_cpu and not policy.numerical:
        return (f"{REFUSED}: task {task}'s code {policy.describe()}; at run time, it ran past the CPU limit of "
                f"{DERIVED_CPU:g} s, where a derived backward takes milliseconds (is it differentiating "
                "numerically?)")
    for error in errors.values():
        if error["type"] == "PolicyError" or (error["type"] == "OverBudget" and not policy.numerical):
            return f"{REFUSED}: task {task}'s code {policy.describe()}; at run time, {error['message'][:300]}"
    return ""


# A derived answer computes the same numbers as the reference in another order: in float64, it is right to a few
# units of rounding (under 1e-15 of the output's norm for a 512 x 512 matmul's gradient summed one term at a time).
# A difference quotient is not: its step trades truncation for cancellation, and the best stencils stop far above
# that (softmax's backward: 3e-13 by five points, 7e-14 by seven, 1.8e-14 by nine). Under a policy that forbids
# differentiating numerically, each float64 output scores only within PRECISION of the reference, by its norm.
PRECISION = 5e-15


def imprecise(policy: Policy, name: str, got: Any, want: Any) -> str:
    """Under a policy that forbids differentiating numerically, why the output ``name`` (close to the reference at
    the judges' tolerance) is not as close as derived code computes it; "" when it is, or when no precision is
    asked (another policy, an output that is not float64)."""
    if policy.numerical or want.dtype != np.float64 or got.shape != want.shape:
        return ""
    finite = np.isfinite(want) & np.isfinite(got)
    size = float(np.linalg.norm(want[finite]))
    gap = float(np.linalg.norm(got[finite].astype(np.float64) - want[finite]))
    if gap <= PRECISION * size:
        return ""
    return (f"{name}: right only to {gap / max(size, 1e-300):.1e} of its size, where derived code in float64 is "
            f"right to rounding (within {PRECISION:g}); a difference quotient never is (does it differentiate "
            "numerically, or compute in float32?)")
