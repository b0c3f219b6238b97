"""Names learners' programs meet on the way, against torch: values, gradients (a random upstream gradient),
dtypes, errors and how the modules print.

``%`` ``//`` ``abs()`` ``eq`` ``ne`` ``rsqrt`` ``mm`` ``narrow`` ``masked_select`` ``nonzero`` ``bincount``
``F.one_hot``, and the modules ``nn.LogSoftmax``, ``nn.ReLU(inplace=True)``, ``nn.Embedding(padding_idx=)``,
``nn.RMSNorm``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
LIBS = (ta, torch)


def _run(program, *arrays, grad=True, seed=0):
    """``program(lib, *tensors)`` in both libraries: (output values, dtype name, gradients of the float inputs)."""
    out = {}
    for lib in LIBS:
        tensors = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        y = program(lib, *tensors)
        grads = []
        if grad and y.requires_grad:
            y.backward(lib.tensor(np.random.default_rng(seed).standard_normal(tuple(y.shape)), dtype=y.dtype))
            grads = [t.grad.numpy() for t in tensors if t.requires_grad]
        out[lib.__name__] = (y.detach().numpy(), str(y.dtype).replace("torch.", ""), grads)
    return out["tinyattn"], out["torch"]


def _same(ours, theirs, rtol=1e-12):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol, atol=1e-12)
    assert ours[1] == theirs[1]
    assert len(ours[2]) == len(theirs[2])
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


def _errors(program):
    messages = []
    for lib in LIBS:
        with pytest.raises(Exception) as err:
            program(lib)
        messages.append((type(err.value).__name__, str(err.value)))
    assert messages[0] == messages[1], messages


@pytest.mark.parametrize("seed", range(5))
def test_remainder_and_floor_division_match_torch_for_floats_ints_and_both_signs(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-9, 9, (3, 4)), rng.choice([-3.5, -2.0, 1.5, 4.0], (3, 4))
    _same(*_run(lambda lib, x, y: x % y, a, b, seed=seed))
    _same(*_run(lambda lib, x, y: lib.remainder(x, y), a, b, seed=seed))
    _same(*_run(lambda lib, x: x % 2.5, a, seed=seed))
    _same(*_run(lambda lib, x: 7.0 % x, b, grad=False))  # (torch has no derivative for a number % a tensor)
    i, j = rng.integers(-9, 9, (3, 4)), rng.choice([-3, -2, 2, 5], (3, 4))
    for program in (lambda lib, x, y: x % y, lambda lib, x, y: x // y, lambda lib, x, y: lib.floor_divide(x, y)):
        _same(*_run(program, i, j, grad=False))
    _same(*_run(lambda lib, x: 7 // x, j, grad=False))
    ours, theirs = _run(lambda lib, x, y: x // y, a, b, grad=False)
    _same(ours, theirs)


def test_comparisons_abs_and_rsqrt_match_torch():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, (4, 3)).astype(float), rng.integers(0, 3, (4, 3)).astype(float)
    for program in (lambda lib, x, y: x.eq(y), lambda lib, x, y: lib.ne(x, y), lambda lib, x, y: lib.eq(x, 1.0)):
        _same(*_run(program, a, b, grad=False))
    _same(*_run(lambda lib, x: abs(x - 1), a))
    _same(*_run(lambda lib, x: x.rsqrt(), rng.uniform(0.5, 4, (3, 3))))
    _same(*_run(lambda lib, x: lib.rsqrt(x), rng.uniform(0.5, 4, (2,))))


def test_mm_matches_torch_and_refuses_as_it_does():
    rng = np.random.default_rng(2)
    _same(*_run(lambda lib, x, y: x.mm(y), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))))
    _errors(lambda lib: lib.ones(2, 3).mm(lib.ones(2, 2)))
    _errors(lambda lib: lib.ones(3).mm(lib.ones(3, 2)))


def test_narrow_and_masked_select_match_torch_with_their_gradients():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5))
    _same(*_run(lambda lib, x: x.narrow(1, 1, 3), a))
    _same(*_run(lambda lib, x: lib.narrow(x, 0, -2, 2), a))
    mask = rng.random((1, 5)) > 0.4
    _same(*_run(lambda lib, x: x.masked_select(lib.tensor(mask)), a))
    _same(*_run(lambda lib, x: lib.masked_select(x, lib.tensor(mask)), a))
    _errors(lambda lib: lib.ones(2, 3).narrow(1, 2, 2))


def test_nonzero_and_bincount_match_torch():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, (3, 4)) * rng.integers(1, 5, (3, 4))
    _same(*_run(lambda lib, x: x.nonzero(), a, grad=False))
    for lib in LIBS:
        parts = lib.nonzero(lib.tensor(a), as_tuple=True)
        if lib is ta:
            ours = [p.numpy() for p in parts]
        else:
            assert all(np.array_equal(o, p.numpy()) for o, p in zip(ours, parts)) and len(ours) == len(parts)
    ids = rng.integers(0, 5, 20)
    _same(*_run(lambda lib, x: x.bincount(), ids, grad=False))
    _same(*_run(lambda lib, x: lib.bincount(x, minlength=9), ids, grad=False))
    weights = rng.standard_normal(20).astype(np.float32)
    _same(*_run(lambda lib, x, w: lib.bincount(x, weights=w), ids, weights, grad=False), rtol=1e-6)
    _errors(lambda lib: lib.bincount(lib.tensor([-1, 2])))
    _errors(lambda lib: lib.bincount(lib.tensor([[1, 2]])))


def test_one_hot_matches_torch_and_refuses_as_it_does():
    ids = np.array([[0, 3], [2, 2]])
    _same(*_run(lambda lib, x: lib.nn.functional.one_hot(x), ids, grad=False))
    _same(*_run(lambda lib, x: lib.nn.functional.one_hot(x, 6), ids, grad=False))
    _errors(lambda lib: lib.nn.functional.one_hot(lib.tensor([0.0, 2.0])))
    _errors(lambda lib: lib.nn.functional.one_hot(lib.tensor([0, 5]), 3))
    _errors(lambda lib: lib.nn.functional.one_hot(lib.tensor([-1, 0])))


def test_log_softmax_and_in_place_relu_modules_match_torch():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4))
    _same(*_run(lambda lib, x: lib.nn.LogSoftmax(dim=1)(x * 2), a))

    def relu_in_place(lib, x):
        hidden = x * 3  # (a non-leaf: torch's in-place ReLU writes into it)
        out = lib.nn.ReLU(inplace=True)(hidden)
        assert out is hidden
        return out * 2

    _same(*_run(relu_in_place, a))
    assert repr(ta.nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    assert repr(ta.nn.ReLU()) == repr(torch.nn.ReLU()) and repr(ta.nn.LogSoftmax(dim=1)) == repr(
        torch.nn.LogSoftmax(dim=1))


@pytest.mark.parametrize("padding_idx", [0, 2, -1])
def test_embedding_with_a_padding_index_matches_torch(padding_idx):
    rng = np.random.default_rng(6)
    weights, ids = rng.standard_normal((5, 3)), np.array([[0, 2, 4], [2, 2, 1]])
    upstream = rng.standard_normal((2, 3, 3))
    results = {}
    for lib in LIBS:
        layer = lib.nn.Embedding(5, 3, padding_idx=padding_idx)
        assert float(np.abs(layer.weight.detach().numpy()[padding_idx]).max()) == 0.0
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(weights, dtype=layer.weight.dtype))
        out = layer(lib.tensor(ids))
        out.backward(lib.tensor(upstream, dtype=out.dtype))
        results[lib.__name__] = (out.detach().numpy(), layer.weight.grad.numpy(), repr(layer), layer.padding_idx)
    ours, theirs = results["tinyattn"], results["torch"]
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[2:] == theirs[2:]
    assert not ours[1][padding_idx].any()


def test_embedding_gradients_outside_the_padding_row_match_torch():
    rng = np.random.default_rng(7)
    weights, ids, upstream = rng.standard_normal((4, 2)), np.array([1, 0, 1, 3]), rng.standard_normal((4, 2))
    grads = []
    for lib in LIBS:
        layer = lib.nn.Embedding(4, 2, padding_idx=1)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(weights, dtype=layer.weight.dtype))
        layer(lib.tensor(ids)).backward(lib.tensor(upstream, dtype=layer.weight.dtype))
        grads.append(layer.weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("eps", [None, 1e-6])
def test_rms_norm_matches_torch(eps):
    rng = np.random.default_rng(8)
    a, w = rng.standard_normal((2, 3, 4)), rng.standard_normal(4)

    def norm(lib, x):
        layer = lib.nn.RMSNorm(4, eps=eps, dtype=lib.float64)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(w))
        return layer(x)

    _same(*_run(norm, a))
    for lib in LIBS:
        assert repr(lib.nn.RMSNorm(4, eps=eps)) == repr((ta if lib is torch else torch).nn.RMSNorm(4, eps=eps))
    _same(*_run(lambda lib, x: lib.nn.RMSNorm((3, 4), elementwise_affine=False, dtype=lib.float64)(x), a))
