"""Position information and a Transformer encoder block built from the modules above.

Self-attention ignores order (permute the tokens and the outputs permute the
same way), so a position signal is added to each token's embedding:

* ``PositionalEncoding``: fixed sinusoids (Vaswani et al., 2017, §3.5)
  ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``;
* ``LearnedPositionalEncoding``: one learned vector per position (an ``Embedding``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..autograd import Tensor, arange
from ..autograd.creation import float_dtype
from . import functional as F
from .attention import MultiheadAttention
from .layers import Dropout, Embedding, LayerNorm, Linear
from .module import Module


def sinusoidal_table(max_len: int, d_model: int, dtype: Any = np.float32) -> np.ndarray:
    """The ``(max_len, d_model)`` table of sines (even columns) and cosines (odd columns)."""
    if d_model % 2:
        raise ValueError(f"PositionalEncoding: d_model must be even, got {d_model}")
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    freq = np.exp(-math.log(10000.0) * np.arange(0, d_model, 2) / d_model)  # 1 / 10000^(2i/d), (d/2,)
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(pos * freq)
    table[:, 1::2] = np.cos(pos * freq)
    return table.astype(dtype)


class PositionalEncoding(Module):
    """``x + PE[:n]`` with the fixed sinusoidal table, then dropout. Input ``(B, n, d)`` (or ``(n, B, d)``)."""

    def __init__(
        self, d_model: int, max_len: int = 5000, dropout: float = 0.0, batch_first: bool = True, dtype: Any = None
    ) -> None:
        super().__init__()
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        self.pe = sinusoidal_table(max_len, d_model, float_dtype(dtype))  # a constant, not a Parameter
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        n = x.shape[1] if self.batch_first else x.shape[0]
        if x.shape[-1] != self.d_model or n > self.max_len:
            raise ValueError(
                f"PositionalEncoding: input of shape {x.shape} needs last dim {self.d_model} "
                f"and length <= {self.max_len}"
            )
        pe = self.pe[:n] if self.batch_first else self.pe[:n, None, :]  # (n, d) or (n, 1, d)
        return self.dropout(x + pe.astype(x.dtype))

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEncoding(Module):
    """``x + P[:n]`` with ``P`` a learned ``(max_len, d_model)`` table. Input ``(B, n, d)``."""

    def __init__(self, max_len: int, d_model: int, dtype: Any = None) -> None:
        super().__init__()
        self.max_len = max_len
        self.embedding = Embedding(max_len, d_model, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Same shape in and out."""
        n = x.shape[1]
        if n > self.max_len:
            raise ValueError(f"LearnedPositionalEncoding: length {n} exceeds max_len {self.max_len}")
        return x + self.embedding(arange(n))  # (B, n, d) + (n, d)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward network, each wrapped in a residual connection and LayerNorm.

    Post-norm (``norm_first=False``, the paper's and torch's default)::

        x = norm1(x + dropout(SelfAttention(x)))
        x = norm2(x + dropout(W_2 relu(W_1 x)))

    Pre-norm (``norm_first=True``) normalises before each sub-layer instead:
    ``x = x + SelfAttention(norm1(x))``, ``x = x + FFN(norm2(x))``.
    The attention weights of the last call are kept in ``last_attn_weights``
    ``(B, h, n, n)`` for plotting.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        """torch's signature and defaults (``batch_first=False``: inputs ``(n, B, d_model)``)."""
        super().__init__()
        float_dtype(dtype, device)  # (refuses any device but the CPU, and a non-float dtype)
        if isinstance(activation, str):
            if activation not in ("relu", "gelu"):
                raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' or a callable, "
                                 f"got {activation!r}")
            activation = F.relu if activation == "relu" else F.gelu
        self.activation = activation
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2, self.dropout = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.norm_first, self.batch_first = norm_first, batch_first
        self.last_attn_weights: Tensor | None = None

    def _attend(self, x: Tensor, mask: Any, key_padding_mask: Any, is_causal: bool = False) -> Tensor:
        out, weights = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask, average_attn_weights=False,
            is_causal=is_causal,
        )
        self.last_attn_weights = weights.detach()
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        """``(n, B, d_model)`` (or ``(B, n, d_model)`` with ``batch_first``) in, the same shape out.

        ``is_causal`` is torch's hint that ``src_mask`` is the causal mask (it is still the mask that counts)."""
        x = src
        if self.norm_first:
            x = x + self._attend(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + self._attend(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._feed_forward(x))
        return x
