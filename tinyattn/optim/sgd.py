"""Stochastic gradient descent, with momentum and weight decay, using torch's update rule."""

from __future__ import annotations

from typing import Any, Iterable

from ..nn.parameter import Parameter
from .optimizer import Optimizer


class SGD(Optimizer):
    """``g = grad + weight_decay * p``;  ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at first);
    ``p -= lr * b`` (``lr * (g + momentum * b)`` with Nesterov)."""

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr ({lr}), momentum ({momentum}) and weight_decay ({weight_decay}) must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for i, group, p in self._indexed_params():
            if p.grad is None:
                continue
            g = p.grad
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p.data
            if group["momentum"]:
                state = self.state.setdefault(i, {})
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = g.copy()
                else:
                    buf = state["momentum_buffer"]
                    buf *= group["momentum"]
                    buf += (1 - group["dampening"]) * g
                buf = state["momentum_buffer"]
                g = g + group["momentum"] * buf if group["nesterov"] else buf
            p.data -= (group["lr"] * g).astype(p.dtype, copy=False)
