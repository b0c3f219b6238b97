"""Reductions: values vs NumPy and gradchecks over int, tuple and None dims."""

import tracemalloc
import warnings

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


def test_mean_holds_one_result_sized_array_not_two():
    # at (1, 2048, 256, 8) MultiheadAttention averages 16 MB of weights over heads: a second array of that size
    # (the sum, then a divided copy) made the heap grow and shrink on every call
    x = ta.tensor(np.ones((4, 512, 512), dtype=np.float32), requires_grad=True)
    result_bytes = 512 * 512 * 4
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = x.mean(dim=0)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out.array, 1.0)
    assert result_bytes <= peak < 1.5 * result_bytes, peak


@pytest.mark.parametrize("values, dtype", [([1, 2, 4], np.int64), ([3, 4], np.int32), ([True, False, True], np.bool_)])
def test_mean_of_integers_and_bools_is_float64(values, dtype):
    for dim in (None, 0):
        out = ta.tensor(np.array(values, dtype=dtype)).mean(dim=dim)
        assert out.dtype == np.float64
        assert out.item() == pytest.approx(np.mean(values))
    rows = ta.tensor(np.array([values, values[::-1]], dtype=dtype)).mean(dim=1)  # an array, not a number
    assert rows.dtype == np.float64
    np.testing.assert_allclose(rows.array, [np.mean(values)] * 2)


def test_mean_over_nothing_is_nan_without_a_numpy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(ta.zeros(0).mean().item())
        assert np.isnan(ta.zeros(2, 0).mean(dim=1).array).all() and ta.zeros(2, 0).mean(dim=1).shape == (2,)
        assert ta.zeros(0, 3).mean(dim=1).shape == (0,)
