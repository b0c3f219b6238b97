"""``Optimizer``: the shared bookkeeping (parameter groups, per-parameter state, zero_grad, state_dict)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

from ..autograd import Tensor, enable_grad
from ..nn.module import forget_grads, to_numpy
from ..nn.parameter import Parameter


class Optimizer:
    """Base class: holds ``param_groups`` (lists of parameters with their hyperparameters) and ``state``.

    Subclasses implement ``step()``; ``state[p]`` holds parameter ``p``'s buffers (momentum, Adam's moments, the
    step count), as torch's (a ``defaultdict(dict)``: an optimizer of yours may write its own there).
    ``state_dict()`` numbers the parameters in order over all groups.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        if isinstance(params, Tensor) or not hasattr(params, "__iter__"):
            raise TypeError(
                f"{name}: params must be an iterable of Tensors or dicts, got {type(params).__name__} "
                "(pass model.parameters() or [tensor])"
            )
        listed: list[Any] = list(params)
        if not listed:
            raise ValueError(f"{name}: optimizer got an empty parameter list")
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for group in listed if isinstance(listed[0], dict) else [{"params": listed}]:
            if not isinstance(group, dict):
                raise TypeError(f"{name}: mix of parameter groups (dicts) and tensors in params")
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (the others from the defaults), as torch.

        ``params`` may be tensors or ``(name, tensor)`` pairs, as ``model.named_parameters()``
        gives; the names are kept in the group as ``param_names``.
        """
        name = type(self).__name__
        members = param_group["params"]
        members = [members] if isinstance(members, Tensor) else list(members)
        named = [m for m in members if isinstance(m, tuple)]
        if named and len(named) != len(members):
            raise ValueError(f"{name}: all parameters in a group must be named, or none of them")
        group = {**self.defaults, **param_group}
        if named:
            group["param_names"], members = [n for n, _ in named], [p for _, p in named]
        group["params"] = members
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in members:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{name}: can't optimize a non-leaf Tensor (of shape {p.shape})")
            if id(p) in seen:
                raise ValueError(f"{name}: some parameters appear twice, in one or in two parameter groups")
            seen.add(id(p))
        if self.param_groups and ("param_names" in group) != ("param_names" in self.param_groups[0]):
            raise ValueError(f"{name}: all parameter groups should be named, or none of them")
        self.param_groups.append(group)

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

    def _gradients(self) -> Iterable[tuple[dict[str, Any], Parameter, np.ndarray]]:
        """``(group, p, g)`` for each parameter that has a gradient: ``g`` is ``p.grad`` (negated with
        ``maximize``) plus ``weight_decay * p``, torch's L2 penalty through the gradient."""
        for _, group, p in self._indexed_params():
            if p.grad is None:
                continue
            g = -p.grad.array if group["maximize"] else p.grad.array
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p.array
            yield group, p, g

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``None``, or zeros with ``set_to_none=False``)."""
        forget_grads((p for _, _, p in self._indexed_params()), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; with ``closure``, first re-evaluate the loss and return it."""
        raise NotImplementedError

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None) -> Any:
        """``closure()`` with grad mode on (it runs forward and backward), as torch's optimizers call it."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {i: buffers}, "param_groups": [hyperparameters with "params": [i, ...]]}``, as torch's.

        Buffers are Tensors (copies), the step count a float32 0-d tensor, as torch stores them,
        so ``tinyattn.save`` writes a file ``torch.optim``'s ``load_state_dict`` takes, and back.
        """
        groups, i = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": list(range(i, i + n))})
            i += n
        state = {
            index: {key: Tensor._make(np.array(value, np.float32)) if key == "step" else None if value is None
                    else Tensor._make(np.array(getattr(value, "array", value)))
                    for key, value in self.state[p].items()}
            for index, _, p in self._indexed_params() if self.state.get(p)
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore buffers and hyperparameters saved by ``state_dict`` (tinyattn's or torch's)."""
        groups = state_dict["param_groups"]
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in self.param_groups]:
            raise ValueError("load_state_dict: the saved parameter groups do not match this optimizer's "
                             f"(group sizes {tuple(len(g['params']) for g in groups)}, this optimizer's "
                             f"{tuple(len(g['params']) for g in self.param_groups)})")
        saved_ids = [int(i) for g in groups for i in g["params"]]
        params = [p for _, _, p in self._indexed_params()]
        for group, saved in zip(self.param_groups, groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = defaultdict(dict)
        for key, buffers in state_dict["state"].items():
            p = params[saved_ids.index(int(key))]
            self.state[p] = {
                name: int(to_numpy(value)) if name == "step" else None if value is None
                else to_numpy(value).astype(p.dtype).reshape(p.shape)
                for name, value in buffers.items()
            }

