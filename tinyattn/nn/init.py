"""Weight initialisers (torch's formulas), drawing from tinyattn's seeded generator."""

from __future__ import annotations

import math
import warnings
from typing import Any

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


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)``: torch's private name for the same numbers, which programs call."""
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    return _fans(t)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain torch recommends for a nonlinearity, the scale of the kaiming and xavier fills.

    1 for linear layers and sigmoid; 5/3 for tanh; sqrt(2) for ReLU; ``sqrt(2 / (1 + slope^2))`` for
    leaky ReLU (slope 0.01 unless given); 3/4 for SELU."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def constant_(t: Tensor, val: float) -> Tensor:
    """Fill ``t`` with ``val``."""
    t.array[...] = val
    return t


def eye_(t: Tensor) -> Tensor:
    """Fill the 2-D ``t`` with the identity (ones on the diagonal, zeros elsewhere)."""
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    t.array[...] = np.eye(t.shape[0], t.shape[1])
    return t


def _kaiming_std(t: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(t: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: object = None) -> Tensor:
    """U(-b, b) with ``b = sqrt(3) * gain / sqrt(fan)`` (He et al., 2015): the variance ``gain^2 / fan``."""
    bound = math.sqrt(3.0) * _kaiming_std(t, a, mode, nonlinearity)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: object = None) -> Tensor:
    """N(0, std^2) with ``std = gain / sqrt(fan)`` (He et al., 2015)."""
    return normal_(t, 0.0, _kaiming_std(t, a, mode, nonlinearity))


def trunc_normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: object = None) -> Tensor:
    """N(mean, std^2) restricted to ``[a, b]``: every draw outside the bounds is drawn again."""
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a} and b={b}")
    values = default_generator().normal(mean, std, t.shape)
    outside = (values < a) | (values > b)
    for _ in range(1000):
        if not outside.any():
            break
        values[outside] = default_generator().normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    t.array[...] = np.clip(values, a, b)  # (only if [a, b] holds almost none of the mass are any left to clip)
    return t


def orthogonal_(t: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    """A (semi-)orthogonal matrix times ``gain`` (Saxe et al., 2013), from the QR of a normal draw, over dims 1..."""
    if t.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows, cols = t.shape[0], t.array.size // t.shape[0]
    flat = default_generator().normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))  # (the signs of R's diagonal: a uniform draw over orthogonal matrices)
    if rows < cols:
        q = q.T
    t.array[...] = (gain * q).reshape(t.shape)
    return t


def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """Make a convolution's weight ``(out, in, *kernel)`` pass its input through (torch's Dirac delta).

    Each output channel gets a 1 at the kernel's centre for its own input channel (per group), zeros elsewhere.
    """
    if t.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = t.shape[0] // groups
    if t.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    t.array[...] = 0
    centre = tuple(k // 2 for k in t.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, t.shape[1])):
            t.array[(g * out_per_group + d, d) + centre] = 1
    return t


def sparse_(t: Tensor, sparsity: float, std: float = 0.01, generator: object = None) -> Tensor:
    """A 2-D ``t`` drawn from N(0, std), with ``ceil(sparsity * rows)`` elements of each column set to zero."""
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, columns = t.shape
    zeros = int(math.ceil(sparsity * rows))
    rng = default_generator()
    t.array[...] = rng.normal(0.0, std, t.shape)
    for column in range(columns):
        t.array[rng.permutation(rows)[:zeros], column] = 0
    return t


def _deprecated(name: str) -> Any:
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.", FutureWarning,
                      stacklevel=2)
        return globals()[name + "_"](*args, **kwargs)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"torch's deprecated spelling of ``{name}_`` (with its FutureWarning)."
    return alias


uniform, normal, constant = _deprecated("uniform"), _deprecated("normal"), _deprecated("constant")
xavier_uniform, xavier_normal = _deprecated("xavier_uniform"), _deprecated("xavier_normal")
kaiming_uniform, kaiming_normal = _deprecated("kaiming_uniform"), _deprecated("kaiming_normal")
orthogonal, eye, dirac, sparse = (_deprecated("orthogonal"), _deprecated("eye"), _deprecated("dirac"),
                                   _deprecated("sparse"))
