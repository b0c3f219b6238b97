"""Reductions: values vs NumPy and gradchecks over int, tuple and None dims."""

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf

DIMS = [None, 0, -1, (0, 2), (1,)]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "amax"])
def test_reduction(rng, name, dim, keepdim):
    x = leaf(rng, 2, 3, 4)
    out = getattr(x, name)(dim=dim, keepdim=keepdim)
    ref = {"sum": np.sum, "mean": np.mean, "amax": np.max}[name](x.array, axis=dim, keepdims=keepdim)
    np.testing.assert_allclose(out.array, ref)
    check(lambda t: getattr(t, name)(dim=dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("correction", [0, 1])
def test_var(rng, dim, correction):
    x = leaf(rng, 2, 3, 4)
    out = x.var(dim=dim, correction=correction)
    np.testing.assert_allclose(out.array, np.var(x.array, axis=dim, ddof=correction))
    check(lambda t: t.var(dim=dim, keepdim=True, correction=correction), x)
    np.testing.assert_allclose(x.var(dim, unbiased=False).array, np.var(x.array, axis=dim))


def test_max_no_dim_and_ties_share_gradient():
    x = ta.tensor(np.array([1.0, 3.0, 3.0, 2.0]), requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.5, 0.5, 0.0])


def test_amax_ties_along_dim():
    x = ta.tensor(np.array([[2.0, 2.0, 1.0], [0.0, 5.0, 1.0]]), requires_grad=True)
    x.amax(dim=1).backward(np.array([4.0, 1.0]))
    np.testing.assert_allclose(x.grad, [[2.0, 2.0, 0.0], [0.0, 1.0, 0.0]])


def test_dim_out_of_range_is_clear():
    with pytest.raises(IndexError, match=r"dim 3 is out of range .* 2 dimensions"):
        ta.ones(2, 3).sum(dim=3)
