"""Tensor construction rules, attributes, factories and seeding."""

import numpy as np
import pytest

import tinyattn as ta


def test_dtype_rules():
    assert ta.tensor(1.5).dtype == np.float32
    assert ta.tensor([[1.0, 2.0]]).dtype == np.float32
    assert ta.tensor(np.zeros(2)).dtype == np.float64
    assert ta.tensor(np.zeros(2, dtype=np.float32)).dtype == np.float32
    assert ta.tensor([1, 2]).dtype == np.int64
    assert ta.tensor([True, False]).dtype == np.bool_
    assert ta.tensor([1, 2], dtype=ta.float64).dtype == np.float64


@pytest.mark.parametrize("bad", ["abc", [object()], {"a": 1}, 1 + 2j])
def test_bad_data_is_type_error(bad):
    with pytest.raises(TypeError):
        ta.tensor(bad)


def test_requires_grad_needs_float():
    with pytest.raises(RuntimeError, match="floating point"):
        ta.tensor([1, 2], requires_grad=True)


def test_attributes():
    t = ta.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.size() == (2, 3) and t.size(-1) == 3
    assert len(t) == 2 and t.is_leaf and t.grad is None
    assert np.shares_memory(np.asarray(t.detach()), t.array)  # shares memory, like torch
    assert np.shares_memory(t.detach().cpu().numpy(), t.array)
    assert ta.tensor(np.array([4.0])).item() == 4.0
    d = t.detach()
    assert not d.requires_grad
    d.array[0, 0] = 7.0  # (a write through the detached tensor is seen by the original)
    assert t.array[0, 0] == 7.0
    assert "requires_grad=True" in repr(t) and "dtype=float64" in repr(t)
    assert "grad_fn=<Mul>" in repr(t * 2.0)
    with pytest.raises(ValueError, match="one-element"):
        t.item()


def test_comparisons_are_bool_without_grad():
    t = ta.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    for out, ref in [(t < 2, [1, 0, 0]), (t <= 2, [1, 1, 0]), (t > 2, [0, 0, 1]), (t >= 2, [0, 1, 1]),
                     (t == 2, [0, 1, 0]), (t != 2, [1, 0, 1])]:
        assert out.dtype == np.bool_ and not out.requires_grad
        np.testing.assert_array_equal(out.array, np.array(ref, dtype=bool))


def test_factories_and_seed():
    assert ta.zeros(2, 3).dtype == np.float32 and ta.zeros((2, 3)).shape == (2, 3)
    assert ta.ones(4, dtype=ta.float64).dtype == np.float64
    np.testing.assert_array_equal(ta.arange(4).array, [0, 1, 2, 3])
    assert ta.arange(0, 1, 0.5).dtype == np.float32
    ta.manual_seed(7)
    a, u = ta.randn(3, 4), ta.rand(2)
    ta.manual_seed(7)
    b, v = ta.randn(3, 4), ta.rand(2)
    np.testing.assert_array_equal(a.array, b.array)
    np.testing.assert_array_equal(u.array, v.array)
    assert a.dtype == np.float32 and np.all((u.array >= 0) & (u.array < 1))
    assert ta.randn(2, requires_grad=True).requires_grad


def test_ndarray_on_the_left_defers_to_tensor():
    t = ta.ones(2, requires_grad=True)
    out = np.array([1.0, 2.0]) * t
    assert isinstance(out, ta.Tensor) and out.requires_grad
