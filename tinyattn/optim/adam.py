"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), with torch's update rules.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from ..nn.parameter import Parameter
from .optimizer import Optimizer


class Adam(Optimizer):
    """Per parameter, at step ``t``::

        g = grad + weight_decay * p            (Adam: L2 folded into the gradient)
        m = beta1 * m + (1 - beta1) * g        (first moment)
        v = beta2 * v + (1 - beta2) * g^2      (second moment)
        p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

    With ``amsgrad`` the largest ``v`` so far replaces ``v`` in the step; with ``maximize``
    ``g`` starts from ``-grad``; with ``decoupled_weight_decay`` it is AdamW. ``foreach``, ``fused``,
    ``capturable`` and ``differentiable`` choose how torch runs the same update on a GPU: accepted, and the
    update is this one whatever they say.
    """

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        self._check_non_negative(("learning rate", lr), ("epsilon value", eps), ("weight_decay value", weight_decay))
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"{type(self).__name__}: invalid beta parameter at index {index}: {beta} "
                                 "(must be in [0, 1))")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient (after ``closure()``, whose loss is returned)."""
        loss = self._evaluate(closure)
        for _, group, p in self._indexed_params():
            if p.grad is None:
                continue
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            g = -p.grad.array if group["maximize"] else p.grad.array
            if wd and group["decoupled_weight_decay"]:
                p.array *= 1 - lr * wd  # AdamW: decay the weights directly
            elif wd:
                g = g + wd * p.array  # Adam: L2 penalty through the gradient
            state = self.state[p]
            if not state:
                state.update(step=0, exp_avg=np.zeros_like(p.array), exp_avg_sq=np.zeros_like(p.array))
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = np.zeros_like(p.array)
            state["step"] += 1
            t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
            # BEGIN TASK adam_step
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            # END TASK
            if group["amsgrad"]:  # the largest second moment so far stands in for v
                v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            # BEGIN TASK adam_step
            m_hat_scale = 1 / (1 - beta1**t)
            denom = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
            p.array -= lr * m_hat_scale * m / denom
            # END TASK
            p._version += 1  # an in-place change: a graph built before it may not backward through p
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step (default 1e-2)."""

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
