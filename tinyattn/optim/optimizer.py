"""``Optimizer``: the shared bookkeeping (parameter groups, per-parameter state, zero_grad, state_dict)."""

from __future__ import annotations

import copy
from typing import Any, Iterable

import numpy as np

from ..nn.parameter import Parameter


class Optimizer:
    """Base class: holds ``param_groups`` (lists of parameters with their hyperparameters) and ``state``.

    Subclasses implement ``step()``; ``state[i]`` holds parameter ``i``'s
    buffers (momentum, Adam's moments, the step count), numbered in order over
    all groups.
    """

    def __init__(self, params: Iterable[Parameter] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> None:
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        for group in groups:
            group = {**defaults, **group, "params": list(group["params"])}
            for p in group["params"]:
                if not getattr(p, "requires_grad", False):
                    raise ValueError(f"{type(self).__name__}: can only optimize tensors that require grad")
            self.param_groups.append(group)
        self.state: dict[int, dict[str, Any]] = {}

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
                p.grad = np.zeros_like(p.grad)

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
