"""Training helpers."""

from __future__ import annotations

import math
from typing import Iterable

from .parameter import Parameter


def clip_grad_norm_(parameters: Iterable[Parameter], max_norm: float, norm_type: float = 2.0) -> float:
    """Scale all gradients in place so their joint norm is at most ``max_norm``; return the norm before.

    ``total = (sum_p ||grad_p||^q)^(1/q)`` (``q = norm_type``, ``inf`` for the max);
    if ``total > max_norm`` every gradient is multiplied by ``max_norm / (total + 1e-6)``.
    """
    grads = [p.grad.array for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    if norm_type == math.inf:
        total = max(float(abs(g).max()) for g in grads)
    else:
        total = sum(float((abs(g.astype("float64")) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g *= coef
    return total
