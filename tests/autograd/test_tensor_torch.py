"""The Tensor API against torch: in-place ops and their casting rule, NumPy interop, len, comparisons,
max/min/std arguments, split/chunk/cat/stack, to(None); and each dim-taking method names itself in errors."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@pytest.mark.parametrize("op", ["add_", "mul_"])
@pytest.mark.parametrize("self_dtype, other", [(np.int64, 0.5), (np.int64, 2), (np.float32, 2), (np.float32, 0.5),
                                                (np.float32, np.array([1.5, 2.5])), (np.bool_, True)])
def test_in_place_ops_cast_like_torch(op, self_dtype, other):
    ours = ta.tensor(np.array([1, 3], dtype=self_dtype))
    theirs = torch.tensor(np.array([1, 3], dtype=self_dtype))
    their_other = torch.tensor(other) if isinstance(other, np.ndarray) else other
    try:
        getattr(theirs, op)(their_other)
    except RuntimeError:
        with pytest.raises(RuntimeError, match=rf"{op}: result type \w+ can't be cast to the desired output type"):
            getattr(ours, op)(other)
        assert ours._version == 0  # refused before anything changed
        return
    getattr(ours, op)(other)
    assert str(theirs.dtype) == f"torch.{ours.dtype}"
    np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_numpy_interop_dtype_copy_and_reductions():
    t = ta.tensor([1.0, 2.0])
    assert np.asarray(t).dtype == np.float32 and np.shares_memory(np.asarray(t), t.array)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    copied = np.array(t)  # np.array copies
    assert not np.shares_memory(copied, t.array) and copied.dtype == np.float32
    assert np.add(t, 1.0, dtype=np.float64).dtype == np.float64  # a ufunc's keyword arguments are kept
    total = np.add.reduce(t)
    assert not isinstance(total, ta.Tensor) and total == 3.0
    with pytest.raises(TypeError, match="unsupported operand"):
        [[1.0, 2.0]] @ ta.ones(2, 1)  # as torch: a list is not a matrix operand


def test_len_comparisons_and_to_none():
    assert len(ta.ones(3)) == 3 and len(ta.ones(2, 5)) == 2
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ta.tensor(1.0))
    a, b = ta.tensor([1.0, 5.0]), ta.tensor([2.0, 2.0])
    for result in (a < b, a <= b, a > b, a >= b, a == b, a != b):
        assert type(result.numpy()) is np.ndarray and result.dtype == np.bool_
    assert (a < b).tolist() == [True, False] and (a >= b).tolist() == [False, True]
    t = ta.ones(2)
    assert t.to(None) is t and t.to(None).dtype == np.float32  # torch: .to(None) changes nothing
    assert t.double().dtype == np.float64


def test_max_min_std_arguments_like_torch(rng):
    data = rng.standard_normal((1, 3))
    ours, theirs = ta.tensor(data), torch.tensor(data)
    for name in ("max", "min"):
        for keepdim in (False, True):
            v, i = getattr(ours, name)(dim=1, keepdim=keepdim)
            tv, ti = getattr(theirs, name)(dim=1, keepdim=keepdim)
            assert v.shape == tuple(tv.shape) and i.shape == tuple(ti.shape) and i.dtype == np.int64
            np.testing.assert_array_equal(i.array, ti.numpy())
        for keepdim in (False, True):  # a 0-d tensor: 0-d values and indices, as torch
            v, i = getattr(ta.tensor(4.0, requires_grad=True), name)(dim=0, keepdim=keepdim)
            tv, ti = getattr(torch.tensor(4.0), name)(dim=0, keepdim=keepdim)
            assert v.shape == tuple(tv.shape) == () and i.shape == tuple(ti.shape) == ()
            assert v.item() == 4.0 and i.item() == 0 and i.dtype == np.int64
            v.backward()
    np.testing.assert_allclose(ours.amin(dim=1, keepdim=True).array, theirs.amin(dim=1, keepdim=True).numpy())
    np.testing.assert_allclose(ours.std(unbiased=False).item(), theirs.std(unbiased=False).item())
    np.testing.assert_allclose(ours.std(1, False, True).array, theirs.std(1, False, True).numpy())
    with pytest.raises(TypeError, match=r"min: dim must be an int, got tuple \(for two tensors use ta.where\)"):
        ours.min(dim=(0, 1))
    with pytest.raises(TypeError, match=r"max: dim must be an int, got Tensor \(for two tensors use ta.where\)"):
        ours.max(ours)  # torch's elementwise max(a, b) is ta.where(a > b, a, b) here


@pytest.mark.parametrize("seed", range(12))
def test_split_chunk_cat_stack_match_torch(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(0, 5, size=2))
    dim = int(rng.integers(-2, 2))
    data = rng.standard_normal(shape)
    ours, theirs = ta.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    length = shape[dim]
    how = rng.integers(3)
    if how == 0:
        size = int(rng.integers(1, 4))
        pieces, their_pieces = ta.split(ours, size, dim=dim), torch.split(theirs, size, dim=dim)
    elif how == 1:
        cuts = sorted(rng.integers(0, length + 1, size=2).tolist())
        sizes = [cuts[0], cuts[1] - cuts[0], length - cuts[1]]
        pieces, their_pieces = ta.split(ours, sizes, dim=dim), torch.split(theirs, sizes, dim=dim)
    else:
        chunks = int(rng.integers(1, 5))
        pieces, their_pieces = ta.chunk(ours, chunks, dim=dim), torch.chunk(theirs, chunks, dim=dim)
    assert [p.shape for p in pieces] == [tuple(p.shape) for p in their_pieces]
    order = slice(None, None, -1 if rng.integers(2) else 1)  # joined back as cut, or in reverse
    joined, their_joined = ta.cat(list(pieces)[order], dim=dim), torch.cat(list(their_pieces)[order], dim=dim)
    upstream = rng.standard_normal(joined.shape)
    (joined * ta.tensor(upstream)).sum().backward()
    (their_joined * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(joined.array, their_joined.detach().numpy())
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy())
    a, b = ta.tensor(data), ta.tensor(data + 1)
    assert ta.cat([a, b]).shape == tuple(torch.cat([torch.tensor(data)] * 2).shape)  # dim 0 by default
    assert ta.stack([a, b]).shape == tuple(torch.stack([torch.tensor(data)] * 2).shape)


def test_split_and_chunk_refuse_sizes_below_one():
    x = ta.ones(4)
    with pytest.raises(ValueError, match="split: split_size must be positive, got 0"):
        x.split(0)
    with pytest.raises(ValueError, match="chunk: chunks must be positive, got 0"):
        x.chunk(0)


@pytest.mark.parametrize("call, op", [
    (lambda x: x.size(5), "size"), (lambda x: x.split(1, dim=5), "split"), (lambda x: x.chunk(2, dim=5), "chunk"),
    (lambda x: x.flatten(5), "flatten"), (lambda x: x.flatten(0, 5), "flatten"), (lambda x: x.max(dim=5), "max"),
    (lambda x: x.min(dim=5), "min"), (lambda x: x.sum(dim=5), "sum"), (lambda x: x.mean(dim=5), "mean"),
    (lambda x: x.var(dim=5), "var"), (lambda x: x.amax(dim=5), "amax"), (lambda x: x.softmax(dim=5), "softmax"),
    (lambda x: x.norm(dim=5), "norm"), (lambda x: x.log_softmax(dim=5), "log_softmax"),
])
def test_every_dim_argument_is_checked_and_named(call, op):
    with pytest.raises(IndexError, match=rf"^{op}: dim 5 is out of range for a tensor with 2 dimensions"):
        call(ta.ones(2, 3))


@pytest.mark.parametrize("alpha", [1, 2, -0.5])
def test_add_with_alpha_matches_torch(alpha):
    ours, theirs = ta.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    ours.add_(ta.tensor([4.0, 8.0]), alpha=alpha)
    theirs.add_(torch.tensor([4.0, 8.0]), alpha=alpha)
    np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_promotion_of_bool_unsigned_and_0d_operands_matches_torch():
    cases = [
        (lambda lib: lib.tensor([True, False]) + 1),
        (lambda lib: lib.tensor(np.array([1, 2], dtype=np.uint8)) * 1.5),
        (lambda lib: lib.tensor(np.array([1, 2], dtype=np.uint8)) + 3),
        (lambda lib: lib.ones(3) + lib.tensor(np.float64(2.0))),  # a 0-d float64 does not promote float32
        (lambda lib: lib.tensor(np.float64(2.0)) * lib.tensor(np.array([1, 2]))),  # 0-d float with int dims
        (lambda lib: lib.tensor(np.int32(3)) + 5),  # a 0-d int32 outranks a Python int: int32, not int64
        (lambda lib: 5 + lib.tensor(np.int32(3))),
    ]
    for case in cases:
        ours, theirs = case(ta), case(torch)
        assert str(theirs.dtype) == f"torch.{ours.dtype}"
        np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_matmul_refuses_what_torch_refuses():
    for a, b in [((), (2,)), ((2,), ())]:
        with pytest.raises(ValueError, match="matmul: both operands need at least 1 dim"):
            ta.ones(a) @ ta.ones(b)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4,\) are not aligned \(3 != 4\)"):
        ta.ones(2, 3) @ ta.ones(4)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(5, 4, 6\) are not aligned \(3 != 4\)"):
        ta.ones(2, 3) @ ta.ones(5, 4, 6)
    assert (ta.ones(2, 3) @ ta.ones(5, 3, 6)).shape == (5, 2, 6)
    with pytest.raises(ValueError, match=r"^matmul \(batch dims\): shapes \(2,\) and \(3,\) cannot be broadcast"):
        ta.ones(2, 4, 3) @ ta.ones(3, 3, 5)


def test_softmax_of_a_0d_tensor():
    assert ta.tensor(3.0).softmax(0).item() == 1.0 == torch.tensor(3.0).softmax(0).item()
    assert ta.tensor(-np.inf).softmax(0).item() == 0.0  # masked: as a fully masked row, 0 (torch: nan)
    with pytest.raises(IndexError, match=r"softmax: dim -2 is out of range for a tensor with 1 dimensions"):
        ta.ones(3).softmax(-2)
