"""Weight initialisers (torch's formulas), drawing from tinyattn's seeded generator."""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Tensor, default_generator


def _fans(t: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) as torch computes them: dims 1 and 0, times the receptive field."""
    if t.ndim < 2:
        raise ValueError(f"fan in/out need at least 2 dims, got shape {t.shape}")
    receptive = int(np.prod(t.shape[2:])) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill ``t`` in place from U(a, b)."""
    t.array[...] = default_generator().uniform(a, b, t.shape)
    return t


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``t`` in place from N(mean, std^2)."""
    t.array[...] = default_generator().normal(mean, std, t.shape)
    return t


def zeros_(t: Tensor) -> Tensor:
    """Fill ``t`` with zeros."""
    t.array[...] = 0
    return t


def ones_(t: Tensor) -> Tensor:
    """Fill ``t`` with ones."""
    t.array[...] = 1
    return t


def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
