"""The call policy on the code (``policy.check``): what it refuses, and that it refuses no honest code.

The false-positive rate is measured on the honest code there is: every task's reference and every
common mistake of the library's course (an honest wrong answer, which must fail on its values, never be
refused), each also written the ways students write (blank lines, comments, tabs). It must be 0.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tinyattn.homework import commands, policy
from tinyattn.homework.course import SHIPPED, load_course
from tinyattn.homework.markers import region_variants, rewrite

from .test_submission import VARIANTS, _honest, _reference


def _honest_variants():
    files, regions, _, _ = commands.load()
    for task, task_regions in regions.items():
        for region in task_regions:
            for name, code in region_variants(files[region.path], region):
                for variant in VARIANTS:
                    yield task, f"{name} ({variant})", _honest(code, region.indent, variant), (files[region.path],
                                                                                              region)


def test_no_honest_code_is_refused_by_its_task_s_default_policy():
    """Read alone and in its file, as the grader reads it, under the policy the library's course gives the task."""
    checked, refused = 0, []
    shipped = load_course(SHIPPED).tasks
    for task, name, code, where in _honest_variants():
        checked += 1
        rule = policy.resolve(shipped[task].policy, task)
        found = policy.check(code, rule) + policy.check(code, rule, where)
        if found:
            refused.append((task, name, found))
    assert checked >= 200 and refused == [], f"{len(refused)} of {checked} honest variants refused: {refused[:3]}"


DERIVE = policy.POLICIES["derive"]


@pytest.mark.parametrize("code, what", [
    ("import tinyattn", "an import"),
    ("from tinyattn import tensor", "an import"),
    ("f = eval('1')", "the name eval"),
    ("f = getattr(ctx, 'x')", "the name getattr"),
    ("k = ctx.__class__", "the attribute .__class__"),
    ("b = __builtins__", "the name __builtins__"),
    ("z = x + 1e-30j", "the complex number 1e-30j"),
    ("z = x.astype('complex128')", "the string 'complex128'"),
    ("z = x.astype(np.complex128)", "the attribute .complex128"),
    ("z = complex(1, 2)", "the name complex"),
    ("g = z.imag", "the attribute .imag"),
    ("y = Softmax.forward(ctx, x, dim=1)", "the attribute .forward"),
    ("y = Softmax.apply(x)", "the attribute .apply"),
    ("g = t.grad", "the attribute .grad"),
    ("t.backward(g)", "the attribute .backward"),
    ("g = np.gradient(y)", "the attribute .gradient"),
    ("t = tensor(x)", "the name tensor"),
])
def test_the_derive_policy_refuses_each_shortcut_with_its_line(code, what):
    refused = policy.check(["        (y,) = ctx.saved_tensors", "        " + code], DERIVE)
    assert any(r.line == 2 and r.what.startswith(what) for r in refused), refused
    assert all(r.line == 2 for r in refused)  # (the honest first line is not refused)


def test_a_comment_indented_with_a_tab_does_not_hide_the_code_from_the_check():
    """(A dedent finds no common indentation there, and the code would not parse on its own.)"""
    code = ["\t# mine", "        import tinyattn", "        return (grad_output,)"]
    assert [(r.line, r.what) for r in policy.check(code, DERIVE)] == [(2, "an import")]
    assert [(r.line, r.what) for r in policy.check(["x = 1", "import os"], DERIVE)] == [(2, "an import")]


def test_a_local_variable_may_have_any_name():
    code = ["grad = grad_output * 2", "forward = backward = gradient = grad", "return (grad,)"]
    assert policy.check(code, DERIVE) == []
    own = ["(input,) = ctx.saved_tensors", "tensor = input * 2", "scale = (lambda input: input * 2)(3)",
           "return (tensor * scale,)"]
    assert policy.check(own, DERIVE) == []  # (its own variables, not the builtins)
    assert [r.what for r in policy.check(["return (open(x),)"], DERIVE)] == ["the name open"]
    rebound = policy.check(["getattr = getattr", "k = getattr(ctx, '__cl' + 'ass__')"], DERIVE)
    assert [(r.line, r.what) for r in rebound] == [(1, "the name getattr"), (1, "the name getattr"),
                                                   (2, "the name getattr")]


@pytest.mark.parametrize("code, why", [
    (["        x = 1", "        return (", "        import os"],
     "SyntaxError: '(' was never closed (line 2 of your code)"),
    (["        x = 1", "        y = 2  # \0"], "a NUL byte (line 2 of your code)"),
    (["        z = " + "-" * 200_000 + "1"], "code nested too deeply for Python's parser"),
], ids=["a syntax error", "a NUL byte", "nesting deeper than the parser goes"])
def test_code_python_cannot_read_is_refused_under_every_policy_with_its_line(code, why):
    """(What cannot be read cannot be checked; it could not run either.)"""
    for rule in policy.POLICIES.values():
        refused = policy.check(code, rule)
        assert [r.what for r in refused] == [f"{policy.UNREADABLE}: {why}"]
        assert policy.refusal_message("t", rule, refused) == f"not run: task t's {policy.UNREADABLE}: {why}"


def test_text_is_never_refused_in_any_words():
    """Docstrings, comments and strings that speak of complexity, in any language, with non-ASCII names."""
    code = ['        """Linear complexity: no complex Jacobian is formed (复杂度是线性的)."""',
            "        # the complex step would be cheating; this is the formula",
            "        größe = (grad_output * y).sum(axis=ctx.dim, keepdims=True)  # complexité linéaire",
            "        if größe.ndim > 9:",
            "            raise ValueError(f'too complex an input: {größe.shape} (complexity)')",
            "        f'complex128'",
            "        return (y * (grad_output - größe),)"]
    assert policy.check(code, DERIVE) == []


@pytest.mark.parametrize("text", ["c16", "complex64", "D", "<c8", "f8,c16", "(2,)c8", "complex"])
def test_a_string_numpy_reads_as_a_complex_dtype_is_refused(text):
    refused = policy.check([f"        z = x.astype({text!r})"], DERIVE)
    assert [r.what for r in refused] == [f"the string {text!r}, which names a complex type"]
    assert policy.check([f"        z = x.astype({text!r})"], policy.POLICIES["open"]) == []


def test_the_open_policy_refuses_nothing_and_the_message_names_rule_line_and_reason():
    code = ["import os", "z = 1j"]
    assert policy.check(code, policy.POLICIES["open"]) == []
    message = policy.refusal_message("softmax_backward", DERIVE, policy.check(code, DERIVE))
    assert message.startswith(policy.REFUSED)
    assert "an import (line 1 of your code)" in message and "the complex number 1j (line 2" in message
    assert DERIVE.why in message


def test_policies_resolve_by_name_by_fields_and_by_default_and_refuse_what_they_do_not_know():
    shipped = load_course(SHIPPED).tasks  # the library's course names each task's policy
    assert policy.resolve(shipped["softmax_backward"].policy, "softmax_backward") is DERIVE
    assert policy.resolve(shipped["attention"].policy, "attention") is policy.POLICIES["no-imports"]
    assert policy.resolve(None, "anything") is policy.POLICIES["no-imports"]  # a task whose course names none
    custom = policy.resolve({"imports": False, "calls": ["unbroadcast"]}, "matmul_backward")
    assert custom.calls == ("unbroadcast",) and not custom.imports and custom.dunder
    assert policy.resolve(policy.as_manifest(custom), "matmul_backward") == custom
    assert policy.as_manifest(DERIVE) == "derive"
    with pytest.raises(ValueError, match=r"unknown policy 'strict' \(known: open, no-imports, derive\)"):
        policy.resolve("strict", "softmax_backward")
    with pytest.raises(ValueError, match="unknown policy field"):
        policy.resolve({"imprts": False}, "softmax_backward")
    with pytest.raises(TypeError, match="a policy is a name or a dict"):
        policy.resolve(3, "softmax_backward")


def test_assign_writes_each_task_s_policy_and_tells_the_student(tmp_path):
    out = tmp_path / "hw"
    commands.assign(str(out), ["softmax_backward", "attention"], {"attention": "open"})
    manifest = json.loads((out / "autograder" / "manifest.json").read_text())
    assert manifest["tasks"]["softmax_backward"]["policy"] == "derive"
    assert manifest["tasks"]["attention"]["policy"] == "open"
    readme = (out / "student" / "README_STUDENT.md").read_text()
    assert "- `softmax_backward`: your code may use only its allow-list" in readme
    assert "may not import" in readme and "differentiate numerically" in readme
    assert "- `attention`: your code may use anything" in readme
    with pytest.raises(commands.HomeworkError, match="not assigned: adam_step"):
        commands.assign(str(tmp_path / "other"), ["softmax_backward"], {"adam_step": "open"})
    with pytest.raises(commands.HomeworkError, match="unknown policy"):
        commands.assign(str(tmp_path / "third"), ["softmax_backward"], {"softmax_backward": "strict"})


def test_each_mistake_s_variant_holds_its_wrong_line_in_place_of_the_reference_s():
    files, regions, _, _ = commands.load()
    for region in (r for rs in regions.values() for r in rs):
        (_, reference), *mistakes = region_variants(files[region.path], region)
        assert reference == _reference(files, region)
        for (what, code), planted in zip(mistakes, region.mutants):
            assert what == planted.code.strip() and len(code) == len(reference)
            assert [line.strip() for line in code if line not in reference] == [planted.code.strip()]


def test_rewrite_says_where_each_region_lies_in_the_written_file():
    """The run-time watch needs each task's lines in the package the child imports."""
    files, regions, _, _ = commands.load()
    path = "tinyattn/optim/adam.py"
    mine = [r for rs in regions.values() for r in rs if r.path == path]
    given = {mine[0].key: ["            m = m  # one", "            v = v  # two"]}
    spans: dict = {}
    text = rewrite(files[path], mine, blank=set(), given=given, spans=spans)
    first, last = spans[mine[0].key]
    assert text[first - 1 : last] == given[mine[0].key]
    first, last = spans[mine[1].key]
    assert text[first - 1 : last] == _reference(files, mine[1])


# -- the precision asked of derived code: measured, against what difference quotients reach ---------------------

def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(z, axis=-1):
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _layer_norm(z, axis=-1):
    centered = z - z.mean(axis=axis, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis=axis, keepdims=True) + 1e-5)


def _gelu(z, axis=-1):
    return z * 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))


STENCILS = {5: ([1, -8, 8, -1], [-2, -1, 1, 2], 12), 7: ([-1, 9, -45, 45, -9, 1], [-3, -2, -1, 1, 2, 3], 60),
            9: ([3, -32, 168, -672, 672, -168, 32, -3], [-4, -3, -2, -1, 1, 2, 3, 4], 840)}


def _best_stencil_error(f, points, x, dy, exact, steps=31):
    """The smallest error, by norm, of ``dyᵀ J`` by a central stencil of ``points`` points, over steps 1e-4..1e-1,
    each element's derivative a difference of forwards (a directional one along dY for softmax, whose Jacobian is
    symmetric)."""
    weights, offsets, scale = STENCILS[points]
    best = np.inf
    for h in np.logspace(-4, -1, steps):
        got = np.zeros_like(x)
        if f is _softmax:
            got = sum(w * f(x + o * h * dy) for w, o in zip(weights, offsets)) / (scale * h)
        else:
            for i in np.ndindex(x.shape):
                step = np.zeros_like(x)
                step[i] = h
                got[i] = sum(w * (dy * f(x + o * step)).sum() for w, o in zip(weights, offsets)) / (scale * h)
        best = min(best, np.linalg.norm(got - exact) / np.linalg.norm(exact))
    return best


def _analytic(f, x, dy):
    if f is _softmax:
        y = _softmax(x)
        return y * (dy - (dy * y).sum(-1, keepdims=True))
    if f is _log_softmax:
        return dy - np.exp(_log_softmax(x)) * dy.sum(-1, keepdims=True)
    if f is _layer_norm:
        x_hat = _layer_norm(x)
        inv_std = 1 / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        return (dy - dy.mean(-1, keepdims=True) - x_hat * (dy * x_hat).mean(-1, keepdims=True)) * inv_std
    pdf = np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
    return dy * (0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))) + x * pdf)


@pytest.mark.parametrize("f", [_softmax, _log_softmax, _layer_norm, _gelu],
                         ids=["softmax", "log_softmax", "layernorm", "gelu"])
def test_no_stencil_reaches_the_precision_asked_of_a_derived_backward(f):
    """For each nonlinear backward task (the shipped course's and examples/course's), the best five-, seven- and
    nine-point stencils, at their best step, stay above ``policy.PRECISION``; so do central differences."""
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    exact = _analytic(f, x, dy)
    for points in STENCILS:  # (on a coarser grid of steps than the numbers below: an error it finds is no smaller)
        assert _best_stencil_error(f, points, x, dy, exact, steps=13) > 2 * policy.PRECISION, (f.__name__, points)


def test_the_numbers_the_precision_rests_on():
    """policy.py and docs/teaching.md: a reordered derived answer is off by less than 1e-15 (a 512 x 512 matmul's
    gradient summed one term at a time: 7.5e-16 with one NumPy's BLAS, 3.3e-16 with another's); softmax's
    backward along dY by the best stencils, 3e-13, 7e-14, 1.8e-14;
    the precision asked, 5e-15, between the two."""
    rng = np.random.default_rng(1)
    g, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    one_at_a_time = np.zeros((512, 512))
    for j in range(512):
        one_at_a_time += np.outer(g[:, j], b[:, j])
    reordered = np.linalg.norm(one_at_a_time - g @ b.T) / np.linalg.norm(g @ b.T)
    assert 0 < reordered < 1e-15
    x, dy = rng.standard_normal((4, 3000)), rng.standard_normal((4, 3000))
    exact = _analytic(_softmax, x, dy)
    stated = {5: 3e-13, 7: 7e-14, 9: 1.8e-14}
    for points, said in stated.items():
        measured = _best_stencil_error(_softmax, points, x, dy, exact)
        assert said / 2 < measured < said * 2, (points, measured)
    assert reordered * 5 < policy.PRECISION < min(stated.values()) / 3
