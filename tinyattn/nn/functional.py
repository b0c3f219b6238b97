"""``tinyattn.nn.functional`` (import as ``F``): stateless layers, losses and attention.

Attention masks come in two polarities, exactly as in PyTorch:

* ``scaled_dot_product_attention``: a bool ``attn_mask`` is True where a query
  **may attend** to a key.
* ``MultiheadAttention`` (``key_padding_mask``, ``attn_mask``): a bool mask is
  True where attention is **masked out**.

A float mask is always *added* to the scores (``-inf`` blocks a key).

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..autograd import Tensor, cat, default_generator, tensor, where
from ..autograd.core.checks import broadcast_shapes, broadcasts_to
from ..autograd.core.ops.elementwise import GELUFn, ReLUFn
from ..autograd.core.ops.flash_attention import FlashAttention, PackedFlashAttention
from ..autograd.core.ops.matmul import LinearFn
from .conv import (  # (conv.py)
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    max_pool1d,
    max_pool2d,
)
from .losses import (  # the losses live in losses.py, compositions of the ops
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x W^T + b``: ``(..., in) -> (..., out)`` with ``weight (out, in)`` (one op: ``core/ops/matmul.py``)."""
    return LinearFn.apply(input, weight, bias)


def relu(input: Tensor) -> Tensor:
    """``max(x, 0)``."""
    return ReLUFn.apply(input)


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))`` (torch's deprecated ``F.sigmoid``: ``torch.sigmoid``)."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """``tanh(x)`` (torch's deprecated ``F.tanh``: ``torch.tanh``)."""
    return input.tanh()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, else ``negative_slope * x``."""
    out = where(input.array > 0, input, input * negative_slope)
    return input.copy_(out) if inplace and not input.requires_grad else out


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    out = where(input.array > 0, input, (where(input.array > 0, 0.0, input).exp() - 1) * alpha)
    return input.copy_(out) if inplace and not input.requires_grad else out


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, and ``x`` itself where ``beta x > threshold`` (as torch)."""
    scaled = input * beta
    big = scaled.array > threshold
    safe = where(big, 0.0, scaled)  # (exp of the large values is never taken)
    return where(big, input, (safe.exp() + 1).log() / beta)


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dims: ``pad = (left, right)`` for the last, then ``(top, bottom)`` for the one before...
    (``mode="constant"`` only; a negative amount crops)."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode={mode!r} is not implemented in tinyattn (only 'constant')")
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got {tuple(pad)}")
    if len(pad) > 2 * input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    out = input
    for i in range(len(pad) // 2):
        axis, before, after = input.ndim - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1])
        for amount, at_start in ((before, True), (after, False)):
            if amount < 0:
                n = out.shape[axis]
                out = out.narrow(axis, -amount, n + amount) if at_start else out.narrow(axis, 0, n + amount)
            elif amount > 0:
                shape = list(out.shape)
                shape[axis] = amount
                block = Tensor._make(np.full(shape, 0 if value is None else value, dtype=out.dtype))
                out = cat([block, out] if at_start else [out, block], axis)
    return out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim`` (at ``||x||_p = eps`` the gradient flows through the norm, as torch)."""
    if out is not None:
        raise TypeError("normalize: out= is not supported here")
    norm = input.norm(p, dim, keepdim=True)
    return input / where(norm.array >= eps, norm, eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``(x1 / max(||x1||, eps)) . (x2 / max(||x2||, eps))`` along ``dim``, after broadcasting the two, as torch.

    As torch's, a norm held at ``eps`` still passes on its gradient (torch clamps it in place, unrecorded)."""
    shape = broadcast_shapes("cosine_similarity", x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1, n2 = x1.norm(2, dim, keepdim=True), x2.norm(2, dim, keepdim=True)
    n1, n2 = (n + tensor(np.maximum(n.array, eps) - n.array) for n in (n1, n2))  # (max(n, eps) in value only)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``(...)`` int64 class ids -> ``(..., num_classes)`` int64 rows of one 1 each (``num_classes=-1``: max + 1)."""
    ids = tensor.array if isinstance(tensor, Tensor) else np.asarray(tensor)
    if ids.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if ids.size and ids.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not ids.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(ids.max()) + 1
    if ids.size and ids.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make((ids[..., None] == np.arange(num_classes)).astype(np.int64))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (exact, or the tanh approximation)."""
    return GELUFn.apply(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (the swish activation)."""
    if inplace:
        raise ValueError("silu: inplace=True is not supported (use the result)")
    return input * input.sigmoid()


def implicit_dim(op: str, ndim: int, stacklevel: int) -> int:
    """torch's guess when ``dim`` is not given (deprecated, with a warning): 0 for 0-, 1-, 3-D input, else 1."""
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an "
                  "argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``."""
    dim = implicit_dim("softmax", input.ndim, _stacklevel) if dim is None else dim
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x, dim)``."""
    dim = implicit_dim("log_softmax", input.ndim, _stacklevel) if dim is None else dim
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0  # zeros that keep the graph (and the dtype)
    keep = default_generator().random(input.shape) >= p
    return input * (keep / (1.0 - p)).astype(input.dtype)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only).

    Each ``(n, c)`` feature map of an ``(N, C, H, W)`` input (or ``(C, H, W)``) is kept or dropped as one."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (3, 4):
        raise RuntimeError(f"dropout2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape "
                           f"{tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    channels = tuple(input.shape[:-2]) + (1, 1)  # one draw per feature map, broadcast over H and W
    keep = default_generator().random(channels) >= p
    scale = (keep / (1.0 - p)).astype(input.dtype) if p < 1.0 else np.zeros(channels, input.dtype)
    if inplace:
        return input.mul_(Tensor._make(scale))
    return input * scale


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation: ``input / sqrt(mean(input², last dims) + eps) * weight``.

    Over the last ``len(normalized_shape)`` dims; ``eps=None``: the dtype's machine epsilon, as torch's."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if tuple(input.shape[input.ndim - n:]) != shape:
        raise RuntimeError(f"rms_norm: expected input with shape [*, {', '.join(map(str, shape))}], but got input "
                           f"of size {tuple(input.shape)}")
    eps = float(np.finfo(input.dtype).eps) if eps is None else eps
    dims = tuple(range(-n, 0))
    y = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


def layer_norm(
    input: Tensor,
    normalized_shape: tuple[int, ...],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """``y = (x - mean) / sqrt(var + eps) * weight + bias`` over the last ``len(normalized_shape)`` dims."""
    normalized_shape = tuple(normalized_shape)
    if not normalized_shape:
        raise ValueError("layer_norm: normalized_shape must have at least one dim, got ()")
    if input.shape[input.ndim - len(normalized_shape) :] != normalized_shape:
        raise ValueError(f"layer_norm: input of shape {input.shape} does not end in {normalized_shape}")
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = input.mean(dim=dims, keepdim=True)
    var = input.var(dim=dims, keepdim=True, correction=0)  # biased, as torch
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def embedding(input: Tensor | np.ndarray, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight (num_embeddings, dim)`` picked by integer ``input``: ``(...) -> (..., dim)``.

    With ``padding_idx``, that row's lookups pass no gradient back (its row stays as it is)."""
    idx = np.asarray(input.array if isinstance(input, Tensor) else input)  # (a float tensor may require grad)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be integers, got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= weight.shape[0]):
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise IndexError(f"embedding: index {bad} is out of range for {weight.shape[0]} embeddings")
    rows = weight[idx]
    if padding_idx is None:
        return rows
    padding = (idx == (padding_idx % weight.shape[0]))[..., None]  # (..., 1): the lookups of the padding row
    return where(padding, rows.detach(), rows)  # the same values; no gradient from the padding's positions


# ---------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------


def additive_mask(mask: Any, name: str, dtype: Any, true_means: str) -> Tensor:
    """A mask as a float tensor to add to the scores: 0 = attend, ``-inf`` = blocked.

    ``true_means`` says what a bool ``True`` means: ``"masked"`` (MultiheadAttention)
    or ``"attend"`` (scaled_dot_product_attention). Float masks pass through.
    """
    if true_means not in ("masked", "attend"):
        raise ValueError(f"additive_mask: true_means must be 'masked' or 'attend', got {true_means!r}")
    m = mask if isinstance(mask, Tensor) else tensor(np.asarray(mask))  # (a float64 NumPy mask stays float64)
    if m.dtype == np.bool_:
        blocked = m.array if true_means == "masked" else ~m.array
        return Tensor._make(np.where(blocked, -np.inf, 0.0).astype(dtype))
    if m.dtype.kind == "f":  # added to the scores: in their dtype (a float64 NumPy mask on a float32 model)
        return m.to(dtype)
    raise TypeError(f"{name}: only bool and floating-point masks are supported, got dtype {m.dtype}")


def attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0, scale: float | None = None
) -> tuple[Tensor, Tensor]:
    """``Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + mask) V``; returns ``(output, P)``.

    Shapes: ``q (..., L, d_k)``, ``k (..., S, d_k)``, ``v (..., S, d_v)``, an
    additive ``mask`` broadcastable to ``(..., L, S)``; output ``(..., L, d_v)``,
    ``P (..., L, S)``. A query whose every key is masked gets zero weights.
    """
    d_k = q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    # BEGIN TASK attention
    k_t = k.transpose(-2, -1)  # (..., d_k, S)
    qk = (q @ k_t).named("QKᵀ")  # (..., L, d_k) @ (..., d_k, S) -> (..., L, S)
    scores = (qk * scale).named("S")  # (..., L, S)
    if mask is not None:
        scores = (scores + mask).named("S_m")  # -inf where blocked
    p = scores.softmax(dim=-1).named("P")  # (..., L, S), each row sums to 1 (or is all 0)
    if dropout_p > 0.0:
        p = dropout(p, dropout_p).named("P_drop")
    return p @ v, p  # (..., L, S) @ (..., S, d_v) -> (..., L, d_v)
    # END TASK


def multi_head_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_heads: int,
    weights: tuple[Tensor, Tensor, Tensor, Tensor],
    biases: tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None] | None = None,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    extra_kv: tuple[Tensor, Tensor] | None = None,
    need_weights: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """The chapter's five steps: ``MultiHead(X) = Concat(head_1, ..., head_h) W^Oᵀ + b^O``.

    Shapes: ``query (B, L, E_q)``, ``key (B, S, E_k)``, ``value (B, S, E_v)``;
    ``weights = (W^Q, W^K, W^V, W^O)``, each stored ``(E, in)`` as torch stores it;
    ``biases`` the four matching ``(E,)`` vectors (or None); ``mask`` additive,
    broadcastable to ``(B, h, L, S)``; ``extra_kv``: ``(B, m, E)`` rows appended to K
    and V after the projections (``add_bias_kv``, ``add_zero_attn``; ``S`` then counts
    them). Returns ``attn_output (B, L, E)`` and the attention weights ``P (B, h, L, S)``;
    with ``need_weights=False`` step 3 is FlashAttention, which never forms ``P`` (None).
    ``MultiheadAttention`` wraps this with torch's layouts, masks and options.
    """
    w_q, w_k, w_v, w_o = weights
    b_q, b_k, b_v, b_o = biases if biases is not None else (None, None, None, None)
    (B, L, _), (E, _), h = query.shape, w_q.shape, num_heads
    d_k = E // h

    # 1. Project: Q = X W^Qᵀ + b^Q,  K = X W^Kᵀ + b^K,  V = X W^Vᵀ + b^V
    q = linear(query, w_q, b_q).named("Q")  # (B, L, E)
    k = linear(key, w_k, b_k).named("K")  # (B, S, E)
    v = linear(value, w_v, b_v).named("V")  # (B, S, E)
    if extra_kv is not None:
        k, v = cat([k, extra_kv[0]], dim=1), cat([v, extra_kv[1]], dim=1)  # (B, S + m, E)

    # 2. Split heads: (B, n, E) -> (B, n, h, d_k) -> (B, h, n, d_k)
    # BEGIN TASK mha_split_heads
    q = q.view(B, L, h, d_k).transpose(1, 2).named("Q_h")  # (B, h, L, d_k)
    k = k.view(B, -1, h, d_k).transpose(1, 2).named("K_h")  # (B, h, S, d_k)
    v = v.view(B, -1, h, d_k).transpose(1, 2).named("V_h")  # (B, h, S, d_k)
    # END TASK

    # 3. head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i, all heads at once
    if need_weights:
        heads, p = attention(q, k, v, mask, dropout_p)  # (B, h, L, d_k), (B, h, L, S)
    else:  # the same heads by FlashAttention: P is never stored
        heads, p = scaled_dot_product_attention(q, k, v, mask, dropout_p), None
    heads.name = "heads"

    # 4. Concat(head_1, ..., head_h): (B, h, L, d_k) -> (B, L, h, d_k) -> (B, L, E)
    # BEGIN TASK mha_merge_heads
    concat = heads.transpose(1, 2).reshape(B, L, E).named("concat")  # (B, L, E)
    # END TASK

    # 5. Output projection: Concat(...) W^Oᵀ + b^O
    attn_output = linear(concat, w_o, b_o).named("attn_output")  # (B, L, E)
    return attn_output, p



def packed_self_attention(
    x: Tensor,
    num_heads: int,
    in_proj_weight: Tensor,
    in_proj_bias: Tensor | None,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """``multi_head_attention(x, x, x, ..., need_weights=False)``, as torch's fast path runs it: Q, K, V in one product.

    ``in_proj_weight (3E, E)`` holds ``W^Q``, ``W^K`` and ``W^V`` as its rows, so step 1 is one ``LinearFn``:
    ``[Q K V] = X in_proj_weightᵀ + in_proj_bias`` ``(B, n, 3E)``, split into heads by a view and a permute:
    ``(3, B, h, n, d_k)``, Q_h, K_h and V_h stacked. Step 3 is FlashAttention on them (``packed_attention``); steps 4
    and 5 are the same: the composed path's result in seven ops instead of nineteen (torch packs the projection for
    self-attention too). ``mask`` is additive, broadcastable to ``(B, h, n, n)``.
    """
    B, n, E = x.shape
    qkv = linear(x, in_proj_weight, in_proj_bias).named("QKV")  # (B, n, 3E)
    qkv_h = qkv.view(B, n, 3, num_heads, E // num_heads).permute(2, 0, 3, 1, 4).named("QKV_h")  # (3, B, h, n, d_k)
    heads = packed_attention(qkv_h, mask, dropout_p).named("heads")  # (B, h, n, d_k)
    concat = heads.transpose(1, 2).reshape(B, n, E).named("concat")  # (B, h, n, d_k) -> (B, n, E)
    return linear(concat, out_proj_weight, out_proj_bias).named("attn_output")  # (B, n, E)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | np.ndarray | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    block_size: int = 128,
) -> Tensor:
    """torch's SDPA: ``softmax(Q Kᵀ · scale + mask) V``, computed by FlashAttention (``core/ops/flash_attention.py``).

    Shapes: ``query (..., L, d)``, ``key (..., S, d)``, ``value (..., S, d_v)`` -> ``(..., L, d_v)``.
    **Mask polarity:** a bool ``attn_mask`` is True where attention is *allowed*
    (the opposite of MultiheadAttention's masks); a float mask is added.
    ``is_causal`` lets query ``i`` see keys ``j ≤ i`` (top-left aligned) and excludes
    ``attn_mask``. ``enable_gqa``: ``key``/``value`` may have fewer heads (dim -3),
    each shared by a group of query heads. ``block_size`` is the number of keys per
    FlashAttention block (any positive int; it changes speed and memory, not the result).
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise ValueError(f"{op}: {name} must be a Tensor with at least 2 dims, got {getattr(t, 'shape', t)!r}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{op}: query {query.shape} and key {key.shape} differ in the last dim")
    if key.shape[-2] != value.shape[-2] or key.shape[:-2] != value.shape[:-2]:
        raise ValueError(f"{op}: key {key.shape} and value {value.shape} differ outside the last dim")
    batch_q, batch_k = query.shape[:-2], key.shape[:-2]
    if enable_gqa and query.ndim >= 3 and key.ndim == query.ndim and batch_q[:-1] == batch_k[:-1]:
        if batch_q[-1] % batch_k[-1]:
            raise ValueError(f"{op}: query heads {batch_q[-1]} are not a multiple of key/value heads {batch_k[-1]}")
    elif batch_q != batch_k:
        hint = "" if enable_gqa else " (pass enable_gqa=True for fewer key/value heads)"
        raise ValueError(f"{op}: query {query.shape} and key {key.shape} differ in their batch dims{hint}")
    L, S = query.shape[-2], key.shape[-2]
    mask = None
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: give attn_mask or is_causal=True, not both")
    if attn_mask is not None:
        mask = additive_mask(attn_mask, f"{op}: attn_mask", query.dtype, true_means="attend")
        if not broadcasts_to(mask.shape, batch_q + (L, S)):
            raise ValueError(
                f"{op}: attn_mask of shape {mask.shape} does not broadcast to the scores' shape {batch_q + (L, S)}"
            )
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    seed = _flash_seed(op, block_size, dropout_p)  # (checked last, and drawn only once everything else holds)
    return FlashAttention.apply(
        query, key, value, mask, scale=scale, is_causal=is_causal, dropout_p=dropout_p, block_size=block_size, seed=seed
    )


def packed_attention(
    qkv: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0, *, block_size: int = 128
) -> Tensor:
    """``scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, dropout_p)``, on ``qkv (3, ..., n, d)`` as one op.

    ``mask`` is additive (MultiheadAttention's), broadcastable to ``(..., n, n)``; ``block_size`` and the
    random numbers of dropout are those of ``scaled_dot_product_attention`` (see ``PackedFlashAttention``).
    """
    if not isinstance(qkv, Tensor):
        raise TypeError(f"packed_attention: qkv must be a Tensor, got {type(qkv).__name__}")
    if qkv.ndim < 3 or qkv.shape[0] != 3:
        raise ValueError(f"packed_attention: qkv must have shape (3, ..., n, d), got {qkv.shape}")
    if mask is not None and not broadcasts_to(mask.shape, qkv.shape[1:-1] + qkv.shape[-2:-1]):
        raise ValueError(f"packed_attention: mask of shape {mask.shape} does not broadcast to the scores' shape "
                         f"{qkv.shape[1:-1] + qkv.shape[-2:-1]}")
    seed = _flash_seed("packed_attention", block_size, dropout_p)
    return PackedFlashAttention.apply(qkv, mask, scale=1.0 / math.sqrt(qkv.shape[-1]), is_causal=False,
                                      dropout_p=dropout_p, block_size=block_size, seed=seed)


def _flash_seed(op: str, block_size: Any, dropout_p: float) -> int:
    """Check FlashAttention's options; return the seed its dropout masks come from (0, and no draw, without dropout)."""
    if not (isinstance(block_size, int) and block_size > 0):
        raise ValueError(f"{op}: block_size must be a positive int, got {block_size!r}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    return int(default_generator().integers(2**63)) if dropout_p > 0.0 else 0


__all__ = [
    "one_hot",
    "additive_mask",
    "attention",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "kl_div",
    "l1_loss",
    "nll_loss",
    "silu",
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "mse_loss",
    "multi_head_attention",
    "packed_attention",
    "relu",
    "scaled_dot_product_attention",
    "softmax",
    "avg_pool1d", "avg_pool2d", "conv1d", "conv2d", "cosine_similarity", "elu", "huber_loss", "leaky_relu",
    "max_pool1d", "max_pool2d", "normalize", "pad", "sigmoid", "smooth_l1_loss", "softplus", "tanh",
    "conv_transpose1d", "conv_transpose2d", "dropout2d", "rms_norm",
]
