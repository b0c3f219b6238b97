"""Forward-mode AD checked without torch: every op's jvp against finite differences (``gradcheck`` with
``check_forward_ad=True``), each failing when that op's jvp is planted wrong; forward over reverse (a
Hessian-vector product); the dual level's rules. (Against torch: test_forward_ad_torch.py.)"""

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.autograd.forward_ad as fwAD
from tinyattn.autograd.core.function import Function
from tinyattn.autograd.core.ops.elementwise import Elementwise

from .test_higher_order import CASE_OF_OP, CASES, _attention_ops


def _tolerance(name):
    # (a round trip through float32 is exact to float32's precision only: finite differences need a wider step)
    return dict(eps=1e-3, atol=1e-3, rtol=1e-2) if name == "cast_clone" else {}


@pytest.mark.parametrize("name, fn", CASES + [("attention", lambda lib, x: _attention_ops(x))],
                         ids=[c[0] for c in CASES] + ["attention"])
def test_forward_mode_matches_finite_differences(name, fn):
    x = ta.tensor(np.random.default_rng(sum(map(ord, name)) + 2).standard_normal((3, 4)), requires_grad=True)
    assert ta.autograd.gradcheck(lambda t: fn(ta, t), [x], check_forward_ad=True, check_backward_ad=False,
                                 **_tolerance(name))


@pytest.mark.parametrize("op", sorted(CASE_OF_OP, key=lambda op: op.__name__), ids=lambda op: op.__name__)
def test_check_forward_ad_fails_for_a_planted_wrong_jvp_of_each_op(op, monkeypatch):
    """Planted: the op's tangent times 1.1 (plus 0.1 where a linear op's is all zeros). Backward is untouched, so
    gradcheck of backward still passes; forward mode does not."""
    name, fn = CASE_OF_OP[op]
    jvp = op.jvp

    def planted(tangents, inputs, out, **options):
        return np.asarray(jvp(tangents, inputs, out, **options)) * 1.1 + 0.1

    x = ta.tensor(np.random.default_rng(sum(map(ord, name)) + 3).standard_normal((3, 4)), requires_grad=True)
    call = (lambda t: _attention_ops(t)) if name == "attention" else (lambda t: fn(ta, t))
    assert ta.autograd.gradcheck(call, [x], check_forward_ad=True, **_tolerance(name))
    monkeypatch.setattr(op, "jvp", staticmethod(planted))
    assert ta.autograd.gradcheck(call, [x], **_tolerance(name))  # (backward is still right...)
    assert not ta.autograd.gradcheck(call, [x], check_forward_ad=True, check_backward_ad=False,
                                     raise_exception=False, **_tolerance(name))  # (...forward mode is not)


def test_every_op_states_its_jvp_or_what_it_follows_from_and_never_both():
    """An op without a jvp of its own is linear (its jvp is the op itself), multilinear (the product rule),
    symmetric (its backward, on the tangent) or elementwise (``tx ⊙ f'``, from the derivative it states): a new op
    of any other kind must state one. An op that says what its jvp follows from states no jvp of its own."""
    for op in CASE_OF_OP:
        elementwise = issubclass(op, Elementwise) and "derivative" in vars(op)
        follows = op.linear or op.multilinear or op.symmetric or elementwise
        assert follows or "jvp" in vars(op), op.__name__
        assert not (follows and "jvp" in vars(op)), op.__name__  # (stated once)
        assert not (elementwise and "backward" in vars(op)), op.__name__


def test_forward_mode_gives_a_column_of_the_jacobian_and_backward_a_row():
    """J from forward mode, column by column (one tangent per input element), equals J from backward, row by row."""
    rng = np.random.default_rng(4)
    x, w = ta.tensor(rng.standard_normal(3)), ta.tensor(rng.standard_normal((2, 3)))
    f = lambda t: (w @ t).tanh() * t[:2]  # noqa: E731
    columns = []
    for j in range(3):
        with fwAD.dual_level():
            out = f(fwAD.make_dual(x, ta.tensor(np.eye(3)[j])))
            columns.append(fwAD.unpack_dual(out).tangent.numpy())
    rows = []
    for i in range(2):
        leaf = x.clone().requires_grad_()
        (g,) = ta.autograd.grad(f(leaf)[i], leaf)
        rows.append(g.numpy())
    np.testing.assert_allclose(np.stack(columns, 1), np.stack(rows), rtol=1e-12)


def test_forward_over_reverse_is_a_hessian_vector_product():
    """A backward with create_graph inside a dual level carries the tangents: the gradient's tangent is H v."""
    rng = np.random.default_rng(5)
    data, v = rng.standard_normal(4), rng.standard_normal(4)
    f = lambda t: (t.exp() * t.sin()).sum() + (t.softmax(0) * t).sum()  # noqa: E731
    with fwAD.dual_level():
        x = fwAD.make_dual(ta.tensor(data, requires_grad=True), ta.tensor(v))
        (g,) = ta.autograd.grad(f(x), x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent.numpy()
    x = ta.tensor(data, requires_grad=True)
    (g,) = ta.autograd.grad(f(x), x, create_graph=True)
    (expected,) = ta.autograd.grad((g * ta.tensor(v)).sum(), x)  # reverse over reverse: H v, H symmetric
    np.testing.assert_allclose(hv, expected.numpy(), rtol=1e-10)


def test_tangents_are_dropped_when_the_level_closes_and_apply_is_never_replaced():
    apply = Function.__dict__["apply"]
    with fwAD.dual_level():
        y = fwAD.make_dual(ta.tensor([1.0, 2.0]), ta.tensor([1.0, 0.0])).exp()
        assert Function.__dict__["apply"] is apply  # (the tangent comes from Tensor.op_result, not a swapped apply)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [np.e, 0.0], rtol=1e-6)
    assert Function.__dict__["apply"] is apply
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(y).primal is y


def test_a_level_closes_even_when_its_block_raises():
    with pytest.raises(ValueError, match="inside"):
        with fwAD.dual_level():
            raise ValueError("inside")
    with fwAD.dual_level():  # (a new level opens: the old one closed)
        pass


def test_an_in_place_change_carries_the_new_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(ta.tensor([1.0, 2.0]), ta.tensor([1.0, 1.0]))
        y = x * 1.0
        y.mul_(x)  # y = x², its tangent 2x t
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [2.0, 4.0])
        y.fill_(3.0)  # a constant: a zero tangent (as torch)
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), [0.0, 0.0])
        assert fwAD.unpack_dual(y.detach()).tangent is None


def test_refusals_name_what_is_wrong():
    x = ta.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, ta.tensor([1.0, 1.0]))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match=r"of size \[2\] while the given forward gradient is of size \[3\]"):
            fwAD.make_dual(x, ta.tensor([1.0, 1.0, 1.0]))
        with pytest.raises(ValueError, match="Expected primal to be floating point.*int64"):
            fwAD.make_dual(ta.tensor([1, 2]), ta.tensor([1.0, 1.0]))
        with pytest.raises(TypeError, match="expected two Tensors"):
            fwAD.make_dual(x, [1.0, 1.0])
        view = fwAD.make_dual(ta.tensor([[1.0, 2.0]]), ta.tensor([[1.0, 1.0]])) * 1.0
        with pytest.raises(RuntimeError, match="in-place change to a view, with forward-mode tangents"):
            view[0].mul_(2.0)
        with pytest.raises(RuntimeError, match="dropout_p > 0 has no jvp"):
            q = fwAD.make_dual(ta.ones(1, 2, 3, dtype=ta.float64), ta.ones(1, 2, 3, dtype=ta.float64))
            ta.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)


def test_make_dual_keeps_the_tangent_itself_when_its_dtype_is_the_primals():
    tangent = ta.tensor([1.0, 2.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(ta.tensor([0.5, 0.5]), tangent)
        assert fwAD.unpack_dual(dual).tangent is tangent
        other = fwAD.make_dual(ta.tensor([0.5, 0.5], dtype=ta.float64), tangent)  # (another dtype: a cast copy)
        assert fwAD.unpack_dual(other).tangent is not tangent
        assert fwAD.unpack_dual(other).tangent.dtype == ta.float64
