"""Batch normalization: ``BatchNorm1d`` (``(N, C)`` or ``(N, C, L)``) and ``BatchNorm2d`` (``(N, C, H, W)``).

In training each channel is normalized with the mean and the (biased) variance of the batch, and
the running estimates move towards them: ``running = (1 - momentum) * running + momentum * batch``
(the variance's estimate unbiased, as torch's). In eval mode the running estimates are used. The
normalization is composed of ops, so the gradient through the batch statistics comes from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Tensor
from ..autograd.core.grad_mode import no_grad
from ..autograd.creation import float_dtype
from .module import Module
from .parameter import Parameter


class _BatchNorm(Module):
    dims: tuple[int, ...] = (2, 3)  # the input ranks this layer takes
    weight: Parameter | None
    bias: Parameter | None
    running_mean: Tensor | None
    running_var: Tensor | None
    num_batches_tracked: Tensor | None

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = float_dtype(dtype, device)
        self.register_parameter("weight", Parameter(np.ones(num_features, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(np.zeros(num_features, dtype=dtype)) if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean", Tensor._make(np.zeros(num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor._make(np.ones(num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor._make(np.array(0, dtype=np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input: Tensor) -> Tensor:
        """``(input - mean) / sqrt(var + eps) * weight + bias``, per channel (dim 1)."""
        if not isinstance(input, Tensor) or input.ndim not in self.dims:
            got = getattr(input, "ndim", type(input).__name__)
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self.dims)} input (got {got}D input)")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels in dim 1, got input "
                             f"of shape {tuple(input.shape)}")
        axes = (0, *range(2, input.ndim))
        shape = (1, -1) + (1,) * (input.ndim - 2)
        running_mean, running_var = self.running_mean, self.running_var
        if self.training or running_mean is None or running_var is None:
            count = input.numel() // self.num_features
            if count == 1:
                raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                                 f"{tuple(input.shape)}")
            mean, var = input.mean(axes, keepdim=True), input.var(axes, keepdim=True, correction=0)
            if self.training and running_mean is not None and running_var is not None:
                self._update_running(running_mean, running_var, mean, var, count)
        else:
            mean, var = running_mean.reshape(shape), running_var.reshape(shape)
        out = (input - mean) / (var + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        return out if self.bias is None else out + self.bias.reshape(shape)

    def _update_running(self, running_mean: Tensor, running_var: Tensor, mean: Tensor, var: Tensor,
                        count: int) -> None:
        with no_grad():
            tracked = self.num_batches_tracked
            if tracked is not None:
                tracked.add_(1)
            momentum = 1.0 / int(tracked) if self.momentum is None and tracked is not None else self.momentum or 0.0
            unbiased = var.reshape(-1) * (count / (count - 1))
            running_mean.mul_(1 - momentum).add_(mean.reshape(-1) * momentum)
            running_var.mul_(1 - momentum).add_(unbiased * momentum)

    def extra_repr(self) -> str:
        """``BatchNorm1d(10, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)``, as torch."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, L)``, per channel ``C``."""

    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)``, per channel ``C``."""

    dims = (4,)
