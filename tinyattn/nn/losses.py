"""Losses, as ``torch.nn.functional`` and ``torch.nn`` have them: each a composition of core ops.

Every derivative here comes from the ops (``log_softmax``, ``exp``, ``log``, ``*``, ``sum``);
nothing below has a backward of its own. The reductions are torch's: ``"mean"`` averages (for the
class-index losses, weighted by each target's class weight), ``"sum"`` adds, ``"none"`` keeps
one loss per element.

* ``cross_entropy(x, y) = nll_loss(log_softmax(x, dim=1), y)``, with class ``weight``,
  ``ignore_index`` and ``label_smoothing`` (ε): ``(1 - ε) * nll + ε * mean over classes of -w_c log p_c``;
  ``y`` holds class indices, or class probabilities of ``x``'s shape.
* ``binary_cross_entropy_with_logits(x, y) = -[pos_weight * y log σ(x) + (1 - y) log(1 - σ(x))]``,
  computed as ``(1 - y) x + (1 + (pos_weight - 1) y) softplus(-x)`` so that a large ``|x|`` cannot overflow.
* ``binary_cross_entropy(p, y) = -[y log p + (1 - y) log(1 - p)]`` with each log clamped at -100, as torch.
* ``l1_loss = |x - y|``, ``mse_loss = (x - y)^2``,
  ``kl_div(x, y) = y (log y - x)`` (``x`` log-probabilities; ``log_target=True``: ``exp(y) (y - x)``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..autograd import Tensor, where
from .module import Module

REDUCTIONS = ("mean", "sum", "none")


def _reduce(losses: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _same_shape(name: str, input: Tensor, target: Any) -> None:
    shape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if tuple(input.shape) != shape:
        raise ValueError(f"{name}: input shape {tuple(input.shape)} and target shape {shape} "
                         "differ (torch requires them equal)")


def _as_tensor(value: Any, dtype: Any) -> Tensor:
    """A tensor target stays in the graph (torch differentiates losses in their targets too)."""
    return value if isinstance(value, Tensor) else Tensor(np.asarray(value, dtype=dtype))


def _class_axis_last(name: str, input: Tensor) -> Tensor:
    """``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)`` as ``(..., C)``: the class axis moved last."""
    if input.ndim == 0:
        raise ValueError(f"{name}: expected input of shape (C,), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    return input.movedim(1, -1) if input.ndim > 2 else input


def _class_targets(name: str, input: Tensor, target: Any, ignore_index: int) -> tuple[np.ndarray, np.ndarray]:
    """The class indices as an integer array of the batch shape, and where they count (not ``ignore_index``)."""
    t = np.asarray(target.array if isinstance(target, Tensor) else target)
    batch = (tuple(input.shape[:1]) + tuple(input.shape[2:])) if input.ndim > 1 else ()
    if t.dtype.kind not in "iu":
        also = f" (or class probabilities of shape {tuple(input.shape)})" if name == "cross_entropy" else ""
        raise TypeError(f"{name}: targets must be integer class indices, got dtype {t.dtype}{also}")
    if t.shape != batch:
        raise ValueError(f"{name}: input of shape {tuple(input.shape)} needs targets of shape {batch}, got {t.shape} "
                         "(the classes are dim 1, as in torch: reshape (B, n, C) logits to (B*n, C))")
    num_classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    valid = t != ignore_index
    bad = t[valid & ((t < 0) | (t >= num_classes))]
    if bad.size:
        raise ValueError(f"{name}: target {int(bad.flat[0])} is out of range for {num_classes} classes")
    return np.where(valid, t, 0), valid


def _class_weight(name: str, weight: Any, num_classes: int, dtype: Any) -> Tensor | None:
    if weight is None:
        return None
    w = weight if isinstance(weight, Tensor) else Tensor(np.asarray(weight, dtype=dtype))
    if tuple(w.shape) != (num_classes,):
        raise ValueError(f"{name}: weight must have shape ({num_classes},), one per class, got {tuple(w.shape)}")
    return w


def nll_loss(input: Tensor, target: Any, weight: Any = None, size_average: None = None, ignore_index: int = -100,
             reduce: None = None, reduction: str = "mean") -> Tensor:
    """``-w[y] * input[n, y]``: log-probabilities ``(N, C)`` (or ``(C,)``, ``(N, C, d1, ...)``) and class indices.

    ``"mean"`` divides by the total weight of the counted targets (their number, without ``weight``).
    """
    reduction = _legacy("nll_loss", size_average, reduce, reduction)
    logp = _class_axis_last("nll_loss", input)  # (..., C)
    t, valid = _class_targets("nll_loss", input, target, ignore_index)
    picked = logp.gather(-1, Tensor._make(t[..., None])).squeeze(-1)  # log p of each target, (...)
    w = _class_weight("nll_loss", weight, logp.shape[-1], input.dtype)
    w_of_target = (w.array[t] if w is not None else np.ones(t.shape, input.dtype)) * valid  # 0 where ignored
    losses = -where(valid, picked, 0.0) * w_of_target.astype(input.dtype)  # an ignored -inf counts 0
    if reduction == "mean":
        return losses.sum() / w_of_target.sum().astype(input.dtype)
    return _reduce(losses, reduction, "nll_loss")


def cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: None = None,
                  ignore_index: int = -100, reduce: None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, dim=1), target)``, with torch's ``weight`` and ``label_smoothing``.

    ``target`` holds class indices (shape ``(N,)``, ``()`` or ``(N, d1, ...)``) or class
    probabilities (the input's shape, floating). Label smoothing ε mixes each target with the
    uniform distribution: ``(1 - ε) * loss + ε * mean_c(-w_c log p_c)``.
    """
    reduction = _legacy("cross_entropy", size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    logp = _class_axis_last("cross_entropy", input).log_softmax(dim=-1)  # (..., C)
    num_classes = logp.shape[-1]
    w = _class_weight("cross_entropy", weight, num_classes, input.dtype)
    t = target.array if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind == "f" and t.shape == tuple(input.shape):  # class probabilities (a tensor of them gets a grad)
        probs = _class_axis_last("cross_entropy", _as_tensor(target, input.dtype))
        probs = probs * (1 - label_smoothing) + label_smoothing / num_classes
        weighted = logp * probs if w is None else logp * probs * w
        losses = -weighted.sum(dim=-1)  # (...)
        if reduction == "mean":  # over the samples (and positions), whatever the weights
            return losses.sum() / max(int(np.prod(losses.shape)), 1)
        return _reduce(losses, reduction, "cross_entropy")
    idx, valid = _class_targets("cross_entropy", input, t, ignore_index)
    moved = logp.movedim(-1, 1) if input.ndim > 2 else logp  # back to torch's layout for nll_loss
    nll = nll_loss(moved, t, weight=w, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    per_class = logp if w is None else logp * w.array
    smooth = -where(valid, per_class.sum(dim=-1), 0.0)  # (...): every class's -w_c log p_c, summed
    if reduction == "mean":
        total = (w.array[idx] * valid).sum() if w is not None else valid.sum()
        smooth = smooth.sum() / np.asarray(total, dtype=input.dtype)
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / num_classes)


def binary_cross_entropy_with_logits(input: Tensor, target: Any, weight: Any = None, size_average: None = None,
                                     reduce: None = None, reduction: str = "mean", pos_weight: Any = None) -> Tensor:
    """``-[pos_weight * y log σ(x) + (1 - y) log(1 - σ(x))]``, stable for any logit ``x``.

    ``weight`` scales each element's loss (broadcast); ``pos_weight`` the positive term, per class
    (broadcast along the last dimension).
    """
    reduction = _legacy("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    _same_shape("binary_cross_entropy_with_logits", input, target)
    y = _as_tensor(target, input.dtype)
    softplus_neg = (-input).relu() + (1 + (-input.abs()).exp()).log()  # log(1 + e^-x), without overflow
    if pos_weight is None:
        losses = (1 - y) * input + softplus_neg
    else:
        pw = _as_tensor(pos_weight, input.dtype)
        losses = (1 - y) * input + (1 + (pw - 1) * y) * softplus_neg
    if weight is not None:
        losses = losses * _as_tensor(weight, input.dtype)
    return _reduce(losses, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: None = None,
                         reduce: None = None, reduction: str = "mean") -> Tensor:
    """``-[y log p + (1 - y) log(1 - p)]`` for probabilities ``p`` in [0, 1]; each log is clamped at -100, as torch."""
    reduction = _legacy("binary_cross_entropy", size_average, reduce, reduction)
    _same_shape("binary_cross_entropy", input, target)
    if np.any((input.array < 0) | (input.array > 1)):
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    y = _as_tensor(target, input.dtype)
    losses = -(y * input.log().clamp(min=-100) + (1 - y) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        losses = losses * _as_tensor(weight, input.dtype)
    return _reduce(losses, reduction, "binary_cross_entropy")


def l1_loss(input: Tensor, target: Any, size_average: None = None, reduce: None = None,
            reduction: str = "mean") -> Tensor:
    """``|input - target|``."""
    reduction = _legacy("l1_loss", size_average, reduce, reduction)
    _same_shape("l1_loss", input, target)
    return _reduce((input - _as_tensor(target, input.dtype)).abs(), reduction, "l1_loss")


def mse_loss(input: Tensor, target: Any, size_average: None = None, reduce: None = None,
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """``(input - target)^2`` (times ``weight``, broadcast, if given)."""
    reduction = _legacy("mse_loss", size_average, reduce, reduction)
    _same_shape("mse_loss", input, target)
    losses = (input - _as_tensor(target, input.dtype)) ** 2
    if weight is not None:
        losses = losses * _as_tensor(weight, input.dtype)
    return _reduce(losses, reduction, "mse_loss")


def kl_div(input: Tensor, target: Any, size_average: None = None, reduce: None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` with ``input`` log-probabilities (0 where target is 0).

    ``reduction="batchmean"`` divides the sum by the batch size, the mathematically right KL;
    ``"mean"`` divides by the number of elements, as torch does (and warns about).
    """
    reduction = _legacy("kl_div", size_average, reduce, reduction)
    _same_shape("kl_div", input, target)
    y = _as_tensor(target, input.dtype)
    if log_target:
        losses = y.exp() * (y - input)
    else:  # y log y is taken as 0 where y = 0, as torch's xlogy
        losses = y * (where(y.array > 0, y, 1.0).log() - input)
    if reduction == "batchmean":
        return losses.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(losses, reduction, "kl_div")


def _legacy(name: str, size_average: Any, reduce: Any, reduction: str) -> str:
    """torch's deprecated ``size_average``/``reduce``, as torch reads them: ``reduce=False`` is "none",
    ``size_average=False`` "sum", else "mean" (with torch's warning naming the ``reduction`` to write)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  UserWarning, stacklevel=3)
    return reduction


# -- the losses as modules ---------------------------------------------------------------------------


class _Loss(Module):
    def __init__(self, size_average: None = None, reduce: None = None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _legacy(type(self).__name__, size_average, reduce, reduction)

    def extra_repr(self) -> str:
        """The reduction, when not the default."""
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy`` as a module: logits ``(N, C)`` and class indices ``(N,)`` (or probabilities)."""

    def __init__(self, weight: Any = None, size_average: None = None, ignore_index: int = -100,
                 reduce: None = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """A scalar (or per-target losses with ``reduction="none"``)."""
        return cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                             reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """``F.nll_loss`` as a module: log-probabilities ``(N, C)`` and class indices ``(N,)``."""

    def __init__(self, weight: Any = None, size_average: None = None, ignore_index: int = -100,
                 reduce: None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """A scalar (or per-target losses with ``reduction="none"``)."""
        return nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits`` as a module."""

    def __init__(self, weight: Any = None, size_average: None = None, reduce: None = None, reduction: str = "mean",
                 pos_weight: Any = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """Logits and targets of one shape."""
        return binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                pos_weight=self.pos_weight)


class BCELoss(_Loss):
    """``F.binary_cross_entropy`` as a module."""

    def __init__(self, weight: Any = None, size_average: None = None, reduce: None = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """Probabilities and targets of one shape."""
        return binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class L1Loss(_Loss):
    """``F.l1_loss`` as a module."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """Same shapes in."""
        return l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """``F.mse_loss`` as a module."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """Same shapes in; a scalar out (or the elementwise losses with ``reduction="none"``)."""
        return mse_loss(input, target, reduction=self.reduction)


class KLDivLoss(_Loss):
    """``F.kl_div`` as a module (``reduction="batchmean"`` for the true KL divergence)."""

    def __init__(self, size_average: None = None, reduce: None = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """Log-probabilities and (log-)probabilities of one shape."""
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


def smooth_l1_loss(input: Tensor, target: Any, size_average: None = None, reduce: None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 * d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``)."""
    reduction = _legacy("smooth_l1_loss", size_average, reduce, reduction)
    _same_shape("smooth_l1_loss", input, target)
    d = (input - _as_tensor(target, input.dtype)).abs()
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    return _reduce(where(d.array < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction, "smooth_l1_loss")


def huber_loss(input: Tensor, target: Any, reduction: str = "mean", delta: float = 1.0, weight: Any = None) -> Tensor:
    """``0.5 * d^2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``: smooth_l1 times ``delta``."""
    _same_shape("huber_loss", input, target)
    d = (input - _as_tensor(target, input.dtype)).abs()
    losses = where(d.array < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        losses = losses * _as_tensor(weight, input.dtype)
    return _reduce(losses, reduction, "huber_loss")


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss`` as a module."""

    def __init__(self, size_average: None = None, reduce: None = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """The loss, reduced as asked."""
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``F.huber_loss`` as a module."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        """The loss, reduced as asked."""
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)
