"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), with torch's update rules.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; see docs/teaching.md.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ..nn.parameter import Parameter
from .optimizer import Optimizer


class Adam(Optimizer):
    """Per parameter, at step ``t``::

        g = grad + weight_decay * p            (Adam: L2 folded into the gradient)
        m = beta1 * m + (1 - beta1) * g        (first moment)
        v = beta2 * v + (1 - beta2) * g^2      (second moment)
        p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
    """

    decoupled_weight_decay = False

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0:
            name = type(self).__name__
            raise ValueError(f"{name}: lr ({lr}), eps ({eps}) and weight_decay ({weight_decay}) must be >= 0")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for i, group, p in self._indexed_params():
            if p.grad is None:
                continue
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            g = p.grad
            if wd and self.decoupled_weight_decay:
                p.data *= 1 - lr * wd  # AdamW: decay the weights directly
            elif wd:
                g = g + wd * p.data  # Adam: L2 penalty through the gradient
            state = self.state.setdefault(i, {})
            if not state:
                state.update(step=0, exp_avg=np.zeros_like(p.data), exp_avg_sq=np.zeros_like(p.data))
            state["step"] += 1
            t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
            # BEGIN TASK adam_step
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            m_hat_scale = 1 / (1 - beta1**t)
            denom = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
            p.data -= (lr * m_hat_scale * m / denom).astype(p.dtype, copy=False)
            # END TASK


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step (default 1e-2)."""

    decoupled_weight_decay = True

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
