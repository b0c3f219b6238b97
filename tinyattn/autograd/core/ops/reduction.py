"""Reductions over one or more dims. Backward spreads ``dout`` back over the reduced dims."""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable

import numpy as np

from ..checks import normalize_dims
from ..function import Context, Function
from .elementwise import where
from .shared import on_tensors


def _expand_back(grad: np.ndarray, dims: tuple[int, ...], keepdim: bool, shape: tuple[int, ...]) -> np.ndarray:
    """Re-insert the reduced dims of ``grad`` (if dropped) and broadcast it to ``shape``.

    (Sum and Mean are linear: their backward only ever sees arrays, see higher_order.py's Transposed.)
    """
    if not keepdim:
        grad = np.expand_dims(grad, dims)
    return np.broadcast_to(grad, shape)


class Sum(Function):
    """``out = sum(x, dim)``;  ``dx = dout`` copied along the summed dims;  jvp: the op itself (linear)."""

    formula = "{out} = sum({0})"
    grad_formulas = ("d{0} = d{out} copied along the summed dims",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int | Iterable[int] | None, keepdim: bool) -> np.ndarray:
        ctx.dims = normalize_dims("sum", dim, x.ndim)
        ctx.keepdim, ctx.shape = keepdim, x.shape
        return x.sum(axis=ctx.dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (_expand_back(grad_output, ctx.dims, ctx.keepdim, ctx.shape),)


class Mean(Function):
    """``out = sum(x, dim) / N``;  ``dx = dout / N`` copied along the reduced dims;  jvp: the op itself (linear)."""

    formula = "{out} = mean({0})"
    grad_formulas = ("d{0} = d{out} / N copied along the averaged dims",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int | Iterable[int] | None, keepdim: bool) -> np.ndarray:
        ctx.dims = normalize_dims("mean", dim, x.ndim)
        ctx.keepdim, ctx.shape, ctx.count = keepdim, x.shape, math.prod(x.shape[d] for d in ctx.dims)
        total = x.sum(axis=ctx.dims, keepdims=keepdim, dtype=x.dtype if x.dtype.kind == "f" else np.float64)
        total /= ctx.count or np.nan  # in place: one result-sized array, not two (of nothing: nan, as torch)
        return total

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (_expand_back(grad_output / ctx.count, ctx.dims, ctx.keepdim, ctx.shape),)


class Amax(Function):
    """``out = max(x, dim)``;  ``dx = dout * (x == out) / (number of ties)``;
    jvp ``tout = sum(tx * (x == out), dim) / (number of ties)``, the mean of the tangents at the maxima.

    Where several elements tie for the maximum they share the gradient equally,
    as in torch's ``amax``.
    """

    formula = "{out} = max({0})"
    grad_formulas = ("d{0} = d{out} at the maxima (split among ties), 0 elsewhere",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int | Iterable[int] | None, keepdim: bool) -> np.ndarray:
        ctx.dims = normalize_dims("amax", dim, x.ndim)
        if x.size == 0 and (not ctx.dims or any(x.shape[d] == 0 for d in ctx.dims)):
            raise ValueError(f"amax: cannot reduce over an empty dim of a tensor of shape {x.shape}")
        out = x.max(axis=ctx.dims, keepdims=True)
        ctx.kept_shape = out.shape
        ctx.save_for_backward(x == out)
        return out if keepdim else np.squeeze(out, axis=ctx.dims)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (is_max,) = ctx.saved_tensors
        ties = is_max.sum(axis=ctx.dims, keepdims=True, dtype=grad_output.dtype)
        return (is_max * (grad_output.reshape(ctx.kept_shape) / ties),)  # (dout with the reduced dims kept, as 1s)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, dim: Any, keepdim: bool) -> Any:
        (tx,), (x,) = tangents, inputs
        dims = normalize_dims("amax", dim, x.ndim)
        is_max = x == x.max(axis=dims, keepdims=True)
        ties = is_max.sum(axis=dims, keepdims=keepdim)
        return (tx * is_max).sum(axis=dims, keepdims=keepdim) / ties


class TakeAlong(Function):
    """``out = take_along_axis(x, index, dim)``;  ``dx = dout`` put back at ``index`` (zeros elsewhere);  jvp: the
    op itself (linear).

    What ``max(dim)``/``min(dim)`` use: the gradient goes to the one element picked per row.
    """

    formula = "{out} = {0} picked at one index along dim"
    grad_formulas = ("d{0} = d{out} at the picked indices, 0 elsewhere",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, index: np.ndarray, dim: int) -> np.ndarray:
        ctx.index, ctx.dim, ctx.shape, ctx.dtype = index, dim, x.shape, x.dtype
        return np.take_along_axis(x, index, axis=dim) if x.ndim else x.copy()

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        if not ctx.shape:
            return (grad_output.copy(),)
        grad_input = np.zeros(ctx.shape, dtype=ctx.dtype)
        np.put_along_axis(grad_input, ctx.index, grad_output, axis=ctx.dim)
        return (grad_input,)


class Var(Function):
    """``out = sum((x - mean)^2, dim) / (N - correction)``;  ``dx = 2 (x - mean) dout / (N - correction)``;
    jvp ``tout = sum(2 (x - mean) tx, dim) / (N - correction)``."""

    formula = "{out} = var({0})"
    grad_formulas = ("d{0} = 2 ({0} − mean) ⊙ d{out} / (N − correction)",)

    @staticmethod
    def forward(
        ctx: Context, x: np.ndarray, *, dim: int | Iterable[int] | None, keepdim: bool, correction: int
    ) -> np.ndarray:
        dims = normalize_dims("var", dim, x.ndim)
        count = math.prod(x.shape[d] for d in dims)
        mean = np.mean(x, axis=dims, keepdims=True)
        centered = x - mean
        ctx.dims, ctx.denom, ctx.kept_shape = dims, max(count - correction, 0), mean.shape
        ctx.save_for_backward(centered, x)
        if ctx.denom == 0:  # as torch: a warning, and nan (0 / 0) in the value and the gradient
            # (no stacklevel: how many frames lie between the user and this op depends on var/std/apply)
            warnings.warn(f"var: degrees of freedom N - correction = {count} - {correction} <= 0")  # noqa: B028
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sum(centered * centered, axis=dims, keepdims=keepdim) / ctx.denom

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        centered, x = ctx.saved_tensors
        if on_tensors(x):  # a backward recorded as ops: x − mean again, as ops on x
            centered = x - x.mean(axis=ctx.dims, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):  # (dout with the reduced dims kept, as 1s)
            return (2 * centered * grad_output.reshape(ctx.kept_shape) / ctx.denom,)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, dim: Any, keepdim: bool,
            correction: int) -> Any:
        (tx,), (x,) = tangents, inputs
        dims = normalize_dims("var", dim, x.ndim)
        denom = max(math.prod(x.shape[d] for d in dims) - correction, 0)
        centered = x - np.mean(x, axis=dims, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sum(2 * centered * tx, axis=dims, keepdims=keepdim) / denom


class Norm(Function):
    """``out = sqrt(sum(x**2, dim))``, the 2-norm;  ``dx = dout * x / out`` (0 where ``out`` is 0, as torch);
    jvp ``tout = sum(x * tx, dim) / out``."""

    formula = "{out} = ‖{0}‖₂"
    grad_formulas = ("d{0} = d{out} ⊙ {0} / {out}",)
    saved_output = 1  # (saved: x, out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int | Iterable[int] | None, keepdim: bool) -> np.ndarray:
        ctx.dims = normalize_dims("norm", dim, x.ndim)
        total = np.sum(x * x, axis=ctx.dims, keepdims=True)
        ctx.kept_shape = total.shape
        out = np.sqrt(total if keepdim else np.squeeze(total, axis=ctx.dims))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        x, out = ctx.saved_tensors
        nonzero = out != 0
        scale = where(nonzero, grad_output / where(nonzero, out, 1.0), 0.0)  # (0 where the norm is 0, never 0/0)
        return (x * scale.reshape(ctx.kept_shape),)  # (scale, one per reduced row, broadcast along the row)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, dim: Any, keepdim: bool) -> Any:
        (tx,), (x,) = tangents, inputs
        dims = normalize_dims("norm", dim, x.ndim)
        nonzero = out != 0
        return np.where(nonzero, np.sum(x * tx, axis=dims, keepdims=keepdim) / np.where(nonzero, out, 1.0), 0.0)
