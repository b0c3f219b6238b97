"""Shared test helpers: float64 leaves from a local RNG, a gradcheck shortcut, a program on tinyattn and torch."""

from __future__ import annotations

import numpy as np

import tinyattn as ta
from tinyattn.autograd import gradcheck


def leaf(rng: np.random.Generator, *shape: int, positive: bool = False) -> ta.Tensor:
    """A float64 leaf requiring grad, values ~N(0, 1) (or in [0.5, 2] if positive)."""
    data = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
    return ta.tensor(data, requires_grad=True)


def check(fn, *inputs) -> None:
    """gradcheck ``fn`` at ``inputs`` (random upstream gradient), raising on mismatch."""
    assert gradcheck(fn, inputs)


def assert_as_torch(program, arrays, needs=None, rtol=1e-12, atol=0.0, seed=0) -> str:
    """``program(lib, *tensors)`` on tinyattn and on torch: the same value (dtype and shape too) and the same
    gradients for a random upstream; returns the value's dtype name.

    ``needs[i]`` says whether input ``i`` requires grad (by default: the float ones).
    """
    import torch  # (only the torch cross-checks call this)

    needs = [np.asarray(a).dtype.kind == "f" for a in arrays] if needs is None else needs
    upstream, results = None, []
    for lib in (ta, torch):
        xs = [lib.tensor(a, requires_grad=n) for a, n in zip(arrays, needs)]
        out = program(lib, *xs)
        if upstream is None:
            upstream = np.random.default_rng(seed).standard_normal(tuple(out.shape))
        grads = lib.autograd.grad(out, [x for x in xs if x.requires_grad], lib.tensor(upstream, dtype=out.dtype),
                                  allow_unused=True)
        results.append((str(out.dtype).replace("torch.", ""), out.detach().numpy(),
                        [None if g is None else g.numpy() for g in grads]))
    (dtype, value, grads), (dtype_t, value_t, grads_t) = results
    assert (dtype, value.shape) == (dtype_t, value_t.shape)
    np.testing.assert_allclose(value, value_t, rtol=rtol, atol=atol)
    for g, g_t in zip(grads, grads_t):
        assert (g is None) == (g_t is None)
        if g is not None:
            assert g.shape == g_t.shape
            np.testing.assert_allclose(g, g_t, rtol=rtol, atol=atol)
    return dtype
