"""The basic layers: ``Linear``, ``Embedding``, ``LayerNorm``, ``Dropout``, ``ReLU``, ``GELU``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import Tensor
from ..autograd.creation import float_dtype
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class Linear(Module):
    """``y = x W^T + b`` with ``weight (out_features, in_features)``; init U(+-1/sqrt(in)) as torch."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        dtype = float_dtype(dtype, device)
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(np.empty((out_features, in_features), dtype=dtype))
        init.uniform_(self.weight, -bound, bound)
        if bias:
            self.bias = Parameter(np.empty(out_features, dtype=dtype))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features) -> (..., out_features)``."""
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: integer ids ``(...)`` -> rows of ``weight (num_embeddings, embedding_dim)``; init N(0, 1)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, *,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype=float_dtype(dtype, device)))
        init.normal_(self.weight)
        if padding_idx is not None:
            self.weight.array[padding_idx] = 0  # (the padding's row starts at zero, as torch's)

    def forward(self, ids: Tensor | np.ndarray) -> Tensor:
        """``(...) -> (..., embedding_dim)``."""
        return F.embedding(ids, self.weight, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding whose table is ``embeddings (num, dim)`` (a copy); ``freeze``: no gradient to it."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise ValueError(f"Embeddings parameter is expected to be 2-dimensional, got "
                             f"{getattr(embeddings, 'ndim', type(embeddings).__name__)}-dimensional")
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding.from_pretrained: max_norm, scale_grad_by_freq and sparse are not "
                                      "implemented in tinyattn")
        rows, columns = embeddings.shape
        table = cls(rows, columns, padding_idx=padding_idx, dtype=embeddings.dtype)
        table.weight = Parameter(embeddings.array.copy(), requires_grad=not freeze)
        return table

    def extra_repr(self) -> str:
        """``Embedding(4, 2, padding_idx=0)``, as torch prints it."""
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class LayerNorm(Module):
    """Normalise over the last dims to mean 0, variance 1, then scale and shift (Ba et al., 2016)."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        """torch's arguments: ``bias=False`` keeps the scale ``weight`` only."""
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        dtype = float_dtype(dtype, device)
        if elementwise_affine:
            self.weight = Parameter(np.ones(shape, dtype=dtype))
            if bias:
                self.bias = Parameter(np.zeros(shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class Dropout(Module):
    """Zero elements with probability ``p`` in training (scaling the rest by ``1/(1-p)``); identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"p={self.p}"


class Dropout2d(Module):
    """Zero whole channels (feature maps) with probability ``p`` in training, the rest scaled by ``1/(1-p)``.

    In eval, the identity (see ``F.dropout2d``)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out: ``(N, C, H, W)`` or ``(C, H, W)``."""
        return F.dropout2d(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(Module):
    """``max(x, 0)`` (``inplace=True``: written into ``x``, as torch's)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        return x.copy_(F.relu(x)) if self.inplace else F.relu(x)

    def extra_repr(self) -> str:
        """``ReLU(inplace=True)``, as torch prints it."""
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """``x * Phi(x)`` (``approximate="tanh"`` for the tanh form)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        return F.gelu(x, self.approximate)
