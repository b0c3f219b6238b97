"""``torch.nn.utils``: training helpers (clipping gradients, parameters as one vector) and ``rnn``."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ...autograd import Tensor, tensor
from . import rnn


def _parameters(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale all gradients in place so their joint norm is at most ``max_norm``; return the norm before (a tensor).

    ``total = (sum_p ||grad_p||^q)^(1/q)`` (``q = norm_type``, ``inf`` for the max);
    if ``total > max_norm`` every gradient is multiplied by ``max_norm / (total + 1e-6)``.
    """
    grads = [p.grad.array for p in _parameters(parameters) if p.grad is not None]
    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(float(abs(g).max()) if g.size else 0.0 for g in grads)
    else:
        total = sum(float((abs(g.astype("float64")) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g *= coef
    return tensor(np.asarray(total, dtype=grads[0].dtype))


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient, in place, to ``[-clip_value, clip_value]``."""
    for p in _parameters(parameters):
        if p.grad is not None:
            np.clip(p.grad.array, -clip_value, clip_value, out=p.grad.array)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined into one vector (differentiable: a ``cat`` of ``view(-1)``)."""
    from ...autograd import cat

    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' values (no gradient, as torch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    at = 0
    for p in parameters:
        n = p.array.size
        p.array[...] = vec.array[at : at + n].reshape(p.array.shape)
        p._version += 1
        at += n


__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "rnn", "vector_to_parameters"]
