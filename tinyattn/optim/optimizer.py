"""``Optimizer``: the shared bookkeeping (parameter groups, per-parameter state, zero_grad, state_dict)."""

from __future__ import annotations

import copy
from typing import Any, Iterable

import numpy as np

from ..autograd import Tensor
from ..nn.parameter import Parameter


class Optimizer:
    """Base class: holds ``param_groups`` (lists of parameters with their hyperparameters) and ``state``.

    Subclasses implement ``step()``; ``state[i]`` holds parameter ``i``'s
    buffers (momentum, Adam's moments, the step count), numbered in order over
    all groups.
    """

    def __init__(self, params: Iterable[Parameter] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        if isinstance(params, Tensor) or not hasattr(params, "__iter__"):
            raise TypeError(
                f"{name}: params must be an iterable of Tensors or dicts, got {type(params).__name__} "
                "(pass model.parameters() or [tensor])"
            )
        listed: list[Any] = list(params)
        if not listed:
            raise ValueError(f"{name}: optimizer got an empty parameter list")
        groups = listed if isinstance(listed[0], dict) else [{"params": listed}]
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        seen: set[int] = set()
        for group in groups:
            if not isinstance(group, dict):
                raise TypeError(f"{name}: mix of parameter groups (dicts) and tensors in params")
            members = group["params"]
            members = [members] if isinstance(members, Tensor) else list(members)
            group = {**defaults, **group, "params": members}
            for p in members:
                if not isinstance(p, Tensor):
                    raise TypeError(f"{name}: can only optimize Tensors, got {type(p).__name__}")
                if not p.is_leaf:
                    raise ValueError(f"{name}: can't optimize a non-leaf Tensor (of shape {p.shape})")
                if not p.requires_grad:
                    raise ValueError(f"{name}: can only optimize tensors that require grad (shape {p.shape})")
                if id(p) in seen:
                    raise ValueError(f"{name}: some parameters appear twice, in one or in two parameter groups")
                seen.add(id(p))
            self.param_groups.append(group)
        self.state: dict[int, dict[str, Any]] = {}

    def _check_non_negative(self, *named: tuple[str, float]) -> None:
        """torch's argument checks: each ``(what, value)`` must be >= 0."""
        for what, value in named:
            if value < 0:
                raise ValueError(f"{type(self).__name__}: invalid {what}: {value} (must be >= 0)")

    def _indexed_params(self) -> Iterable[tuple[int, dict[str, Any], Parameter]]:
        i = 0
        for group in self.param_groups:
            for p in group["params"]:
                yield i, group, p
                i += 1

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``None``, or zeros with ``set_to_none=False``)."""
        for _, _, p in self._indexed_params():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.array = np.zeros_like(p.grad.array)

    def step(self) -> None:
        """Update every parameter that has a gradient."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {i: buffers}, "param_groups": [hyperparameters with "params": [i, ...]]}`` (copies)."""
        groups, i = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": list(range(i, i + n))})
            i += n
        return {"state": copy.deepcopy(self.state), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore buffers and hyperparameters saved by ``state_dict``."""
        groups = state_dict["param_groups"]
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in self.param_groups]:
            raise ValueError("load_state_dict: the saved parameter groups do not match this optimizer's")
        for group, saved in zip(self.param_groups, groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = copy.deepcopy({int(k): v for k, v in state_dict["state"].items()})
