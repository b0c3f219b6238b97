"""Multi-head attention, the chapter's five steps (§8.4), on the core's tensors and ops alone.

    MultiHead(X) = Concat(head_1, ..., head_h) W^Oᵀ + b^O,   head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i

Every line below is one op of ``ops/`` (through the core ``Tensor``'s operators and methods), so a backward
from the output runs their backward formulas in reverse order: ``LinearFn`` (``dX = dY W``), ``Reshape`` and
``Transpose`` (the inverse reshape and transpose), ``MatMul`` (``dA = dC Bᵀ``), ``Softmax``
(``dS = P ⊙ (dP − rowsum(dP ⊙ P))``). ``tinyattn.nn.functional.multi_head_attention`` is the same function
with torch's options (dropout, FlashAttention, extra keys), on tinyattn's torch-like tensors.
"""

from __future__ import annotations

import math
from typing import Any

from .ops.matmul import LinearFn


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``Y = X Wᵀ + b``, one op: ``X (..., in)``, ``W (out, in)``, ``b (out,)`` -> ``Y (..., out)``."""
    return LinearFn.apply(x, weight, bias)


def attention(q: Any, k: Any, v: Any, mask: Any = None) -> tuple[Any, Any]:
    """``softmax(Q Kᵀ / √d_k + M) V`` and the weights ``P``: ``q (..., L, d_k)``, ``k (..., S, d_k)``,
    ``v (..., S, d_v)``, an additive ``mask`` broadcastable to ``(..., L, S)``."""
    scores = q @ k.transpose(-2, -1)  # (..., L, d_k) @ (..., d_k, S) -> (..., L, S)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + mask  # -inf where a key is blocked
    p = scores.softmax(dim=-1)  # each row sums to 1
    return p @ v, p  # (..., L, S) @ (..., S, d_v) -> (..., L, d_v)


def multi_head_attention(query: Any, key: Any, value: Any, num_heads: int, weights: tuple[Any, Any, Any, Any],
                         biases: tuple[Any, Any, Any, Any] | None = None, mask: Any = None) -> tuple[Any, Any]:
    """The chapter's five steps: ``query (B, L, E)``, ``key`` and ``value (B, S, E)``; ``weights = (W^Q, W^K, W^V,
    W^O)``, each ``(E, E)``; ``biases`` the four ``(E,)`` vectors, or None. Returns the output ``(B, L, E)`` and
    the attention weights ``P (B, h, L, S)``."""
    w_q, w_k, w_v, w_o = weights
    b_q, b_k, b_v, b_o = biases if biases is not None else (None, None, None, None)
    B, L, E = query.shape
    h = num_heads
    if E % h != 0:
        raise ValueError(f"multi_head_attention: the embedding size {E} is not divisible by num_heads {h}")
    d_k = E // h

    # 1. Project: Q = X W^Qᵀ + b^Q, K and V alike
    q = linear(query, w_q, b_q)  # (B, L, E)
    k = linear(key, w_k, b_k)  # (B, S, E)
    v = linear(value, w_v, b_v)  # (B, S, E)

    # 2. Split heads: (B, n, E) -> (B, n, h, d_k) -> (B, h, n, d_k)
    q = q.reshape(B, L, h, d_k).transpose(1, 2)
    k = k.reshape(B, -1, h, d_k).transpose(1, 2)
    v = v.reshape(B, -1, h, d_k).transpose(1, 2)

    # 3. head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i, all heads at once
    heads, p = attention(q, k, v, mask)  # (B, h, L, d_k), (B, h, L, S)

    # 4. Concat(head_1, ..., head_h): (B, h, L, d_k) -> (B, L, h, d_k) -> (B, L, E)
    concat = heads.transpose(1, 2).reshape(B, L, E)

    # 5. Output projection
    return linear(concat, w_o, b_o), p
