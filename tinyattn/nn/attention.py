"""``MultiheadAttention``, with the same contract as ``torch.nn.MultiheadAttention``.

The math, the chapter's five steps, is ``F.multi_head_attention`` (``functional.py``)::

    MultiHead(X) = Concat(head_1, ..., head_h) W^Oᵀ + b^O
    head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i,   Q = X W^Qᵀ + b^Q  (K, V alike)

This module holds the parameters (stored ``(out, in)`` as torch stores them) and
adapts torch's conventions around that core: ``(n, B, E)`` or unbatched layouts,
``kdim``/``vdim``, ``add_bias_kv``, ``add_zero_attn``, the two masks, and the
averaging of the attention weights over heads.

**Mask polarity.** As in torch's MultiheadAttention, a bool ``key_padding_mask``
or ``attn_mask`` is True where attention is **masked out**; this is the
*opposite* of ``F.scaled_dot_product_attention``, where True means "may
attend". Float masks are added to the scores in both.

**Deliberate difference from torch.** A query whose keys are all masked gets
all-zero attention weights, so every head's output for it is zero and
``attn_output`` there is just ``out_proj.bias``; nothing is NaN, in the forward
or in any gradient. (torch returns NaN there and spreads it into the weight
gradients.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Tensor, cat, zeros
from ..autograd.creation import float_dtype
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter
from .sdpa_backends import SDPBackend, sdpa_kernel  # noqa: F401  (torch.nn.attention's names)


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al., 2017), parameter for parameter like torch's.

    Args:
        embed_dim: ``E`` (``d_model``), the size of queries and of the output.
        num_heads: ``h``; each head has ``head_dim = E / h`` (``d_k``).
        dropout: dropout probability on the attention weights (training only).
        bias: add biases to the input and output projections.
        add_bias_kv: append a learned key and value (``bias_k``, ``bias_v``) to the sequence.
        add_zero_attn: append an all-zero key and value after the heads are split.
        kdim, vdim: feature sizes of key and value (default ``E``).
        batch_first: inputs are ``(B, n, E)`` instead of ``(n, B, E)``.
        dtype: the parameters' dtype (float32 by default).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        *,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) and num_heads ({num_heads}) must be > 0")
        if embed_dim % num_heads != 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        dtype = float_dtype(dtype, device)
        E = embed_dim
        self.embed_dim, self.num_heads, self.head_dim = E, num_heads, E // num_heads
        self.kdim = kdim if kdim is not None else E
        self.vdim = vdim if vdim is not None else E
        self._qkv_same_embed_dim = self.kdim == E and self.vdim == E
        self.dropout, self.batch_first, self.add_zero_attn = dropout, batch_first, add_zero_attn

        # W^Q, W^K, W^V: stacked as rows (q, k, v) of in_proj_weight when all three are (E, E)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * E, E), dtype=dtype)).named("in_proj_weight")
            init.xavier_uniform_(self.in_proj_weight)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(np.empty((E, E), dtype=dtype)).named("W^Q")
            self.k_proj_weight = Parameter(np.empty((E, self.kdim), dtype=dtype)).named("W^K")
            self.v_proj_weight = Parameter(np.empty((E, self.vdim), dtype=dtype)).named("W^V")
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * E, dtype=dtype)).named("in_proj_bias")
        else:
            self.register_parameter("in_proj_bias", None)
        # W^O
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        if bias:
            init.zeros_(self.out_proj.bias)
        self.out_proj.weight.name = "W^O"
        if bias:
            self.out_proj.bias.name = "b^O"
        if add_bias_kv:
            self.bias_k = Parameter(np.empty((1, 1, E), dtype=dtype)).named("bias_k")
            self.bias_v = Parameter(np.empty((1, 1, E), dtype=dtype)).named("bias_v")
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)

    def extra_repr(self) -> str:
        """Constructor arguments."""
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"

    def projection_weights(self) -> tuple[
        tuple[Tensor, Tensor, Tensor, Tensor], tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None] | None
    ]:
        """The weights ``(W^Q, W^K, W^V, W^O)`` and biases ``(b^Q, b^K, b^V, b^O)`` for ``F.multi_head_attention``.

        Each weight is ``(E, in_dim)``, as ``F.linear`` expects; the biases are None without ``bias``.
        """
        E = self.embed_dim
        if self._qkv_same_embed_dim:  # rows q, k, v of in_proj_weight
            w_q = self.in_proj_weight[:E].named("W^Q")
            w_k = self.in_proj_weight[E : 2 * E].named("W^K")
            w_v = self.in_proj_weight[2 * E :].named("W^V")
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        if self.in_proj_bias is None:
            return (w_q, w_k, w_v, self.out_proj.weight), None
        b_q = self.in_proj_bias[:E].named("b^Q")
        b_k = self.in_proj_bias[E : 2 * E].named("b^K")
        b_v = self.in_proj_bias[2 * E :].named("b^V")
        return (w_q, w_k, w_v, self.out_proj.weight), (b_q, b_k, b_v, self.out_proj.bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | np.ndarray | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | np.ndarray | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``; return ``(attn_output, attn_weights)``.

        Shapes (``L`` queries, ``S`` keys, batch ``B``): ``query (L, B, E)``,
        ``key (S, B, kdim)``, ``value (S, B, vdim)``, or ``(B, ., .)`` with
        ``batch_first``, or unbatched ``(L, E)``, ``(S, kdim)``, ``(S, vdim)``.
        ``key_padding_mask (B, S)``; ``attn_mask (L, S)`` or ``(B * num_heads, L, S)``.
        Returns ``attn_output`` shaped like ``query`` and ``attn_weights``
        ``(B, L, S)`` (averaged over heads) or ``(B, num_heads, L, S)``, or None
        if ``need_weights=False``. The math is ``F.multi_head_attention``; this
        method adapts torch's layouts, masks and options around it.
        """
        batched = self._check_inputs(query, key, value, attn_mask, is_causal)
        query, key, value = self._to_batch_first(query, key, value, batched)  # the chapter's layout, (B, n, E)
        mask, extra_kv = self._masks(attn_mask, key_padding_mask, query, key, batched)
        attn_output, attn_weights = self._attend(query, key, value, mask, extra_kv, need_weights)
        return self._to_callers_layout(attn_output, attn_weights, batched, average_attn_weights)

    def _attend(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                extra_kv: tuple[Tensor, Tensor] | None, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """The chapter's five steps, ``F.multi_head_attention``: ``attn_output (B, L, E)`` and the weights
        ``(B, h, L, S)`` (None with ``need_weights=False``, which takes FlashAttention, as torch's fast path does).
        Self-attention without weights projects Q, K and V in one product first, as torch does."""
        dropout_p = self.dropout if self.training else 0.0
        if not need_weights and query is key is value and self.in_proj_weight is not None and extra_kv is None:
            attn_output = F.packed_self_attention(query, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                                                  self.out_proj.weight, self.out_proj.bias, mask, dropout_p)
            return attn_output, None
        return F.multi_head_attention(query, key, value, self.num_heads, *self.projection_weights(), mask, dropout_p,
                                      extra_kv, need_weights)

    # -- layouts, checks and masks ---------------------------------------------

    def _to_batch_first(self, query: Tensor, key: Tensor, value: Tensor, batched: bool) -> tuple[
        Tensor, Tensor, Tensor
    ]:
        """The inputs in the chapter's ``(B, n, E)`` layout: unbatched ones get a batch of one, ``(n, B, E)`` ones
        swap their first two dims, ``batch_first`` ones stay. Self-attention's one tensor stays one."""
        if batched and self.batch_first:
            return query, key, value
        change = Tensor.transpose if batched else Tensor.unsqueeze
        args = (0, 1) if batched else (0,)
        if query is key is value:
            x = change(query, *args)
            return x, x, x
        return change(query, *args), change(key, *args), change(value, *args)

    def _masks(self, attn_mask: Any, key_padding_mask: Any, query: Tensor, key: Tensor, batched: bool) -> tuple[
        Tensor | None, tuple[Tensor, Tensor] | None
    ]:
        """The additive mask ``(B|1, h|1, L, S)`` (None without masks), and the keys and values appended after the
        projections by ``add_bias_kv`` and ``add_zero_attn`` (None without them), the mask widened for them."""
        mask = extra_kv = None  # (the common case: neither masks nor extra keys)
        if attn_mask is not None or key_padding_mask is not None:
            B, L = query.shape[0], query.shape[1]
            mask = self._additive_mask(attn_mask, key_padding_mask, B, L, key.shape[1], batched, query.dtype)
        if self.bias_k is not None or self.add_zero_attn:
            extra_kv, mask = self._extra_keys(query.shape[0], query.shape[2], mask)
        return mask, extra_kv

    def _to_callers_layout(self, attn_output: Tensor, attn_weights: Tensor | None, batched: bool,
                           average_attn_weights: bool) -> tuple[Tensor, Tensor | None]:
        """Back from ``(B, L, E)`` to the caller's layout: ``(L, B, E)``, or ``(L, E)`` unbatched; the weights
        averaged over the heads ``(B, L, S)`` if asked, and unbatched too."""
        if not batched:
            attn_output = attn_output.squeeze(0)  # (L, E)
        elif not self.batch_first:
            attn_output = attn_output.transpose(0, 1)  # (L, B, E)
        if attn_weights is None:
            return attn_output, None
        if average_attn_weights:
            attn_weights = attn_weights.mean(dim=1)  # (B, L, S)
        if not batched:
            attn_weights = attn_weights.squeeze(0)
        return attn_output, attn_weights

    def _extra_keys(self, B: int, E: int, mask: Tensor | None) -> tuple[tuple[Tensor, Tensor], Tensor | None]:
        """``add_bias_kv`` (one more, learned, key and value) and ``add_zero_attn`` (one more, all zero), ``(B, 1, E)``
        each, and the mask widened so that every query may attend to them."""
        extra_k, extra_v = [], []
        if self.bias_k is not None:
            extra_k.append(self.bias_k.expand(B, 1, E))
            extra_v.append(self.bias_v.expand(B, 1, E))
        if self.add_zero_attn:  # (zero in every head; cat below promotes them to the keys' dtype)
            extra_k.append(zeros(B, 1, E))
            extra_v.append(zeros(B, 1, E))
        return (cat(extra_k, dim=1), cat(extra_v, dim=1)), _attend_to_new_keys(mask, len(extra_k))

    def _check_inputs(self, query: Any, key: Any, value: Any, attn_mask: Any, is_causal: bool) -> bool:
        """Raise naming the shapes if the inputs do not fit (the first failing check); return whether batched."""
        if not (isinstance(query, Tensor) and isinstance(key, Tensor) and isinstance(value, Tensor)):
            name, x = next((n, x) for n, x in (("query", query), ("key", key), ("value", value))
                           if not isinstance(x, Tensor))
            raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type(x).__name__}")
        q, k, v = query.shape, key.shape, value.shape
        if len(q) not in (2, 3):
            raise ValueError(f"MultiheadAttention: query must be 2-D (unbatched) or 3-D, got shape {q}")
        if len(k) != len(q) or len(v) != len(q):
            raise ValueError(f"MultiheadAttention: query, key and value must have the same number of dims, got "
                             f"shapes {q}, {k} and {v}")
        if (q[-1], k[-1], v[-1]) != (self.embed_dim, self.kdim, self.vdim):
            name, shape, what, dim = next(c for c in (("query", q, "embed_dim", self.embed_dim),
                                                      ("key", k, "kdim", self.kdim), ("value", v, "vdim", self.vdim))
                                          if c[1][-1] != c[3])
            raise ValueError(f"MultiheadAttention: {name} has shape {shape}, its last dim must be {what}={dim}")
        seq, batch = (1, 0) if len(q) == 3 and self.batch_first else (0, 1)
        if k[seq] != v[seq]:
            raise ValueError(f"MultiheadAttention: key and value must have the same sequence length, got shapes "
                             f"{k} and {v}")
        if len(q) == 3 and not q[batch] == k[batch] == v[batch]:
            raise ValueError(f"MultiheadAttention: batch sizes differ: query {q}, key {k}, value {v} "
                             f"(batch dim {batch})")
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: the is_causal hint requires attn_mask (as in torch)")
        return len(q) == 3

    def _additive_mask(
        self, attn_mask: Any, key_padding_mask: Any, B: int, L: int, S: int, batched: bool, dtype: Any
    ) -> Tensor | None:
        """Merge ``attn_mask`` and ``key_padding_mask`` into one additive mask ``(B|1, h|1, L, S)``."""
        h = self.num_heads
        mask = None
        if attn_mask is not None:
            m = F.additive_mask(attn_mask, "MultiheadAttention: attn_mask", dtype, true_means="masked")
            heads_first = (B * h, L, S) if batched else (h, L, S)
            if m.shape == (L, S):
                mask = m  # (L, S): the same for every batch element and head
            elif m.shape == heads_first:
                mask = m.reshape(B, h, L, S)
            else:
                raise ValueError(
                    f"MultiheadAttention: attn_mask must have shape {(L, S)} or {heads_first}, got {m.shape}"
                )
        if key_padding_mask is not None:
            m = F.additive_mask(key_padding_mask, "MultiheadAttention: key_padding_mask", dtype, true_means="masked")
            expected = (B, S) if batched else (S,)
            if m.shape != expected:
                raise ValueError(f"MultiheadAttention: key_padding_mask must have shape {expected}, got {m.shape}")
            padding = m.reshape(B, 1, 1, S)  # the same keys hidden from every head and query
            mask = padding if mask is None else mask + padding
        if mask is not None:
            mask.name = "M"
        return mask


def _attend_to_new_keys(mask: Tensor | None, count: int) -> Tensor | None:
    """Widen an additive mask ``(..., S)`` by ``count`` columns of 0: every query may attend to the appended keys."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], count)], dim=-1)  # (cat promotes the zeros to the mask's dtype)
