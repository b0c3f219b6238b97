"""Elementwise and shape ops against torch at their edges: pow's gradients at 0 (without warnings),
GELU in float32, linear's 0-d refusal, squeeze/expand/stack with size-1 and negative dims; and every
shape check names its op."""

import re
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def test_pow_gradients_at_zero_match_torch_without_warnings():
    base, exponent = np.zeros(4), np.array([0.0, 0.5, 1.0, 2.0])
    upstream = np.array([1.0, -2.0, 0.5, 3.0])
    x, y = ta.tensor(base, requires_grad=True), ta.tensor(exponent, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero or invalid-value warning from the backward
        (x**y).backward(upstream)
    tx, ty = torch.tensor(base, requires_grad=True), torch.tensor(exponent, requires_grad=True)
    (tx**ty).backward(torch.tensor(upstream))
    np.testing.assert_array_equal(x.grad, tx.grad.numpy())  # 0, inf, 1, 0: as torch
    np.testing.assert_array_equal(y.grad, ty.grad.numpy())  # 0 everywhere: 0**b has no slope in b for b >= 0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_keeps_the_dtype_and_matches_torch(rng, approximate, dtype):
    data = rng.standard_normal(7).astype(dtype) * 3
    ours = F.gelu(ta.tensor(data), approximate=approximate)
    theirs = torch.nn.functional.gelu(torch.tensor(data), approximate=approximate)
    assert ours.dtype == dtype
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.array, theirs.numpy(), **tol)


def test_shape_ops_with_size_one_and_negative_dims_match_torch(rng):
    data = rng.standard_normal((1, 3, 1))
    ours, theirs = ta.tensor(data), torch.tensor(data)
    for dim in (0, 2, -1, 1):
        assert ours.squeeze(dim).shape == tuple(theirs.squeeze(dim).shape)
    assert ours.squeeze().shape == tuple(theirs.squeeze().shape)
    col = rng.standard_normal((3, 1))
    assert ta.tensor(col).expand(2, -1, 4).shape == tuple(torch.tensor(col).expand(2, -1, 4).shape)
    np.testing.assert_array_equal(ta.tensor(col).expand(2, -1, 4).array, torch.tensor(col).expand(2, -1, 4).numpy())
    for dim in (-1, -3, 2, 0):
        pair = [rng.standard_normal((2, 3)) for _ in range(2)]
        stacked = ta.stack([ta.tensor(a) for a in pair], dim=dim)
        np.testing.assert_array_equal(stacked.array, torch.stack([torch.tensor(a) for a in pair], dim=dim).numpy())
    with pytest.raises(ValueError, match=r"linear: .*\(\) and \(2, 1\)|linear: input of shape \(\)"):
        F.linear(ta.tensor(1.0), ta.ones(2, 1))


@pytest.mark.parametrize("call, message", [
    (lambda x: x.permute(0, 5), "permute: dim 5 is out of range"),
    (lambda x: x.unsqueeze(5), "unsqueeze: dim 5 is out of range"),
    (lambda x: x.squeeze(5), "squeeze: dim 5 is out of range"),
    (lambda x: x.transpose(0, 5), "transpose: dim 5 is out of range"),
    (lambda x: x.log_softmax(5), "log_softmax: dim 5 is out of range"),
    (lambda x: ta.cat([x, x], dim=5), "cat: dim 5 is out of range"),
    (lambda x: ta.stack([x, x], dim=5), "stack: dim 5 is out of range"),
    (lambda x: x - ta.ones(4), "sub: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: x / ta.ones(4), "div: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: x ** ta.ones(4), "pow: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: ta.where(np.ones(4, bool), x, x), "where: shapes (4,) and (2, 3) and (2, 3) cannot be broadcast"),
    (lambda x: ta.where(np.ones(4, bool), ta.ones(3), ta.ones(1)), "where: shapes (4,) and (3,) and (1,) cannot"),
    (lambda x: ta.where(np.ones(4, bool), ta.ones(1), ta.ones(3)), "where: shapes (4,) and (1,) and (3,) cannot"),
    (lambda x: ta.where(np.ones(3, bool), x, ta.ones(4)), "where: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: ta.where(np.ones(3), x, x), "where: mask must be a bool tensor, got dtype float64"),
    (lambda x: x.masked_fill(np.ones(3), 0.0), "masked_fill: mask must be a bool tensor, got dtype float64"),
])
def test_every_shape_check_names_its_op(call, message):
    with pytest.raises((IndexError, ValueError, TypeError), match="^" + re.escape(message)):
        call(ta.ones(2, 3))
