"""Attacks on the code check that a deny-list lets through, graded through run_autograder under ``derive``.

Each is a correct softmax backward obtained without deriving it, written as a student with the grader's
source in hand would write it, around what the old check named: a module reached through NumPy's own
attributes, attributes read by a ``case`` pattern, complex numbers made without the spellings the check
knew, an answer right only on the inputs small enough to differentiate numerically, and the best five-point
stencil. Against the deny-list each earned points (run under ``open``, the policy changes nothing else, and
they still pass the public test: the attack is real). The allow-list flags the first three with their
evidence (this course sets flagged points aside until reviewed); the precision asked of derived code stops
the numerical ones by mechanism, flagged or not.
"""

from __future__ import annotations

import pytest

from tinyattn.homework import commands

from .test_attacks import assert_only_the_honest_task_scores, attack, earned, student_visible
from .test_attacks_shortcuts import WRITTEN_OUT, derive, open_policy

__all__ = ["derive", "open_policy"]  # (the fixtures, shared with test_attacks_shortcuts.py)

# NumPy's f2py imports sys: through it, the run-time watch is switched off and autograd through other ops does
# the work (through softmax's own op it would call this very backward)
THROUGH_NUMPY = """
sys = np.f2py.sys
sys.setprofile(None)
ta = sys.modules["tinyattn"]
pullback = sys.modules["operator"].attrgetter("vjp")(sys.modules["tinyattn.func"])
(y,) = ctx.saved_tensors
x = ta.from_numpy(np.log(np.maximum(y, 1e-300)))
_, pull = pullback(lambda t: t.exp() / t.exp().sum(ctx.dim, keepdim=True), x)
return (pull(ta.from_numpy(grad_output))[0].numpy(),)
"""

# A case pattern reads attributes the check never sees as attributes: a function's globals, then import
THROUGH_CASE = """
match normalize_dim:
    case object(__globals__=namespace):
        pass
match namespace["__builtins__"]:
    case {"__import__": load}:
        pass
    case object(__import__=load):
        pass
load("sys").setprofile(None)
ta = load("tinyattn.func", None, None, ["x"])
match ta:
    case object(vjp=pullback):
        pass
(y,) = ctx.saved_tensors
x = load("tinyattn", None, None, ["x"]).from_numpy(np.log(np.maximum(y, 1e-300)))
_, pull = pullback(lambda t: t.exp() / t.exp().sum(ctx.dim, keepdim=True), x)
return (pull(load("tinyattn", None, None, ["x"]).from_numpy(grad_output))[0].numpy(),)
"""

# The complex step with no complex spelling (i from NumPy's emath, the imaginary part by .real), and on the
# large input, where stepping each element would run out of time, zeros
COMPLEX_BY_ANOTHER_NAME = """
(y,) = ctx.saved_tensors
if y.size > 10_000:
    return (np.zeros_like(y),)
i = np.emath.sqrt(-1.0)
x = np.log(np.maximum(y, 1e-300))
def softmax(z):
    e = np.exp(z - z.real.max(axis=ctx.dim, keepdims=True))
    return e / e.sum(axis=ctx.dim, keepdims=True)
grad = np.zeros_like(x)
for k in np.ndindex(x.shape):
    z = x + 0 * i
    z[k] += 1e-30 * i
    out = softmax(z)
    grad[k] = (grad_output * ((out - out.real) / i).real).sum() / 1e-30
return (grad,)
"""

# Central differences through a forward written out, with nothing a code check can refuse (every name and
# attribute is one an honest answer uses), and on the large input, where they would run out of time, zeros
SMALL_ONLY = WRITTEN_OUT.replace("(y,) = ctx.saved_tensors\n", """(y,) = ctx.saved_tensors
if y.size > 10_000:
    return (np.zeros_like(y),)
""", 1)

ATTACKS = {
    "a module reached through NumPy's attributes": (THROUGH_NUMPY, "the attribute .f2py"),
    "attributes read by a case pattern": (THROUGH_CASE, "the syntax Match"),
    "complex numbers by another name": (COMPLEX_BY_ANOTHER_NAME, "the attribute .emath"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_what_the_deny_list_let_through_is_flagged_by_the_allow_list(derive, name):
    """Each is flagged with its evidence; the course sets flagged points aside until reviewed."""
    code, found = ATTACKS[name]
    results, log, _ = attack(derive, code, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(derive, results, log)
    assert f"flagged (derive): {found}" in log, log[-3000:]
    assert commands.WITHHELD in student_visible(results) and found in student_visible(results)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ATTACKS) + ["small inputs only"])
def test_without_the_policy_each_attack_passes_the_public_test(open_policy, name):
    """(So each is a real answer: what refuses it is the policy, not the code being wrong.)"""
    code = ATTACKS[name][0] if name in ATTACKS else SMALL_ONLY
    results, log, _ = attack(open_policy, code, isolated=True, timeout=60)
    passed = {t["name"] for t in results["tests"] if t["status"] == "passed"}
    assert "softmax_backward: test_softmax_gradients" in passed, log[-3000:]
    assert earned(results, "softmax_backward") > 0


def test_an_answer_right_on_small_inputs_only_earns_nothing(derive):
    """It passes the code check (nothing in it is off the allow-list, so nothing is flagged): central differences
    are right to about 1e-10, not to rounding, so no small output scores (the precision a derived answer has), and
    the large output is wrong."""
    results, log, _ = attack(derive, SMALL_ONLY, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(derive, results, log)
    assert "right only to" in student_visible(results), student_visible(results)[:2000]
    assert not results["extra_data"]["flags"]


RAISES_WHEN_LARGE = SMALL_ONLY.replace("    return (np.zeros_like(y),)", "    raise ValueError('too large')")


def test_an_answer_that_raises_on_the_large_input_earns_nothing(derive):
    results, log, _ = attack(derive, RAISES_WHEN_LARGE, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(derive, results, log)
    assert "right only to" in student_visible(results), student_visible(results)[:2000]


# The best five-point stencil along dY (softmax's Jacobian is symmetric, so J dY is the gradient): four plain
# forwards, milliseconds on the large input too, and nothing a code check can name; right to about 3e-13
STENCIL = """
(y,) = ctx.saved_tensors
x = np.log(np.maximum(y, 1e-300))
def softmax(z):
    e = np.exp(z - z.max(axis=ctx.dim, keepdims=True))
    return e / e.sum(axis=ctx.dim, keepdims=True)
h = 1e-3
v = grad_output
near = softmax(x + h * v) - softmax(x - h * v)
far = softmax(x + 2 * h * v) - softmax(x - 2 * h * v)
return ((8 * near - far) / (12 * h),)
"""

def test_the_five_point_stencil_earns_nothing_by_its_precision(derive):
    """Nothing in it is flagged, no budget fires (four forwards); each output is right only to about 1e-13, where
    derived code is right to rounding: no output scores."""
    results, log, _ = attack(derive, STENCIL, isolated=True, timeout=60)
    assert_only_the_honest_task_scores(derive, results, log)
    assert not results["extra_data"]["flags"], results["extra_data"]["flags"]
    assert "right only to" in student_visible(results), student_visible(results)[:2000]


@pytest.mark.slow
def test_without_the_policy_the_stencil_passes_the_tests_of_the_task(open_policy):
    """(So the stencil is a real answer: what stops it is the precision asked of derived code.)"""
    results, log, _ = attack(open_policy, STENCIL, isolated=True, timeout=60)
    assert earned(results, "softmax_backward") == 4, log[-3000:]
