"""Forward values and gradchecks of the elementwise ops, broadcast variants included."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a**b, np.power),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((), (2, 3))]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_forward(rng, name, shapes):
    op, ref = BINARY[name]
    a, b = leaf(rng, *shapes[0], positive=True), leaf(rng, *shapes[1], positive=True)
    np.testing.assert_allclose(op(a, b).array, ref(a.array, b.array))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_backward(rng, name, shapes):
    op, _ = BINARY[name]
    check(op, leaf(rng, *shapes[0], positive=True), leaf(rng, *shapes[1], positive=True))


@pytest.mark.parametrize("name", BINARY)
def test_binary_with_python_scalar_both_sides(rng, name):
    op, ref = BINARY[name]
    x = leaf(rng, 2, 3, positive=True)
    np.testing.assert_allclose(op(x, 1.5).array, ref(x.array, 1.5))
    np.testing.assert_allclose(op(1.5, x).array, ref(1.5, x.array))
    check(lambda t: op(t, 1.5), x)
    check(lambda t: op(1.5, t), x)


def test_scalar_keeps_float32():
    x = ta.ones(2, 2)
    assert (x * 2.0).dtype == np.float32
    assert (3.0 / x).dtype == np.float32


def test_binary_with_non_contiguous_input(rng):
    a = leaf(rng, 4, 3)
    b = leaf(rng, 3, 4)
    check(lambda a, b: a.transpose(0, 1) * b, a, b)


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        ta.ones(2, 3) + ta.ones(4)


UNARY = {
    "neg": (lambda x: -x, np.negative, False),
    "exp": (lambda x: x.exp(), np.exp, False),
    "log": (lambda x: x.log(), np.log, True),
    "sqrt": (lambda x: x.sqrt(), np.sqrt, True),
    "tanh": (lambda x: x.tanh(), np.tanh, False),
    "relu": (lambda x: x.relu(), lambda v: np.maximum(v, 0), False),
    "sigmoid": (lambda x: x.sigmoid(), lambda v: 1 / (1 + np.exp(-v)), False),
    "abs": (lambda x: x.abs(), np.abs, False),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_forward(rng, name):
    op, ref, positive = UNARY[name]
    x = leaf(rng, 3, 4, positive=positive)
    np.testing.assert_allclose(op(x).array, ref(x.array))


@pytest.mark.parametrize("name", UNARY)
def test_unary_backward(rng, name):
    op, _, positive = UNARY[name]
    x = leaf(rng, 3, 4, positive=positive)
    check(op, x)
    check(lambda t: op(t.transpose(0, 1)), x)  # non-contiguous input


def test_sigmoid_is_stable_for_huge_inputs():
    out = ta.tensor(np.array([-1000.0, 0.0, 1000.0])).sigmoid()
    np.testing.assert_allclose(out.array, [0.0, 0.5, 1.0])


def test_masked_fill(rng):
    x = leaf(rng, 3, 4)
    mask = rng.random((1, 4)) > 0.5
    out = x.masked_fill(ta.tensor(mask), -7.0)
    np.testing.assert_array_equal(out.array, np.where(mask, -7.0, x.array))
    check(lambda t: t.masked_fill(mask, -7.0), x)


def test_masked_fill_rejects_non_bool_and_bad_shapes():
    with pytest.raises(TypeError, match="bool"):
        ta.ones(2, 3).masked_fill(np.ones((2, 3)), 0.0)
    with pytest.raises(ValueError, match=r"\(4, 3\)"):
        ta.ones(2, 3).masked_fill(np.ones((4, 3), dtype=bool), 0.0)


def test_where(rng):
    a, b = leaf(rng, 3, 4), leaf(rng, 4)
    cond = rng.random((3, 4)) > 0.5
    np.testing.assert_array_equal(ta.where(ta.tensor(cond), a, b).array, np.where(cond, a.array, b.array))
    check(lambda a, b: ta.where(cond, a, b), a, b)
    check(lambda a: ta.where(cond, a, 0.0), a)


def test_cast_between_float_dtypes(rng):
    x = leaf(rng, 2, 3)
    y = x.float()
    assert y.dtype == np.float32
    y.backward(np.ones((2, 3), dtype=np.float32))
    assert x.grad.dtype == np.float64
