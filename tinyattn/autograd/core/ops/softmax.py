"""Softmax and log-softmax, each one fused op with its backward written out.

Both subtract the row maximum before ``exp`` so huge logits do not overflow.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import normalize_dim
from ..function import Context, Function


def _softmax_dim(op: str, x: np.ndarray, dim: int) -> int | None:
    """The axis to normalize over (None for a 0-d input, whose softmax is 1); integer inputs are refused."""
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: expected a floating point tensor, got dtype {x.dtype} (convert it with .float())")
    d = normalize_dim(op, dim, x.ndim)
    return d if x.ndim else None


class Softmax(Function):
    """``Y = exp(X) / sum(exp(X), dim)``;  ``dX = Y * (dY - sum(dY * Y, dim))``;
    jvp ``tY = Y * (tX - sum(tX * Y, dim))``: the same formula (the softmax's Jacobian ``diag(Y) - Y Yᵀ`` is
    symmetric).

    A row that is ``-inf`` everywhere (e.g. a query whose keys are all masked)
    gives all-zero probabilities and zero gradient instead of NaN.
    """

    formula = "{out} = softmax({0})"
    grad_formulas = ("d{0} = {out} ⊙ (d{out} − rowsum(d{out} ⊙ {out}))",)
    saved_output = 0  # (saved: out)
    symmetric = True  # (the Jacobian diag(Y) − Y Yᵀ: jvp = this backward, applied to the tangent)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int) -> np.ndarray:
        d = _softmax_dim("softmax", x, dim)
        if x.size == 0 or x.ndim == 0:  # empty: nothing to normalize; 0-d: the one element's weight is 1
            y = np.where(np.isneginf(x), 0, 1).astype(x.dtype)  # (0 if masked, as a fully masked row)
        else:
            m = x.max(axis=d, keepdims=True, initial=np.finfo(x.dtype).min)  # all -inf row: exp(-inf - min) = 0
            y = x - m
            np.exp(y, out=y)  # exp(x - max), in place: no overflow; the max cancels in the ratio
            y /= np.maximum(y.sum(axis=d, keepdims=True), 1)  # ≥ 1 (the max gives exp(0)) unless all -inf: then 0
        ctx.dim = d
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        # BEGIN TASK softmax_backward
        (y,) = ctx.saved_tensors
        row_sum = (grad_output * y).sum(axis=ctx.dim, keepdims=True)  # Σ_j dY_j Y_j, one per row
        grad_input = grad_output - row_sum
        grad_input *= y  # dX = Y ⊙ (dY − Σ_j dY_j Y_j), multiplied in place
        return (grad_input,)
        # END TASK


class LogSoftmax(Function):
    """``Y = X - log(sum(exp(X), dim))``;  ``dX = dY - exp(Y) * sum(dY, dim)``;
    jvp ``tY = tX - sum(exp(Y) * tX, dim)``."""

    formula = "{out} = log_softmax({0})"
    grad_formulas = ("d{0} = d{out} − exp({out}) ⊙ rowsum(d{out})",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int) -> np.ndarray:
        d = _softmax_dim("log_softmax", x, dim)
        if x.size == 0 or x.ndim == 0:  # empty; or 0-d, whose log-softmax is log 1 = 0
            y = np.zeros_like(x)
        else:
            shifted = x - x.max(axis=d, keepdims=True)
            y = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))
        ctx.dim = d
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, dim: int) -> Any:
        (tx,), (x,) = tangents, inputs
        d = _softmax_dim("log_softmax", x, dim)
        return tx - (np.exp(out) * tx).sum(axis=d, keepdims=True)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        # BEGIN TASK log_softmax_backward
        (y,) = ctx.saved_tensors
        return (grad_output - np.exp(y) * grad_output.sum(axis=ctx.dim, keepdims=True),)
        # END TASK
