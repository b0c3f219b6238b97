"""Learning-rate schedules, as ``torch.optim.lr_scheduler``: each ``step()`` sets every group's ``lr``.

Call ``scheduler.step()`` once per epoch (or per batch, for OneCycleLR) after ``optimizer.step()``.
A scheduler remembers each group's starting rate as ``group["initial_lr"]`` (``base_lrs``) and
counts its steps in ``last_epoch``; its ``state_dict()`` is every attribute but the optimizer,
under torch's names, so a schedule saved by torch resumes here and the other way round.

Most rules are written as torch writes them, as an update of the current rate (``lr * gamma``
at a milestone), so that two schedulers on one optimizer compose as they do in torch.
"""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Iterable

from .optimizer import Optimizer


class LRScheduler:
    """Base class: records ``initial_lr`` in each group, then takes the first step (epoch 0)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a scheduler "
                               f"with last_epoch={last_epoch} (load the optimizer's state dict first)")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True  # torch's flag: this step sets the starting rates
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for ``last_epoch``, computed from the current ones (subclasses)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rate of each group after the last ``step()``."""
        return self._last_lr

    def _lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set each group's ``lr`` (``epoch=``: jump there, by the closed form)."""
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True  # kept for torch's state dict; torch warns on get_lr() outside step
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._lrs()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer, as torch's."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (this library's or torch's)."""
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``; one function, or one per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"LambdaLR: expected {len(optimizer.param_groups)} lr_lambdas, got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """As the base's, with functions left out (None) and callable objects' attributes kept, as torch."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (this library's or torch's)."""
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """``lr *= gamma`` every ``step_size`` epochs: ``initial_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr *= gamma`` at each milestone epoch: ``initial_lr * gamma ** (milestones passed)``."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)  # a milestone listed twice multiplies by gamma twice
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base_lr * self.gamma**passed for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr *= gamma`` every epoch: ``initial_lr * gamma ** epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        return self._lrs() if self._is_initial else [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """A linear ramp of the factor from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs (a warm-up)::

        lr = initial_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        # the ratio of this epoch's factor to the last one's
        ramp = self.end_factor - self.start_factor
        ratio = 1.0 + ramp / (self.total_iters * self.start_factor + (self.last_epoch - 1) * ramp)
        return [lr * ratio for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        ramp = (self.end_factor - self.start_factor) * min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * (self.start_factor + ramp) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``initial_lr`` down to ``eta_min`` over ``T_max`` epochs (Loshchilov & Hutter, 2017)::

        lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        if self._is_initial:
            return self._lrs()
        if self._step_count == 1 and self.last_epoch > 0:  # resumed with last_epoch: the closed form
            return self._get_closed_form_lr()
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:  # past the bottom, climbing again
            return [lr + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for lr, base_lr in zip(self._lrs(), self.base_lrs)]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
        return [ratio * (lr - self.eta_min) + self.eta_min for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2018), stepped once per batch: the rate climbs from
    ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of the steps, then anneals to
    ``initial_lr / final_div_factor``; momentum (or Adam's beta1) moves the opposite way."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"OneCycleLR: expected a positive integer total_steps, got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0 or not isinstance(steps_per_epoch, int) \
                    or steps_per_epoch <= 0:
                raise ValueError(f"OneCycleLR: expected positive integers epochs and steps_per_epoch, "
                                 f"got {epochs} and {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: expected a float pct_start between 0 and 1, got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', got {anneal_strategy!r}")
        up = float(pct_start * self.total_steps) - 1
        phase = lambda end, lr0, lr1, m0, m1: dict(end_step=end, start_lr=lr0, end_lr=lr1,  # noqa: E731
                                                   start_momentum=m0, end_momentum=m1)
        if three_phase:
            self._schedule_phases = [
                phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                      "max_momentum"),
                phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, top in zip(groups, _per_group("max_lr", groups, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                                 "enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for group, top, low in zip(groups, _per_group("max_momentum", groups, max_momentum),
                                           _per_group("base_momentum", groups, base_momentum)):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """This epoch's rates, from the current ones (torch's chainable form)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):  # the phase this step falls in
                if step <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (phase["end_step"] - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                               group[phase["end_momentum"]], pct))
                    break
                start = phase["end_step"]
        return lrs


def _per_group(name: str, groups: list[dict[str, Any]], value: float | list[float]) -> list[float]:
    """One value per parameter group: a list of them, or one for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(f"OneCycleLR: expected {len(groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(groups)


class SequentialLR(LRScheduler):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (from its epoch 0), and so on."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(f"SequentialLR does not support ReduceLROnPlateau (at index {i}): its step needs "
                                 "the metric")
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but "
                                 f"the scheduler {type(scheduler).__name__} at index {i} has another one")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR expects one milestone fewer than schedulers, but got {len(schedulers)} "
                             f"schedulers and {len(milestones)} milestones")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo what the schedulers' own first steps did
            group["lr"] = group["initial_lr"]
        for scheduler in schedulers:
            scheduler.last_epoch -= 1
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch with the scheduler whose milestone has been reached."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)  # the next scheduler starts at its own epoch 0
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer, and the inner schedulers' state dicts."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (this library's or torch's)."""
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, each in zip(self._schedulers, saved):
            scheduler.load_state_dict(each)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` once the metric passed to ``step(metric)`` stops improving
    for more than ``patience`` epochs (then wait ``cooldown`` epochs; never below ``min_lr``)."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor, self.optimizer = factor, optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = self._lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """One epoch's metric (a loss to minimize, or with ``mode="max"`` an accuracy)."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            if len(self.min_lrs) != len(self.optimizer.param_groups) and self.default_min_lr is not None:
                self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new_lr = max(float(group["lr"]) * self.factor, floor)
                if float(group["lr"]) - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._lrs()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (this library's or torch's)."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "OneCycleLR", "ReduceLROnPlateau", "SequentialLR", "StepLR"]
