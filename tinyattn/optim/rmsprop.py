"""RMSprop and Adagrad: each parameter's step scaled by its own running size of gradients, with torch's update rules."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..nn.parameter import Parameter
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """``v = alpha * v + (1 - alpha) * g^2``; ``p -= lr * g / (sqrt(v) + eps)`` (Hinton's lecture 6e), as torch's.

    ``g = grad + weight_decay * p`` (``-grad`` with ``maximize``). ``centered`` divides by the running
    variance ``sqrt(v - mean(g)^2)`` instead; ``momentum`` keeps ``b = momentum * b + g / (...)`` and steps ``lr * b``.
    """

    def __init__(self, params: Iterable[Parameter] | Iterable[dict[str, Any]], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        self._check_non_negative(("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                                 ("weight_decay value", weight_decay), ("alpha value", alpha))
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient (after ``closure()``, whose loss is returned)."""
        loss = self._evaluate(closure)
        for group, p, g in self._gradients():  # (g: the gradient with maximize and weight decay applied)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["square_avg"] = np.zeros_like(p.array)
                if group["momentum"]:
                    state["momentum_buffer"] = np.zeros_like(p.array)
                if group["centered"]:
                    state["grad_avg"] = np.zeros_like(p.array)
            state["step"] += 1
            alpha = group["alpha"]
            state["square_avg"] = np.asarray(alpha * state["square_avg"] + (1 - alpha) * g * g)
            if group["centered"]:
                state["grad_avg"] = np.asarray(alpha * state["grad_avg"] + (1 - alpha) * g)
                scale = np.sqrt(state["square_avg"] - state["grad_avg"] ** 2) + group["eps"]
            else:
                scale = np.sqrt(state["square_avg"]) + group["eps"]
            if group["momentum"]:
                state["momentum_buffer"] = np.asarray(group["momentum"] * state["momentum_buffer"] + g / scale)
                p.array -= group["lr"] * state["momentum_buffer"]
            else:
                p.array -= group["lr"] * g / scale
            p._version += 1  # an in-place change: a graph built before it may not backward through p
        return loss


class Adagrad(Optimizer):
    """``s += g^2``; ``p -= lr_t * g / (sqrt(s) + eps)`` with ``lr_t = lr / (1 + (t - 1) * lr_decay)``, as torch's."""

    def __init__(self, params: Iterable[Parameter] | Iterable[dict[str, Any]], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        self._check_non_negative(("learning rate", lr), ("lr_decay value", lr_decay),
                                 ("weight_decay value", weight_decay),
                                 ("initial_accumulator_value value", initial_accumulator_value), ("epsilon value", eps))
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient (after ``closure()``, whose loss is returned)."""
        loss = self._evaluate(closure)
        for group, p, g in self._gradients():  # (g: the gradient with maximize and weight decay applied)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["sum"] = np.full_like(p.array, group["initial_accumulator_value"])
            state["step"] += 1
            lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
            state["sum"] = np.asarray(state["sum"] + g * g)
            p.array -= lr * g / (np.sqrt(state["sum"]) + group["eps"])
            p._version += 1  # an in-place change: a graph built before it may not backward through p
        return loss
