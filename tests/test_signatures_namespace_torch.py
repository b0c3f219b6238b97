"""The namespace's functions and Tensor methods take torch's arguments: names, order, defaults.

Most of torch's functions are builtins without an ``inspect.signature``; their docstrings open with
the signatures torch documents (``tril(input, diagonal=0, *, out=None) -> Tensor``, one line per
overload). Those lines are parsed here, and each of ours must agree with them:

* every positional parameter of ours sits at the same position, under the same name, in an overload;
* every parameter of ours is one torch documents (or is listed in ``OURS_ONLY`` with the reason);
* a default of ours is torch's default where torch gives one, and where torch's argument is
  optional, ours is too (a call torch accepts is never refused for a missing argument).
"""

import inspect
import math
import re

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import creation, namespace

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

FUNCTIONS = sorted(set(namespace.__all__) | {
    "zeros", "ones", "full", "empty", "eye", "arange", "linspace", "rand", "randn", "randint", "randperm", "normal",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like", "from_numpy",
    "as_tensor", "tensor", "multinomial", "manual_seed", "initial_seed", "seed",
    "get_default_dtype", "set_default_dtype", "set_default_device", "get_default_device", "is_floating_point",
    "cat", "stack", "split", "chunk", "where",
})
# ``to`` has no one signature in torch, only overloads of ``*args``; ``uniform_(from, to)`` cannot be written in
# Python (``from`` is a keyword) and takes ``*bounds``: test_namespace.py and test_in_place.py check each form
# (the methods of tensor.py's sections of torch's everyday methods, after its heading: the ones before it, the
# autograd mechanisms and the chapter's ops, are checked beside their own tests)
_EVERYDAY = inspect.getsource(ta.Tensor).split("\n").index(
    "    # == torch's everyday methods: comparisons, copies, in-place changes, devices and dtypes, sizes... ==")
METHODS = sorted(name for name, value in vars(ta.Tensor).items()
                 if callable(value) and not name.startswith("_") and name not in ("to", "uniform_")
                 and not isinstance(value, type) and name.isascii()  # (mutation testing adds its own names)
                 and inspect.getsourcelines(value)[1] - inspect.getsourcelines(ta.Tensor)[1] > _EVERYDAY)

# What torch documents nowhere in a signature line, but accepts (so ours takes it too).
OURS_ONLY = {
    ("sort", "stable"): "Tensor.sort's docstring omits it; torch.sort documents it and the method takes it",
    ("argsort", "stable"): "Tensor.argsort's docstring omits it; torch.argsort documents it and the method takes it",
    ("all", "numpy"): "np.all(t, axis=...) calls t.all with NumPy's names, which torch's method takes too",
    ("any", "numpy"): "np.any(t, axis=...) calls t.any with NumPy's names, which torch's method takes too",
    **{(name, "size_keyword"): "torch's parser also takes the sizes as size=(...); Python cannot name a parameter "
       "both *size and size=" for name in ("zeros", "ones", "empty", "rand", "randn")},
}
# Required here, optional in torch.
REQUIRED_HERE = {
    ("log_softmax", "dim"): "torch's implicit dim is deprecated (it guesses one and warns)",
}
# A default of ours where torch's differs, each with the reason.
DIFFERENT_DEFAULT = {
    ("topk", "dim"): "torch documents dim=None and means the last dim; -1 says so",
    ("Tensor.topk", "dim"): "torch documents dim=None and means the last dim; -1 says so",
    ("randperm", "dtype"): "torch.int64, the same dtype spelled as ours",
    ("clone", "memory_format"): "no memory formats here (no strides): None",
    ("Tensor.clone", "memory_format"): "no memory formats here (no strides): None",
    ("Tensor.contiguous", "memory_format"): "no memory formats here (no strides): None",
    ("Tensor.is_contiguous", "memory_format"): "no memory formats here (no strides): None",
}


def same_name(ours, theirs):
    """``*dims`` and ``dims`` alike: torch's methods that take sizes take them spread or as one tuple."""
    return ours.lstrip("*") == theirs.lstrip("*")


def documented_signatures(name, doc):
    """The parameter lists in ``doc``'s lines that open with ``name(``: [(name, default or None, keyword_only)]."""
    short = name.rsplit(".", 1)[-1]
    found = []
    for line in (doc or "").splitlines():
        line = line.strip().removeprefix(".. function:: ").replace("\\*", "*")
        match = re.match(rf"(?:torch\.)?(?:Tensor\.)?(?:linalg\.)?{re.escape(short)}\((.*?)\)\s*(->.*)?$", line)
        if not match:
            continue
        params, keyword_only, depth, current = [], False, 0, ""
        for ch in match.group(1) + ",":
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                token = current.strip()
                current = ""
                if not token:
                    continue
                if token == "*":
                    keyword_only = True
                    continue
                pname, _, default = token.partition("=")
                pname = pname.split(":")[0].strip()
                params.append((pname, default.strip() or None, keyword_only))
                keyword_only = keyword_only or pname.startswith("*")
            else:
                current += ch
        found.append(params)
    return found


def torch_value(text):
    value = eval(text, {"torch": torch, "inf": math.inf, "None": None})  # noqa: S307 (torch's own docstring)
    if isinstance(value, torch.dtype):
        return np.dtype(torch.empty(0, dtype=value).numpy().dtype)
    return value


def same_default(ours, text):
    expected = torch_value(text)
    if isinstance(expected, np.dtype):
        return ours is not None and np.dtype(ours) == expected
    return ours == expected and type(ours) is type(expected) or (ours == expected and not isinstance(ours, bool))


def check(label, ours, overloads):
    assert overloads, f"{label}: torch documents no signature line for it"
    params = [p for n, p in inspect.signature(ours).parameters.items() if n != "self"]
    key = label.removeprefix("Tensor.")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    for i, p in enumerate(positional):
        name = ("*" if p.kind == p.VAR_POSITIONAL else "") + p.name
        assert any(i < len(o) and same_name(name, o[i][0]) and not o[i][2] for o in overloads), (
            f"{label}: our positional argument {i} {name!r} is not torch's (torch: {overloads})")
    for p in params:
        name = ("*" if p.kind == p.VAR_POSITIONAL else "") + p.name
        if (key, p.name) in OURS_ONLY:
            continue
        documented = [d for o in overloads for d in o if same_name(name, d[0])]
        assert documented, f"{label}: torch documents no argument {name!r} (torch: {overloads})"
        defaults = [d[1] for d in documented if d[1] is not None]
        if p.default is inspect.Parameter.empty:
            # torch's argument is optional in an overload where ours is required: a torch call fails here
            assert not defaults or any(d[1] is None for d in documented) or (key, p.name) in REQUIRED_HERE, (
                f"{label}: {name!r} needs a default")
        elif defaults and (label, p.name) not in DIFFERENT_DEFAULT and (key, p.name) not in DIFFERENT_DEFAULT:
            assert any(same_default(p.default, d) for d in defaults), (
                f"{label}({name}=...): our default {p.default!r}, torch's {defaults}")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_takes_torchs_arguments(name):
    theirs = getattr(torch, name)
    ours = getattr(ta, name)
    try:
        overloads = [[(n, None if p.default is inspect.Parameter.empty else repr(p.default),
                       p.kind == p.KEYWORD_ONLY) for n, p in inspect.signature(theirs).parameters.items()]]
        if name in ("einsum",):
            overloads = documented_signatures(name, theirs.__doc__)
    except (ValueError, TypeError):
        overloads = documented_signatures(name, theirs.__doc__)
    if not overloads and hasattr(torch.nn.functional, name):  # undocumented at torch.X: F.X's arguments
        overloads = [[(n, None if p.default is inspect.Parameter.empty else repr(p.default), p.kind == p.KEYWORD_ONLY)
                      for n, p in inspect.signature(getattr(torch.nn.functional, name)).parameters.items()]]
    if not overloads:  # undocumented at torch.X: the method's, after `input`
        method_doc = getattr(torch.Tensor, name).__doc__
        overloads = [[("input", None, False), *o] for o in documented_signatures(name, method_doc)]
    if name == "unique":  # a Python wrapper taking (*args, **kwargs): its documented line is its signature
        overloads = documented_signatures(name, theirs.__doc__)
    if name == "norm":  # a Python function: its signature is its documentation
        overloads = [[("input", None, False), ("p", "'fro'", False), ("dim", "None", False),
                      ("keepdim", "False", False), ("out", "None", False), ("dtype", "None", False)]]
    check(name, ours, overloads)


@pytest.mark.parametrize("name", METHODS)
def test_tensor_method_takes_torchs_arguments(name):
    theirs = getattr(torch.Tensor, name)
    if isinstance(theirs, property) or not callable(theirs):
        pytest.fail(f"Tensor.{name}: torch's is not a method")
    try:
        overloads = [[(n, None if p.default is inspect.Parameter.empty else repr(p.default),
                       p.kind == p.KEYWORD_ONLY) for n, p in list(inspect.signature(theirs).parameters.items())[1:]]]
    except (ValueError, TypeError):
        overloads = documented_signatures(name, theirs.__doc__)
    if overloads in ([[]], []) and hasattr(torch, name):  # "logical_and() -> Tensor, see torch.logical_and()"
        overloads = [o[1:] for o in documented_signatures(name, getattr(torch, name).__doc__)] or overloads
    check(f"Tensor.{name}", getattr(ta.Tensor, name), overloads)


def test_the_parser_reads_torchs_lines():
    """The parser itself, on lines of torch's own docstrings."""
    (tril,) = documented_signatures("tril", torch.tril.__doc__)
    assert tril == [("input", None, False), ("diagonal", "0", False), ("out", "None", True)]
    overloads = documented_signatures("randint", torch.randint.__doc__)
    assert overloads[0][:3] == [("low", "0", False), ("high", None, False), ("size", None, False)]
    assert creation.randint is ta.randint
