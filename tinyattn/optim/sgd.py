"""Stochastic gradient descent, with momentum and weight decay, using torch's update rule."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..nn.parameter import Parameter
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay, as torch's.

    ``g = grad + weight_decay * p`` (``-grad`` with ``maximize``);
    ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at first);
    ``p -= lr * b`` (``lr * (g + momentum * b)`` with Nesterov).
    """

    def __init__(
        self,
        params: Iterable[Parameter] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        self._check_non_negative(("learning rate", lr), ("momentum value", momentum),
                                 ("weight_decay value", weight_decay))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum > 0 and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient (after ``closure()``, whose loss is returned)."""
        loss = self._evaluate(closure)
        for group, p, g in self._gradients():  # (g: the gradient with maximize and weight decay applied)
            if group["momentum"]:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                # (arrays built anew, not updated in place: a 0-d parameter's arithmetic gives NumPy scalars)
                buf = np.array(g) if buf is None else group["momentum"] * buf + (1 - group["dampening"]) * g
                state["momentum_buffer"] = np.asarray(buf)
                g = g + group["momentum"] * buf if group["nesterov"] else buf
            p.array -= group["lr"] * g
            p._version += 1  # an in-place change: a graph built before it may not backward through p
        return loss
