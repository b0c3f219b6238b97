"""Softmax and log-softmax: values, stability on huge logits, gradients."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf


def reference_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(rng, dim):
    x = leaf(rng, 2, 3, 4)
    np.testing.assert_allclose(x.softmax(dim).array, reference_softmax(x.array, dim))
    check(lambda t: t.softmax(dim), x)
    check(lambda t: t.transpose(0, 2).softmax(dim), x)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_log_softmax(rng, dim):
    x = leaf(rng, 2, 3, 4)
    np.testing.assert_allclose(x.log_softmax(dim).array, np.log(reference_softmax(x.array, dim)))
    check(lambda t: t.log_softmax(dim), x)


def test_huge_logits_are_stable():
    x = ta.tensor(np.array([[1000.0, 0.0, -1000.0], [1e4, 1e4, 0.0]]))
    y = x.softmax(-1).array
    np.testing.assert_allclose(y, [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    ly = x.log_softmax(-1).array
    assert np.all(np.isfinite(ly[:, :2]))
    np.testing.assert_allclose(ly[0], [0.0, -1000.0, -2000.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])  # (the row max starts at each dtype's lowest float)
def test_fully_masked_row_gives_zeros_not_nan(dtype, rng):
    x = ta.tensor(np.array([[0.0, -np.inf], [-np.inf, -np.inf]], dtype=dtype), requires_grad=True)
    y = x.softmax(-1)
    np.testing.assert_array_equal(y.array, [[1.0, 0.0], [0.0, 0.0]])
    assert y.dtype == dtype
    y.backward(rng.standard_normal((2, 2)).astype(dtype))
    np.testing.assert_array_equal(x.grad, np.zeros((2, 2)))
