"""Small layers that torch programs use beside the chapter's: activations as modules, shape
changes, ``Identity`` and ``LazyLinear``. Each is one or two calls of tensor ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Tensor
from ..autograd.creation import float_dtype
from . import functional as F
from .layers import Linear
from .module import Module
from .parameter import Parameter


class Identity(Module):
    """Returns its input (a placeholder where a layer may be switched off); ignores any arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        """The input itself."""
        return input


class Flatten(Module):
    """``input.flatten(start_dim, end_dim)``; by default every dim but the batch: ``(N, *) -> (N, prod(*))``."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        """Dims ``start_dim..end_dim`` merged."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dim ``dim`` split into ``unflattened_size``: ``(N, 12) -> (N, 3, 4)`` with ``Unflatten(1, (3, 4))``."""

    def __init__(self, dim: int, unflattened_size: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        """The one dim split in several."""
        shape = tuple(input.shape)
        d = self.dim % len(shape) if shape else 0
        if not shape or _product(self.unflattened_size, shape[d]) != shape[d]:
            raise RuntimeError(f"Unflatten: unflattened_size {self.unflattened_size} does not multiply to dim "
                               f"{self.dim} of the input of shape {shape}")
        return input.reshape(*shape[:d], *self.unflattened_size, *shape[d + 1:])

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _product(sizes: tuple[int, ...], total: int) -> int:
    """The product of ``sizes``, one ``-1`` standing for what ``total`` leaves."""
    known = 1
    for n in sizes:
        known *= n if n != -1 else 1
    return total if sizes.count(-1) == 1 and known and total % known == 0 else known


class Softmax(Module):
    """``softmax(input, dim)``: each slice along ``dim`` becomes a distribution.

    The module form; the op and its derivative are ``Softmax`` in ``autograd/core/ops/softmax.py``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"dim={self.dim}"


class Tanh(Module):
    """``tanh(x)``; the op and its derivative are ``Tanh`` in ``autograd/core/ops/elementwise.py``."""

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return input.tanh()


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``; the op and its derivative are ``Sigmoid`` in ``autograd/core/ops/elementwise.py``."""

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return input.sigmoid()


class SiLU(Module):
    """``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.silu(input, self.inplace)


class LazyLinear(Linear):
    """A ``Linear`` whose ``in_features`` is read from the first input it is given.

    Until then the weight has shape ``(out_features, 0)``; the first call fills it in place (the
    same Parameter object, so an optimizer built before that call updates it), initialized as
    ``Linear(in_features, out_features)`` would be.
    """

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, out_features, bias, device=device, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in) -> (..., out_features)``, ``in`` fixed by the first call."""
        if self.in_features == 0:
            if x.ndim == 0:
                raise ValueError("LazyLinear: the input needs at least one dim, got a 0-d tensor")
            fresh = Linear(x.shape[-1], self.out_features, self.bias is not None, dtype=self.weight.dtype)
            self.in_features = x.shape[-1]
            self.weight.array = fresh.weight.array
            if self.bias is not None:
                self.bias.array = fresh.bias.array
        return super().forward(x)


class LogSoftmax(Module):
    """``log_softmax(input, dim)``: the log of a distribution along ``dim``.

    The module form; the op and its derivative are ``LogSoftmax`` in ``autograd/core/ops/softmax.py``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """``LogSoftmax(dim=1)``."""
        return f"dim={self.dim}"


class RMSNorm(Module):
    """``x / sqrt(mean(x², last dims) + eps) * weight`` (Zhang & Sennrich, 2019): a composition of ops.

    ``eps=None`` means the input dtype's machine epsilon, as torch's."""

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float | None = None,
                 elementwise_affine: bool = True, *, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight = Parameter(np.ones(shape, dtype=float_dtype(dtype, device))) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out; normalised over the last ``len(normalized_shape)`` dims."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """``RMSNorm((3,), eps=None, elementwise_affine=True)``, as torch prints it."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        """``LeakyReLU(negative_slope=0.2, inplace=True)``, as torch prints it."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """``ELU(alpha=1.0)``, as torch prints it."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta`` (linear above ``threshold``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        """``Softplus(beta=1.0, threshold=20.0)``, as torch prints it."""
        return f"beta={self.beta}, threshold={self.threshold}"
