"""The allow-list (``allowlist.py``) and the code read in its file: what passes, what is refused, with its line.

The attacks through run_autograder are in ``test_attacks_allowlist.py``; the honest code there is (every
task's reference and mistakes, written the ways students write) is never refused (``test_policy.py``).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from tinyattn.homework import allowlist, commands, policy

DERIVE = policy.POLICIES["derive"]
NO_IMPORTS = policy.POLICIES["no-imports"]
FILES, REGIONS, _, _ = commands.load()


def _in(task, code, rule=DERIVE):
    """What ``rule`` refuses of ``code`` (lines without indentation) put in ``task``'s first region, in its file."""
    region = REGIONS[task][0]
    lines = [region.indent + line if line else line for line in code]
    return [(r.line, r.what) for r in policy.check(lines, rule, (FILES[region.path], region))]


def test_every_numpy_entry_is_a_function_a_ufunc_a_real_type_or_a_constant_and_none_is_a_module():
    for name in allowlist.NUMPY:
        value = getattr(np, name)
        assert not inspect.ismodule(value), name
        if isinstance(value, type):
            assert not issubclass(value, np.complexfloating), name
        else:
            assert callable(value) or isinstance(value, (int, float)) or value is None, name  # (newaxis is None)


def test_no_attribute_on_the_list_is_one_of_numpy_s_modules_or_a_way_to_complex_values():
    for name in allowlist.ATTRIBUTES | allowlist.UFUNC_METHODS:
        assert not inspect.ismodule(getattr(np, name, None)), name
    assert not {"real", "imag", "conj", "view", "base", "ctypes", "data", "flat"} & allowlist.ATTRIBUTES


@pytest.mark.parametrize("line, what", [
    ("s = np.f2py", "the attribute .f2py"),
    ("s = np.lib.scimath.sqrt(-1.0)", "the attribute .lib"),
    ("r = grad_output.real", "the attribute .real"),
    ("r = grad_output.view(np.float32)", "the attribute .view"),
    ("r = np.ndindex", "the attribute .ndindex of NumPy"),
    ("r = Softmax", "the name Softmax"),
    ("r = normalize_dim(0, 1)", "the name normalize_dim"),
    ("r = type(ctx)", "the name type"),
    ("z = grad_output.astype('61c'[::-1])", "the dtype '61c'[::-1]"),
    ("z = np.zeros(3, '61c'[::-1])", "the dtype '61c'[::-1]"),
    ("z = np.zeros(3, dtype=np.cdouble)", "the attribute .cdouble"),
    ("t = '61c'[::-1]\nz = grad_output.astype(t)", "the dtype t"),
    ("for t in ['c16']:\n    z = grad_output.astype(t)", "the string 'c16'"),
    ("try:\n    pass\nexcept Exception:\n    pass", "the syntax Try"),
    ("with ctx:\n    pass", "the syntax With"),
    ("class A:\n    pass", "the syntax ClassDef"),
    ("global np", "the syntax Global"),
    ("f'{type(ctx)}'", "the name type"),
])
def test_what_is_not_on_the_list_is_refused_with_its_line(line, what):
    code = ["(y,) = ctx.saved_tensors", *line.split("\n"), "return (y,)"]
    refused = _in("softmax_backward", code)
    assert refused and refused[0][0] >= 2 and any(w.startswith(what) for _, w in refused), refused


@pytest.mark.parametrize("line", [
    "z = grad_output.astype(y.dtype)",
    "z = grad_output.astype(np.float64)",
    "z = np.zeros(y.shape, dtype=float)",
    "kind = y.dtype\nz = np.zeros(y.shape, kind)",
    "z = np.einsum('ij,ij->i', y.reshape(len(y), -1), grad_output.reshape(len(y), -1))",
    "z = np.add.reduce(y, axis=ctx.dim, keepdims=True)",
    "z = [row.sum() for row in y]",
    "z = (lambda a: a * 2)(y)",
    "while False:\n    break",
    "assert y.shape == grad_output.shape, f'shapes {y.shape} and {grad_output.shape} differ'",
    "z = sorted(range(y.ndim), key=lambda i: -i)",
])
def test_what_honest_code_writes_passes(line):
    code = ["(y,) = ctx.saved_tensors", *line.split("\n"), "return (y,)"]
    assert _in("softmax_backward", code) == []


def test_the_function_s_own_inputs_and_its_policy_s_helpers_may_be_used():
    """matmul's backward sees a, b, da and db (set before its region) and unbroadcast; unbroadcast its shape and
    dtype parameters; nothing of their files besides."""
    assert _in("matmul_backward", ["da = unbroadcast(grad_output @ b.swapaxes(-1, -2), a.shape)",
                                   "db = unbroadcast(a.swapaxes(-1, -2) @ grad_output, b.shape)"]) == []
    assert _in("unbroadcast", ["grad = grad.astype(dtype)"]) == []
    assert _in("matmul_backward", ["da = _vector_backward(ctx, a, b, grad_output)"]) == [
        (1, "the name _vector_backward (not among what this task's code may use)")]


def test_code_that_leaves_its_function_is_refused_as_the_interpreter_would_read_it():
    """A region that dedents out of its function runs in the class body (at import, before any watch), and the
    next lines of the file run on inside a function of its own: on its own it may parse; in its file it leaves."""
    code = ["    leaked = 1", "", "    def more(ctx):", "        pass"]  # (the file's next line: return da, db)
    region = REGIONS["matmul_backward"][0]
    assert policy.check(code, DERIVE) == []  # (read alone, as a block, it is a statement and a function)
    refused = [(r.line, r.what) for r in policy.check(code, DERIVE, (FILES[region.path], region))]
    assert len(refused) == 1 and refused[0][1].startswith(policy.UNREADABLE)
    assert "code that leaves the function it is written in (line 1 of your code" in refused[0][1], refused


def test_a_syntax_error_after_the_code_is_said_to_be_after_it():
    refused = _in("softmax_backward", ["return (grad_output,"])
    assert refused == [(0, f"{policy.UNREADABLE}: SyntaxError: '(' was never closed (line 1 of your code)")]


@pytest.mark.parametrize("line, what", [
    ("s = np.f2py.sys", "the attribute .f2py, which reaches the module numpy.f2py"),
    ("s = np.lib.scimath.sqrt(-1.0)", "the attribute .lib, which reaches the module numpy.lib"),
    ("match np:\n    case object(__dict__=d):\n        pass", "the attribute .__dict__ (read by a case pattern)"),
])
def test_under_no_imports_a_module_reached_by_attributes_or_a_dunder_read_by_a_pattern_is_refused(line, what):
    refused = _in("attention", line.split("\n"), NO_IMPORTS)
    assert any(w.startswith(what) for _, w in refused), refused


def test_under_no_imports_what_the_file_imports_may_be_used():
    assert _in("attention", ["s = np.sqrt(2.0)", "t = math.sqrt(2.0)"], NO_IMPORTS) == []
