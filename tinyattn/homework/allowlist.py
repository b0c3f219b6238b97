"""What a region's code may be written with, as lists of what is allowed: syntax, names, attributes.

A deny-list refuses what it names and lets through everything it forgot (a module reached through
NumPy's attributes, an attribute read by a ``case`` pattern, a complex dtype spelled another way).
An allow-list turns that around: under a policy with one (``derive``), a region's code may use

- the **syntax** of ``SYNTAX``: expressions, assignments, ``if``/``for``/``while``, helpers defined
  with ``def`` or ``lambda``, ``return``, ``raise``, ``assert``; never ``import``, ``class``, ``try``,
  ``with``, ``global``, ``match``...;
- the **names** it binds itself, the inputs of the function it sits in (its parameters and locals),
  the builtins of ``BUILTINS``, NumPy (as the file imports it) and the helpers the policy allows;
- the **attributes** of ``NUMPY`` on NumPy (array functions, ufuncs, real dtypes, constants), of
  ``UFUNC_METHODS`` on a ufunc, and of ``ATTRIBUTES`` on anything else (an array's shape and
  methods, a tuple's or list's), plus the attributes the file itself sets on ``ctx``;
- a **dtype** (``dtype=``, ``.astype(...)``, or where a function of ``DTYPE_AT`` takes it by
  position) only as an array's ``.dtype``, a real NumPy type of ``NUMPY``, ``float``/``int``/``bool``,
  a string that names no complex type, or a name the code binds to one of these (or the function's own
  input).

Text is never code: docstrings, comments and strings are not refused for their words.
The tables are data; ``tests/homework/test_allowlist.py`` checks each NumPy entry is what it claims.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

SYNTAX: tuple[type, ...] = (
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.If, ast.For, ast.While,
    ast.Break, ast.Continue, ast.Pass, ast.Assert, ast.Raise, ast.Delete, ast.FunctionDef, ast.Lambda,
    ast.arguments, ast.arg, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.Set, ast.Starred, ast.Call, ast.keyword, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.Constant, ast.JoinedStr,
    ast.FormattedValue, ast.NamedExpr,
    ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop,  # (Load, Add, Not, Lt, And...)
)

BUILTINS = frozenset("""
    len range tuple list dict set frozenset enumerate zip min max abs sum int float bool sorted reversed any all
    isinstance slice round divmod pow map filter print
    ValueError TypeError RuntimeError IndexError KeyError NotImplementedError ZeroDivisionError ArithmeticError
    AssertionError Exception MemoryError OverflowError FloatingPointError
""".split())

# NumPy's real-valued array functions, ufuncs, real dtypes and constants: no submodule, nothing complex
NUMPY = frozenset("""
    exp log log1p expm1 log2 log10 exp2 sqrt cbrt square abs absolute fabs sign maximum minimum fmax fmin where
    sum mean max min amax amin prod cumsum cumprod var std median matmul dot vdot inner einsum tensordot outer
    transpose swapaxes moveaxis reshape expand_dims squeeze broadcast_to broadcast_arrays ravel
    zeros ones zeros_like ones_like empty empty_like full full_like eye identity arange linspace
    array asarray ascontiguousarray copy concatenate stack hstack vstack split
    tanh sinh cosh sin cos tan arcsin arccos arctan arctan2 arcsinh arccosh arctanh hypot clip
    multiply add subtract divide true_divide floor_divide negative positive reciprocal power mod remainder
    logaddexp logaddexp2 isfinite isnan isinf nan_to_num heaviside floor ceil round rint trunc
    equal not_equal greater greater_equal less less_equal logical_and logical_or logical_not logical_xor
    all any argmax argmin count_nonzero nonzero atleast_1d atleast_2d atleast_3d tril triu diag diagonal trace
    repeat tile pad flip roll ndim shape size sort argsort take take_along_axis
    allclose isclose array_equal
    ndarray float16 float32 float64 int8 int16 int32 int64 uint8 intp bool_ floating integer
    newaxis inf pi e nan
""".split())

UFUNC_METHODS = frozenset(("reduce", "accumulate", "outer"))

# What honest code reads on an array, a tuple, a list, a dict or a dtype; on ``ctx``, the Context's own
ATTRIBUTES = frozenset("""
    shape ndim size dtype T mT itemsize kind
    sum mean max min prod cumsum cumprod var std reshape swapaxes transpose squeeze astype copy ravel flatten clip
    dot any all argmax argmin argsort item repeat take fill nonzero tolist
    append extend insert pop index count items keys values get
    add update discard remove union intersection difference issubset issuperset
    saved_tensors needs_input_grad
""".split())

# Where a function takes a dtype by position: NumPy's name (or an array method's) -> the argument's index
DTYPE_AT = {
    "zeros": 1, "ones": 1, "empty": 1, "full": 2, "identity": 1, "eye": 3, "arange": 3, "linspace": 5,
    "array": 1, "asarray": 1, "ascontiguousarray": 1, "zeros_like": 1, "ones_like": 1, "empty_like": 1,
    "full_like": 2, "sum": 2, "mean": 2, "prod": 2, "cumsum": 2, "cumprod": 2, "var": 2, "std": 2, "trace": 4,
}
METHOD_DTYPE_AT = {"astype": 0, "sum": 1, "mean": 1, "prod": 1, "cumsum": 1, "cumprod": 1, "var": 1, "std": 1}
REAL_TYPES = frozenset(("float", "int", "bool"))


class Scope:
    """What a region's code can see besides itself: the inputs of the function it sits in, the name NumPy has in
    its file, the helpers the policy allows, and the attributes the file sets on ``ctx``."""

    def __init__(self, inputs: frozenset[str] | None, numpy_names: frozenset[str], helpers: frozenset[str],
                 ctx_attributes: frozenset[str] | None) -> None:
        self.inputs = inputs  # None: not known (a region checked without its file): any name it does not bind
        self.numpy_names = numpy_names
        self.helpers = helpers
        self.ctx_attributes = ctx_attributes  # None: not known (any attribute of ``ctx``)


TYPE_EXPRESSION: tuple[type, ...] = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant,
                                      ast.BinOp, ast.BitOr, ast.Load)


def annotation_nodes(nodes: list[ast.AST]) -> set[int]:
    """The ids of every node inside the type annotations of ``nodes`` (``x: Context``, ``-> np.ndarray``) that
    are type expressions (names, attributes, subscripts, ``A | B``, strings): they describe the code, and are
    never checked as code. An annotation holding anything else (a call, a lambda) is code, and is checked."""
    found: set[int] = set()
    for top in nodes:
        for node in ast.walk(top):
            held: list[ast.AST | None] = []
            if isinstance(node, ast.arg):
                held = [node.annotation]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                held = [node.returns]
            elif isinstance(node, ast.AnnAssign):
                held = [node.annotation]
            for annotation in held:
                parts = list(ast.walk(annotation)) if annotation is not None else []
                if parts and all(isinstance(part, TYPE_EXPRESSION) for part in parts):
                    found |= {id(part) for part in parts}
    return found


def own_names(tree: ast.AST) -> set[str]:
    """The names a piece of code binds itself: assigned, deleted, parameters, functions it defines."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    names |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    return names


def check(nodes: list[ast.AST], scope: Scope, own: set[str], refuse: Callable[[ast.AST, str], None],
          skip: set[int]) -> None:
    """Call ``refuse(node, what)`` for each thing in ``nodes`` (a region's statements, which bind the names
    ``own``) outside the allow-list. ``skip`` holds the ids of the nodes not to look into: text (docstrings), and
    what was refused already; nor is what lies inside syntax that is refused looked into."""
    dtype_names = _dtype_names(nodes, own, scope)
    todo = list(reversed(nodes))
    while todo:
        node = todo.pop()
        if id(node) in skip:
            continue
        if not isinstance(node, SYNTAX):
            refuse(node, f"the syntax {type(node).__name__} (not among what this task's code may use)")
            continue
        todo.extend(reversed(list(ast.iter_child_nodes(node))))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            _name(node, own, scope, refuse)
        elif isinstance(node, ast.Attribute):
            _attribute(node, scope, own, refuse)
        elif isinstance(node, ast.Call):
            for arg in _dtype_arguments(node, scope, own):
                if not _is_real_dtype(arg, scope, own, dtype_names):
                    refuse(arg, f"the dtype {_shown(arg)} (a dtype here is an array's .dtype, a real NumPy "
                                "type, float, int or bool)")


def _name(node: ast.Name, own: set[str], scope: Scope, refuse: Callable[[ast.AST, str], None]) -> None:
    name = node.id
    if name in own or name in BUILTINS or name in scope.numpy_names or name in scope.helpers:
        return
    if scope.inputs is None or name in scope.inputs:
        return
    refuse(node, f"the name {name} (not among what this task's code may use)")


def _is_numpy(node: ast.AST, scope: Scope, own: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in scope.numpy_names and node.id not in own


def _attribute(node: ast.Attribute, scope: Scope, own: set[str], refuse: Callable[[ast.AST, str], None]) -> None:
    base, attr = node.value, node.attr
    if _is_numpy(base, scope, own):
        if attr not in NUMPY:
            refuse(node, f"the attribute .{attr} of NumPy (not among the array functions this task's code may use)")
        return
    if isinstance(base, ast.Attribute) and _is_numpy(base.value, scope, own):
        if attr not in UFUNC_METHODS:
            refuse(node, f"the attribute .{attr} (not among what this task's code may use)")
        return
    if attr in ATTRIBUTES:
        return
    if isinstance(base, ast.Name) and base.id == "ctx" and (scope.ctx_attributes is None
                                                             or attr in scope.ctx_attributes):
        return
    refuse(node, f"the attribute .{attr} (not among what this task's code may use)")


def _dtype_arguments(call: ast.Call, scope: Scope, own: set[str]) -> list[ast.expr]:
    """The arguments of ``call`` that are dtypes: ``dtype=``, or by position where ``DTYPE_AT`` says."""
    found = [k.value for k in call.keywords if k.arg == "dtype"]
    func = call.func
    if isinstance(func, ast.Attribute):
        at = DTYPE_AT.get(func.attr) if _is_numpy(func.value, scope, own) else METHOD_DTYPE_AT.get(func.attr)
        if at is not None and at < len(call.args):
            found.append(call.args[at])
    return found


def _is_real_dtype(arg: ast.expr, scope: Scope, own: set[str], dtype_names: set[str]) -> bool:
    """An array's ``.dtype``, ``np.<real type>``, ``float``/``int``/``bool``, a string constant (checked as text
    naming a complex type elsewhere), None, or a name bound only to such values (or the function's own input)."""
    if isinstance(arg, ast.Constant) and (arg.value is None or isinstance(arg.value, str)):
        return True
    if isinstance(arg, ast.Attribute):
        return arg.attr == "dtype" or (_is_numpy(arg.value, scope, own) and arg.attr in NUMPY)
    if isinstance(arg, ast.Name):
        unknown_input = scope.inputs is None and arg.id not in own
        return arg.id in REAL_TYPES or arg.id in dtype_names or unknown_input
    return False


def _dtype_names(nodes: list[ast.AST], own: set[str], scope: Scope) -> set[str]:
    """Names that can stand for a dtype: the function's inputs the code does not rebind (any name it does not bind,
    when the inputs are not known), and names every binding of which is ``name = <a real dtype>``."""
    plain: dict[str, list[ast.expr]] = {}
    plain_targets = set()
    for top in nodes:
        for node in ast.walk(top):
            targets = [t for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.Assign) and len(targets) == len(node.targets):
                for target in targets:
                    plain.setdefault(target.id, []).append(node.value)
                    plain_targets.add(id(target))
    bound_otherwise = set()  # a loop's target, an unpacking, a parameter, a def: never a dtype
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plain_targets:
                bound_otherwise.add(node.id)
            elif isinstance(node, ast.arg):
                bound_otherwise.add(node.arg)
            elif isinstance(node, ast.FunctionDef):
                bound_otherwise.add(node.name)
    names = {n for n in (scope.inputs or set()) if n not in own}
    for _ in range(3):  # (a name bound to another such name)
        for name, values in plain.items():
            if name not in bound_otherwise and all(_is_real_dtype(v, scope, own, names) for v in values):
                names.add(name)
    return names


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."
