"""The torch-style Tensor API added for porting code: in-place methods, NumPy ufuncs, max/min/std."""

import numpy as np
import pytest

import tinyattn as ta


@pytest.mark.parametrize("method, args, expected", [
    ("zero_", (), [0.0, 0.0, 0.0]),
    ("fill_", (2.5,), [2.5, 2.5, 2.5]),
    ("add_", (ta.tensor(np.array([1.0, 2.0, 3.0])),), [2.0, 3.0, 4.0]),
    ("sub_", (np.array([1.0, 1.0, 1.0]),), [0.0, 0.0, 0.0]),
    ("mul_", (ta.tensor(np.array([2.0, 3.0, 4.0])),), [2.0, 3.0, 4.0]),
    ("masked_fill_", (np.array([True, False, True]), -1.0), [-1.0, 1.0, -1.0]),
    ("copy_", (ta.tensor(np.array(7.0)),), [7.0, 7.0, 7.0]),  # broadcast
    ("copy_", (np.array([4.0, 5.0, 6.0]),), [4.0, 5.0, 6.0]),
])
def test_in_place_methods(method, args, expected):
    t = ta.ones(3)  # float32
    out = getattr(t, method)(*args)
    assert out is t and t.tolist() == expected and t.dtype == np.float32 and t._version == 1
    with pytest.raises(RuntimeError, match=rf"^{method}: a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        getattr(ta.ones(3, requires_grad=True), method)(*args)
    y = ta.ones(3, requires_grad=True) * 2
    assert getattr(y, method)(*args) is y and y.grad_fn is not None and y._version == 1  # in a graph: recorded


def test_numpy_ufuncs_on_tensors():
    x = ta.tensor(np.array([1.0, 4.0]), requires_grad=True)
    y = ta.tensor(np.array([2.0, 3.0]))
    less = np.less(x, y)
    assert isinstance(less, ta.Tensor) and less.tolist() == [True, False] and less.dtype == np.bool_
    assert (np.array([1.0, 1.0]) < x).tolist() == [False, True]
    for ufunc, method in [(np.sqrt, "sqrt"), (np.log, "log"), (np.tanh, "tanh"), (np.negative, "__neg__")]:
        np.testing.assert_allclose(ufunc(x).array, getattr(x, method)().array)
        assert ufunc(x).requires_grad
    z = np.power(x, 2) - np.subtract(y, x) / np.multiply(x, 2)
    z.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.array + (y.array / (2 * x.array ** 2)))
    s = np.sin(y)  # no gradient needed: computed on the arrays, a tensor back
    assert isinstance(s, ta.Tensor) and np.allclose(s.array, np.sin(y.array))
    assert np.add.reduce(y) == 5.0  # other ufunc methods on a tensor without grad
    with pytest.raises(TypeError, match="numpy.add has no gradient here"):
        np.add(x, 1, out=np.empty(2))
    with ta.no_grad():
        assert np.sin(x).tolist() == np.sin(x.array).tolist()


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_and_min_along_a_dim(keepdim):
    data = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    x = ta.tensor(data, requires_grad=True)
    high, low = x.max(1, keepdim), x.min(dim=0, keepdim=keepdim)
    assert high.values.shape == high.indices.shape == ((2, 1) if keepdim else (2,))
    assert high.indices.array.ravel().tolist() == [0, 1] and high.values.array.ravel().tolist() == [3.0, 5.0]
    assert low.indices.array.ravel().tolist() == [1, 0, 0] and low.values.array.ravel().tolist() == [0.0, 1.0, 2.0]
    assert high.indices.dtype == np.int64 and not high.indices.requires_grad
    (high.values.sum() + 10 * low.values.sum()).backward()
    assert x.grad.tolist() == [[1.0, 10.0, 10.0], [10.0, 1.0, 0.0]]  # to the picked index only (ties: the first)
    t = ta.tensor(np.array(2.0), requires_grad=True)
    assert t.max(0).values.item() == 2.0 and t.min(-1).indices.item() == 0


def test_amin_and_full_min_share_ties_and_std():
    x = ta.tensor(np.array([[1.0, 1.0, 4.0], [2.0, 0.5, 3.0]]), requires_grad=True)
    assert x.amin(1).tolist() == [1.0, 0.5] and x.min().item() == 0.5
    x.amin(1).sum().backward()
    assert x.grad.tolist() == [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]
    np.testing.assert_allclose(x.std().array, np.std(x.array, ddof=1))
    np.testing.assert_allclose(x.std(0, correction=0).array, np.std(x.array, axis=0))
    with pytest.raises(ValueError, match="give unbiased or correction, not both"):
        x.var(unbiased=True, correction=1)


def test_transpose_and_flatten_of_0d_and_split_sizes():
    t = ta.tensor(np.array(3.0), requires_grad=True)
    assert t.transpose(0, -1).shape == () and t.flatten().shape == (1,)
    with pytest.raises(IndexError, match="transpose: dim 1 is out of range"):
        t.transpose(0, 1)
    with pytest.raises(ValueError, match=r"flatten: start_dim 2 comes after end_dim 1"):
        ta.ones(2, 3, 4).flatten(2, 1)
    with pytest.raises(ValueError, match=r"split: sizes \(1, 1\) do not sum to 3"):
        ta.ones(3).split([1, 1])
    assert [p.shape for p in ta.split(ta.ones(5), 2)] == [(2,), (2,), (1,)]
    assert [p.shape for p in ta.chunk(ta.ones(5), 3)] == [(2,), (2,), (1,)]
