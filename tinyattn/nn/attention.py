"""``MultiheadAttention``, with the same contract as ``torch.nn.MultiheadAttention``.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) = softmax(Q_i K_i^T / sqrt(d_k)) V_i

All heads are computed at once: the projections give ``(B, n, E)`` tensors whose
last dim is split into ``h`` heads of ``d_k = E / h``, then moved next to the
batch dim so one batched matmul serves every head.

**Mask polarity.** As in torch's MultiheadAttention, a bool ``key_padding_mask``
or ``attn_mask`` is True where attention is **masked out**; this is the
*opposite* of ``F.scaled_dot_product_attention``, where True means "may
attend". Float masks are added to the scores in both.

**Deliberate difference from torch.** A query whose keys are all masked gets
all-zero attention weights, so every head's output for it is zero and
``attn_output`` there is just ``out_proj.bias``; nothing is NaN, in the forward
or in any gradient. (torch returns NaN there and spreads it into the weight
gradients.)

Homework: comments in this file mark the parts that ``python -m tinyattn.homework`` blanks for
students, and plausible wrong answers (mutants) its tests must catch; see docs/teaching.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Tensor, cat, zeros
from . import functional as F
from . import init
from .layers import Linear, _float_dtype
from .module import Module
from .parameter import Parameter


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
        dtype = _float_dtype(dtype)
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

    def projection_weights(self) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None]:
        """``(W^Q, W^K, W^V, b^Q, b^K, b^V)``, each weight ``(E, in_dim)`` as ``F.linear`` expects."""
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            w_q, w_k, w_v = w[:E].named("W^Q"), w[E : 2 * E].named("W^K"), w[2 * E :].named("W^V")
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b = self.in_proj_bias
        if b is None:
            return w_q, w_k, w_v, None, None, None
        b_q, b_k, b_v = b[:E].named("b^Q"), b[E : 2 * E].named("b^K"), b[2 * E :].named("b^V")
        return w_q, w_k, w_v, b_q, b_k, b_v

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
        if ``need_weights=False``.
        """
        batched = self._check_inputs(query, key, value)
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: the is_causal hint requires attn_mask (as in torch)")
        # Work in (B, n, E) layout, the chapter's
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        B, L, E = query.shape
        S, h, d_k = key.shape[1], self.num_heads, self.head_dim
        mask = self._additive_mask(attn_mask, key_padding_mask, B, L, S, batched, query.dtype)  # (B|1, h|1, L, S)

        # 1. Project: Q = X W^Q + b^Q,  K = X W^K + b^K,  V = X W^V + b^V
        w_q, w_k, w_v, b_q, b_k, b_v = self.projection_weights()
        q = F.linear(query, w_q, b_q).named("Q")  # (B, L, E)
        k = F.linear(key, w_k, b_k).named("K")  # (B, S, E)
        v = F.linear(value, w_v, b_v).named("V")  # (B, S, E)
        if self.bias_k is not None:  # one more, learned, key and value
            k = cat([k, self.bias_k.expand(B, 1, E)], dim=1)  # (B, S + 1, E)
            v = cat([v, self.bias_v.expand(B, 1, E)], dim=1)  # (B, S + 1, E)
            mask = _attend_to_new_key(mask)

        # 2. Split heads: (B, n, E) -> (B, n, h, d_k) -> (B, h, n, d_k)
        # BEGIN TASK mha_split_heads
        # MUTANT: q = q.view(B, h, L, d_k).named("Q_h")
        # MUTANT: q = query.view(B, L, h, d_k).transpose(1, 2).named("Q_h")
        q = q.view(B, L, h, d_k).transpose(1, 2).named("Q_h")  # (B, h, L, d_k)
        k = k.view(B, -1, h, d_k).transpose(1, 2).named("K_h")  # (B, h, S, d_k)
        v = v.view(B, -1, h, d_k).transpose(1, 2).named("V_h")  # (B, h, S, d_k)
        # END TASK
        if self.add_zero_attn:  # one more, all-zero, key and value
            k = cat([k, zeros(B, h, 1, d_k, dtype=k.dtype)], dim=2)  # (B, h, S + 1, d_k)
            v = cat([v, zeros(B, h, 1, d_k, dtype=v.dtype)], dim=2)  # (B, h, S + 1, d_k)
            mask = _attend_to_new_key(mask)

        # 3. head_i = softmax(Q_i K_i^T / sqrt(d_k) + mask) V_i, all heads at once
        dropout_p = self.dropout if self.training else 0.0
        heads, attn_weights = F.attention(q, k, v, mask, dropout_p)  # (B, h, L, d_k), (B, h, L, S)
        heads.name = "heads"

        # 4. Concat(head_1, ..., head_h): (B, h, L, d_k) -> (B, L, h, d_k) -> (B, L, E)
        # BEGIN TASK mha_merge_heads
        # MUTANT: concat = heads.reshape(B, L, E).named("concat")
        concat = heads.transpose(1, 2).reshape(B, L, E).named("concat")  # (B, L, E)
        # END TASK

        # 5. Output projection: Concat(...) W^O + b^O
        attn_output = self.out_proj(concat).named("attn_output")  # (B, L, E)

        # Back to the caller's layout
        if not batched:
            attn_output = attn_output.squeeze(0)  # (L, E)
        elif not self.batch_first:
            attn_output = attn_output.transpose(0, 1)  # (L, B, E)
        if not need_weights:
            return attn_output, None
        if average_attn_weights:
            attn_weights = attn_weights.mean(dim=1)  # (B, L, S)
        return attn_output, (attn_weights if batched else attn_weights.squeeze(0))

    # -- checks and masks ------------------------------------------------------

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """Raise ``ValueError`` naming the shapes if the inputs do not fit; return whether batched."""
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type(t).__name__}")
        if query.ndim not in (2, 3):
            raise ValueError(f"MultiheadAttention: query must be 2-D (unbatched) or 3-D, got shape {query.shape}")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(
                f"MultiheadAttention: query, key and value must have the same number of dims, got shapes "
                f"{query.shape}, {key.shape} and {value.shape}"
            )
        for name, t, dim in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != dim:
                what = "embed_dim" if name == "query" else ("kdim" if name == "key" else "vdim")
                raise ValueError(f"MultiheadAttention: {name} has shape {t.shape}, its last dim must be {what}={dim}")
        batched = query.ndim == 3
        seq = 1 if (batched and self.batch_first) else 0
        if key.shape[seq] != value.shape[seq]:
            raise ValueError(
                f"MultiheadAttention: key and value must have the same sequence length, got shapes "
                f"{key.shape} and {value.shape}"
            )
        if batched:
            b = 0 if self.batch_first else 1
            if not query.shape[b] == key.shape[b] == value.shape[b]:
                raise ValueError(
                    f"MultiheadAttention: batch sizes differ: query {query.shape}, key {key.shape}, "
                    f"value {value.shape} (batch dim {b})"
                )
        return batched

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
                mask = m.reshape(1, 1, L, S)
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
        return None if mask is None else mask.named("M")


def _attend_to_new_key(mask: Tensor | None) -> Tensor | None:
    """Widen an additive mask ``(..., S)`` by one column of 0: every query may attend to the appended key."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype)], dim=-1)
