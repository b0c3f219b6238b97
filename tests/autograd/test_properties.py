"""Hypothesis property tests: random broadcastable shapes, permutations and reduction dims."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyattn as ta
from tinyattn.autograd import gradcheck

SETTINGS = settings(max_examples=25, deadline=None)


def make(shape, seed, positive=False):
    rng = np.random.default_rng(seed)
    data = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
    return ta.tensor(data, requires_grad=True)


@SETTINGS
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    op=st.sampled_from(["add", "sub", "mul", "div"]),
    seed=st.integers(0, 2**16),
)
def test_binary_ops_broadcast(shapes, op, seed):
    a, b = make(shapes.input_shapes[0], seed, True), make(shapes.input_shapes[1], seed + 1, True)
    fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b}[op]
    assert fn(a, b).shape == shapes.result_shape
    assert gradcheck(fn, (a, b))


@SETTINGS
@given(data=st.data(), ndim=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_permute(data, ndim, seed):
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    perm = tuple(data.draw(st.permutations(range(ndim))))
    x = make(shape, seed)
    np.testing.assert_array_equal(x.permute(*perm).array, np.transpose(x.array, perm))
    assert gradcheck(lambda t: t.permute(*perm), (x,))


@SETTINGS
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
    data=st.data(),
    keepdim=st.booleans(),
    op=st.sampled_from(["sum", "mean", "amax", "var"]),
    seed=st.integers(0, 2**16),
)
def test_reductions(shape, data, keepdim, op, seed):
    dims = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)))
    if op == "var" and np.prod([shape[d] for d in dims]) < 2:
        dims = None
        if np.prod(shape) < 2:
            return
    x = make(shape, seed)
    assert gradcheck(lambda t: getattr(t, op)(dim=dims, keepdim=keepdim), (x,))


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data(), seed=st.integers(0, 2**16))
def test_softmax_any_dim(shape, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = make(shape, seed)
    y = x.softmax(dim)
    np.testing.assert_allclose(y.array.sum(axis=dim), 1.0)
    assert gradcheck(lambda t: t.softmax(dim), (x,))
    assert gradcheck(lambda t: t.log_softmax(dim), (x,))
