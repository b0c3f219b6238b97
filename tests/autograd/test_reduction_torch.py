"""Reductions against torch over random shapes, dims, keepdim, correction and dtypes: values, gradients,
dtypes, and the errors for empty dims and out-of-range dims."""

import re
import warnings

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

OPS = ["sum", "mean", "amax", "amin", "var", "std", "max_dim", "min_dim"]


def call(x, op, dim, keepdim, correction):
    if op in ("max_dim", "min_dim"):
        return getattr(x, op[:3])(dim=dim, keepdim=keepdim)[0]
    if op in ("var", "std"):
        return getattr(x, op)(dim=dim, keepdim=keepdim, correction=correction)
    return getattr(x, op)(dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("seed", range(48))
def test_reduction_matches_torch(seed):
    rng = np.random.default_rng(seed)
    op = OPS[seed % len(OPS)]
    shape = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(1, 4))))
    ndim = len(shape)
    if op in ("max_dim", "min_dim"):
        dim = int(rng.integers(-ndim, ndim))
    else:  # one dim, several, or all
        dim = [int(rng.integers(-ndim, ndim)), tuple(sorted(set(rng.integers(0, ndim, size=2).tolist()))), None][
            rng.integers(3)]
    keepdim, correction = bool(rng.integers(2)), int(rng.integers(0, 2))
    dtype = [np.float32, np.float64][rng.integers(2)]
    data = rng.standard_normal(shape).astype(dtype)
    if rng.integers(2):  # ties for the max and min
        data = np.round(data)
    def upstream(out_shape):  # the same random upstream gradient for both
        return np.random.default_rng(seed).standard_normal(out_shape).astype(dtype)

    results = []
    for lib in (ta, torch):
        x = lib.tensor(data, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # var/std with N - correction <= 0: both warn, both give nan
            out = call(x, op, dim, keepdim, correction)
            out.backward(lib.tensor(upstream(tuple(out.shape))))
        results.append((out, x.grad))
    (ours, our_grad), (theirs, their_grad) = results
    case = f"{op}(dim={dim}, keepdim={keepdim}, correction={correction}) of {shape} {np.dtype(dtype).name}"
    assert ours.shape == tuple(theirs.shape) and ours.dtype == dtype and our_grad.dtype == dtype, case
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), **tol, err_msg=case)
    np.testing.assert_allclose(our_grad, their_grad.numpy(), **tol, err_msg=case)


def test_var_with_no_degrees_of_freedom_warns_and_gives_nan_as_torch():
    x = ta.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"var: degrees of freedom N - correction = 1 - 1 <= 0"):
        v = x.var()
    v.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.tensor([1.0], requires_grad=True)
        t.var().backward()
    assert np.isnan(v.item()) and np.isnan(t.grad.item()) and np.isnan(x.grad[0])


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "var", "softmax", "log_softmax"])
def test_an_out_of_range_dim_is_named_by_the_op(op):
    x = ta.ones(2, 3)
    with pytest.raises(IndexError, match=rf"^{op}: dim 5 is out of range for a tensor with 2 dimensions"):
        getattr(x, op)(dim=5)
    with pytest.raises(IndexError):
        getattr(torch.ones(2, 3), op)(dim=5)


@pytest.mark.parametrize("shape, dim", [((0, 3), 1), ((0, 3), 0), ((0, 3), None), ((2, 0), 1), ((2, 0), (0,))])
def test_amax_of_an_empty_dim_is_refused_and_of_a_full_one_is_empty(shape, dim):
    try:
        expected = torch.zeros(shape).amax(dim=() if dim is None else dim).shape
    except (IndexError, RuntimeError):
        message = f"amax: cannot reduce over an empty dim of a tensor of shape {shape}"
        with pytest.raises(ValueError, match=re.escape(message)):
            ta.zeros(*shape).amax(dim=dim)
        return
    assert ta.zeros(*shape).amax(dim=dim).shape == tuple(expected)


def test_var_without_degrees_of_freedom_raises_no_numpy_warning():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ours, as torch's
        warnings.simplefilter("error", RuntimeWarning)  # NumPy's x / 0 would be one
        v = x.var(dim=0, correction=2)  # (1 - 1.5)^2 + (2 - 1.5)^2 over 0: inf
        v.backward()
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        tv = t.var(dim=0, correction=2)
        tv.backward()
    assert v.item() == tv.item() == np.inf
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


def test_var_of_one_element_is_nan_without_numpy_warnings():
    x = ta.tensor([1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)  # NumPy's 0 / 0 ("invalid value") would be one
        v = x.var()
        v.backward()
    assert np.isnan(v.item()) and np.isnan(x.grad[0])
