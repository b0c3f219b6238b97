"""FlashAttention (Dao et al., 2022) in NumPy: attention that never stores the n×n matrix.

Composed attention, ``P = softmax(S)`` with ``S = Q Kᵀ · scale + M``, keeps ``P``
``(L, S)`` for its backward: at n = 2048 with 8 heads that is 128 MiB per example
in float32, and every pass over it (scale, max, exp, sum, divide; in backward four
more) streams it through memory. FlashAttention walks over the keys in blocks of
``block_size`` instead:

* **Forward (Algorithm 1).** For each key block ``j`` it computes the scores
  ``S_j (L, B_c)``, and keeps, per query row, a running maximum ``m``, a running
  sum ``ℓ`` of ``exp(S - m)``, and a running output ``acc = Σ_j exp(S_j - m) V_j``.
  When a block raises the maximum from ``m`` to ``m'``, everything summed so far
  is rescaled by ``exp(m - m')`` (the online softmax), so at the end
  ``O = acc / ℓ`` is exactly ``softmax(S) V``. It saves only ``O (L, d_v)`` and the
  log-sum-exp ``LSE = m + log ℓ (L,)`` per row: O(n) memory, not O(n²).
* **Backward (Algorithm 2).** ``P_j = exp(S_j - LSE)`` is *recomputed* block by
  block from ``Q``, ``K_j`` and ``LSE``: one more ``Q (K_j)ᵀ`` product, instead of
  storing ``P`` and reading it back. With ``D = rowsum(dO ⊙ O)`` (which equals
  ``rowsum(dP ⊙ P)``, the softmax backward's row sum), each block gives::

      dV_j = (P_j)ᵀ dO          dP_j = dO (V_j)ᵀ          dS_j = P_j ⊙ (dP_j − D)
      dQ  += dS_j K_j · scale                         dK_j = (dS_j)ᵀ Q · scale

**Why recomputing is cheaper than storing.** The recomputation costs one extra
matmul, ``2 L S d`` flops, out of the ~``8 L S d`` attention already does, while a
stored ``P`` costs ``L S`` floats of memory and, worse, a read and a write of all of
them in every elementwise pass, and those passes are limited by memory bandwidth,
not arithmetic. Blocks of ``B_c`` keys stay small (``L × B_c``) and the passes over
them stay cheap. ``benchmarks/bench_mha.py`` measures both paths. The code is the same at
every size: when every key fits in one block (as at the chapter's size) the loops run once,
and the backward still recomputes that block's ``P`` from ``LSE``.

Masks: a float ``mask`` is added to the scores (``-inf`` blocks a key); with
``is_causal`` a query ``i`` sees keys ``j ≤ i`` (top-left aligned, as torch), and a
block of keys that every query is past is skipped without building its mask.
A query that sees no key gets a zero output and zero gradients, never NaN.
Dropout (``dropout_p``) draws each block's keep-mask from a seed saved in the
forward, so the backward regenerates the same mask instead of storing it.
``enable_gqa``: ``k``/``v`` may have fewer heads (dim -3) than ``q``, each serving
a group of query heads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..function import Context, Function
from .shared import unbroadcast
from .softmax import Softmax


def _block_keep(seed: int, j: int, shape: tuple[int, ...], p: float, dtype: Any) -> np.ndarray:
    """Dropout's keep-mask of key block ``j``, scaled by ``1 / (1 - p)``: the same in forward and backward."""
    if p == 1.0:  # all dropped: zeros, not 0 / 0
        return np.zeros(shape, dtype)
    keep = np.random.default_rng([seed, j]).random(shape) >= p
    return keep.astype(dtype) / dtype.type(1 - p)


class FlashAttention(Function):
    """``O = softmax(Q Kᵀ · scale + M) V`` by key blocks; saves ``O`` and ``LSE`` and recomputes ``P`` in backward.

    Shapes: ``q (..., L, d)``, ``k (..., S, d)``, ``v (..., S, d_v)`` -> ``O (..., L, d_v)``;
    ``mask`` additive, broadcastable to ``(..., L, S)``. Backward, per key block ``j``:
    ``P_j = exp(S_j − LSE)``, ``dV_j = (P_j)ᵀ dO``, ``dP_j = dO (V_j)ᵀ``,
    ``dS_j = P_j ⊙ (dP_j − rowsum(dO ⊙ O))``, ``dQ += dS_j K_j · scale``, ``dK_j = (dS_j)ᵀ Q · scale``.
    jvp, on the whole ``P``: ``tS = (tQ Kᵀ + Q tKᵀ) · scale + tM``, ``tP = P ⊙ (tS − rowsum(P ⊙ tS))`` (softmax's
    jvp), ``tO = tP V + P tV`` (the product rule).
    """

    formula = "{out} = softmax({0} {1}ᵀ · scale + M) {2}  (by key blocks j; saves {out} and LSE, not P)"
    grad_formulas = (
        "d{0} = Σ_j dS_j {1}[j] · scale,  dS_j = P_j ⊙ (d{out} ({2}[j])ᵀ − rowsum(d{out} ⊙ {out})),  "
        "P_j = exp(S_j − LSE)",
        "d{1}[j] = (dS_j)ᵀ {0} · scale",
        "d{2}[j] = (P_j)ᵀ d{out}",
        "dM[:, j] = dS_j",
    )

    @staticmethod
    def forward(
        ctx: Context,
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        mask_in: np.ndarray | None,
        *,
        scale: float,
        is_causal: bool,
        dropout_p: float,
        block_size: int,
        seed: int,
    ) -> np.ndarray:
        L, S = q.shape[-2], k.shape[-2]
        group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1  # (q and k have the same ndim)
        k_g, v_g = _grouped(k, group), _grouped(v, group)  # (..., H_kv, 1, S, d): one K/V head per query group
        q_s = _grouped(q, group, query=True) * q.dtype.type(scale)  # Q · scale, once    (..., H_kv, G, L, d)
        mask = _grouped_mask(mask_in, group, q.ndim)  # (..., H_kv, G, L|1, S|1), or None
        lowest = np.finfo(q.dtype).min  # where the running max starts, not -inf: exp(-inf − lowest) = 0, no NaN
        blocks = _blocks(L, S, block_size, is_causal)
        for j, (j0, j1, rows) in enumerate(blocks):
            s = _scores(q_s[..., rows, :], k_g[..., j0:j1, :], mask, rows, j0, j1, is_causal)  # S_j (..., L_r, B_c)
            row_max = s.max(axis=-1, keepdims=True, initial=lowest)  # (initial: an empty block of no keys)
            if j == 0:  # the first block covers every row: it starts the running row max m (..., L, 1)
                m = m_new = row_max
            else:
                m_new = np.maximum(m[..., rows, :], row_max)  # the new running max m'
            s -= m_new
            p = np.exp(s, out=s)  # exp(S_j − m'), in place                                 (..., L_r, B_c)
            p_v = p * _block_keep(seed, j, p.shape, dropout_p, p.dtype) if dropout_p > 0.0 else p
            if j == 0:  # and ℓ = Σ exp(S − m) (..., L, 1) and acc = Σ exp(S − m) V (..., L, d_v): nothing to rescale
                ell, acc = p.sum(axis=-1, keepdims=True), p_v @ v_g[..., j0:j1, :]
                continue
            alpha = np.exp(m[..., rows, :] - m_new)  # rescales what was summed under the old max
            ell[..., rows, :] = alpha * ell[..., rows, :] + p.sum(axis=-1, keepdims=True)
            acc[..., rows, :] = alpha * acc[..., rows, :] + p_v @ v_g[..., j0:j1, :]
            m[..., rows, :] = m_new
        # ℓ ≥ 1 in a row that saw a key (its maximum adds exp(0) = 1), 0 in one that saw none: there O = 0 / 1 = 0,
        # and LSE = lowest, so that backward's exp(S − LSE) = exp(-inf) = 0
        ell = np.maximum(ell, 1)
        out = (acc / ell).reshape(q.shape[:-1] + v.shape[-1:])  # O = acc / ℓ                     (..., L, d_v)
        lse = m + np.log(ell)  # LSE = m + log ℓ, per row: what backward recomputes each P_j from       (..., L, 1)
        ctx.save_for_backward(q_s, k, v, mask, out, lse)
        ctx.mask_meta = None if mask_in is None else (mask_in.shape, mask_in.dtype)
        ctx.options = scale, is_causal, dropout_p, block_size, seed, group, q.shape
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, ...]:
        q_s, k, v, mask, out, lse = ctx.saved_tensors
        scale, is_causal, dropout_p, block_size, seed, group, q_shape = ctx.options
        L, S = q_shape[-2], k.shape[-2]
        k_g, v_g = _grouped(k, group), _grouped(v, group)
        d_out = _grouped(grad_output, group, query=True)  # (..., L, d_v)
        big_d = (d_out * _grouped(out, group, query=True)).sum(axis=-1, keepdims=True)  # D = rowsum(dO ⊙ O)
        # Each key block is visited once, so dK_j, dV_j (and dM's columns j) are written, not summed; keys a
        # causal mask hides from every query stay 0. dK and dV are per query head here, summed over each group below.
        dk = np.zeros(q_s.shape[:-2] + k.shape[-2:], dtype=k.dtype)
        dv = np.zeros(q_s.shape[:-2] + v.shape[-2:], dtype=v.dtype)
        dmask = None
        if ctx.needs_input_grad[-1]:  # only a mask (the last input) that requires grad gets one (and then it is L × S)
            dmask = np.zeros(q_s.shape[:-1] + (S,), q_s.dtype)  # (..., L, S), summed down to the mask's shape below
        for j, (j0, j1, rows) in enumerate(_blocks(L, S, block_size, is_causal)):
            q_r, do_r = q_s[..., rows, :], d_out[..., rows, :]
            s = _scores(q_r, k_g[..., j0:j1, :], mask, rows, j0, j1, is_causal)  # S_j, again     (..., L_r, B_c)
            s -= lse[..., rows, :]
            p = np.exp(s, out=s)  # P_j = exp(S_j − LSE), recomputed
            dp = do_r @ v_g[..., j0:j1, :].swapaxes(-1, -2)  # dP_j = dO (V_j)ᵀ        (..., L_r, B_c)
            if dropout_p > 0.0:
                keep = _block_keep(seed, j, p.shape, dropout_p, p.dtype)
                np.matmul((p * keep).swapaxes(-1, -2), do_r, out=dv[..., j0:j1, :])  # dV_j = (P_j ⊙ Z_j)ᵀ dO
                dp *= keep
            else:
                np.matmul(p.swapaxes(-1, -2), do_r, out=dv[..., j0:j1, :])  # dV_j = (P_j)ᵀ dO, written in place
            dp -= big_d[..., rows, :]
            ds = np.multiply(dp, p, out=dp)  # dS_j = P_j ⊙ (dP_j − D), in place            (..., L_r, B_c)
            if j == 0:  # dQ = Σ_j dS_j K_j (· scale below), started by the first block, which covers every row
                dq = ds @ k_g[..., j0:j1, :]
            else:
                dq[..., rows, :] += ds @ k_g[..., j0:j1, :]
            np.matmul(ds.swapaxes(-1, -2), q_r, out=dk[..., j0:j1, :])  # dK_j = (dS_j)ᵀ (Q · scale)
            if dmask is not None:
                dmask[..., rows, j0:j1] = ds
        dq *= q_s.dtype.type(scale)  # (in place: dq is this backward's own array)
        dq = dq.reshape(q_shape)
        dk = dk.sum(axis=-3) if group > 1 else dk  # (..., H_kv, S, d)
        dv = dv.sum(axis=-3) if group > 1 else dv  # (..., H_kv, S, d_v)
        if dmask is not None:
            mask_shape, mask_dtype = ctx.mask_meta
            dmask = unbroadcast(dmask.reshape(dmask.shape[:-4] + (-1,) + dmask.shape[-2:]) if group > 1 else dmask,
                                (1,) * (len(q_shape) - len(mask_shape)) + mask_shape, mask_dtype).reshape(mask_shape)
        return dq, dk, dv, dmask  # (the engine drops those of inputs that need no gradient)

    @staticmethod
    def jvp(tangents: tuple[Any, ...], inputs: tuple[Any, ...], out: np.ndarray, *, scale: float, is_causal: bool,
            dropout_p: float, block_size: int, seed: int) -> Any:
        (tq, tk, tv, tmask), (q, k, v, mask) = tangents, inputs
        if dropout_p > 0.0:
            raise RuntimeError("FlashAttention with dropout_p > 0 has no jvp: its dropout masks are drawn block by "
                               "block inside the fused op. Use dropout_p=0.0 with forward-mode AD.")
        group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
        q, tq = _grouped(q, group, query=True), _grouped(tq, group, query=True)  # (..., H_kv, G, L, d)
        k, tk, v, tv = _grouped(k, group), _grouped(tk, group), _grouped(v, group), _grouped(tv, group)
        s = (q @ k.swapaxes(-1, -2)) * scale  # S                                            (..., L, S)
        ts = (tq @ k.swapaxes(-1, -2) + q @ tk.swapaxes(-1, -2)) * scale  # tS
        if mask is not None:
            s = s + _grouped_mask(mask, group, len(out.shape))
            ts = ts + _grouped_mask(tmask, group, len(out.shape))
        if is_causal:  # key j after query i is hidden (top-left aligned)
            s = np.where(np.triu(np.ones(s.shape[-2:], dtype=bool), 1), -np.inf, s)
        p = Softmax.forward(Context(), s, dim=-1)  # P (a row that sees no key: all 0)
        tp = p * (ts - (p * ts).sum(axis=-1, keepdims=True))  # tP, softmax's jvp
        return (tp @ v + p @ tv).reshape(out.shape)  # tO = tP V + P tV


    @staticmethod
    def composed(q: Any, k: Any, v: Any, mask: Any, *, scale: float, is_causal: bool, dropout_p: float,
                 block_size: int, seed: int) -> Any:
        """The same ``softmax(Q Kᵀ · scale + M) V`` in plain ops (on Tensors), all of ``P`` at once: what a
        gradient of FlashAttention's gradient differentiates (higher_order.py)."""
        if dropout_p > 0.0:
            raise RuntimeError(
                "FlashAttention with dropout_p > 0 cannot be differentiated twice: its dropout masks are drawn "
                "block by block inside the fused op. Use dropout_p=0.0 for a gradient that is differentiated again."
            )
        group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
        if group > 1:  # each K/V head serves a group of query heads: repeat it for each
            k, v = (x.unsqueeze(-3).expand(x.shape[:-2] + (group,) + x.shape[-2:])
                    .reshape(x.shape[:-3] + (-1,) + x.shape[-2:]) for x in (k, v))
        scores = (q @ k.transpose(-1, -2)) * scale  # (..., L, S)
        if mask is not None:
            scores = scores + mask
        if is_causal:  # key j after query i is hidden (top-left aligned)
            L, S = scores.shape[-2:]
            scores = scores.masked_fill(np.triu(np.ones((L, S), dtype=bool), 1), -np.inf)
        return scores.softmax(-1) @ v  # (a row that sees no key: softmax gives 0, as forward's O = 0)


class PackedFlashAttention(Function):
    """FlashAttention on ``qkv (3, ..., n, d)``: Q, K and V stacked in one array, as one in-projection makes them.

    ``O = softmax(Q Kᵀ · scale + M) V`` with ``Q, K, V = qkv[0], qkv[1], qkv[2]``, by ``FlashAttention.forward``;
    backward stacks its ``dQ``, ``dK``, ``dV`` into ``dqkv``. (Three slices of ``qkv`` would each send back
    a zero array the size of all of it, to be summed.) ``MultiheadAttention`` runs it for self-attention with
    ``need_weights=False``. FlashAttention's checks of saved values apply to ``Q``, ``K``, ``V`` as views of ``qkv``.
    """

    formula = "{out} = softmax(Q Kᵀ · scale + M) V,  [Q, K, V] = {0}  (FlashAttention: saves {out} and LSE, not P)"
    grad_formulas = (
        "d{0} = [dQ, dK, dV],  dQ = Σ_j dS_j K[j] · scale,  dK[j] = (dS_j)ᵀ Q · scale,  dV[j] = (P_j)ᵀ d{out}",
        "dM[:, j] = dS_j",
    )

    @staticmethod
    def forward(ctx: Context, qkv: np.ndarray, mask: np.ndarray | None, **options: Any) -> np.ndarray:
        q, k, v = qkv  # (..., n, d) each, views of qkv
        return FlashAttention.forward(ctx, q, k, v, mask, **options)

    @staticmethod
    def composed(qkv: Any, mask: Any, **options: Any) -> Any:
        """``FlashAttention.composed`` on ``qkv``'s three parts."""
        return FlashAttention.composed(qkv[0], qkv[1], qkv[2], mask, **options)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, ...]:
        dq, dk, dv, dmask = FlashAttention.backward(ctx, grad_output)  # (each computed: qkv requires grad)
        return np.concatenate((dq[None], dk[None], dv[None])), dmask  # type: ignore[index]  # (3, ..., n, d), like qkv

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray, **options: Any) -> Any:
        """``FlashAttention.jvp`` on ``qkv``'s three parts and their tangents."""
        (tqkv, tmask), (qkv, mask) = tangents, inputs
        return FlashAttention.jvp((tqkv[0], tqkv[1], tqkv[2], tmask), (qkv[0], qkv[1], qkv[2], mask), out, **options)


def _grouped(x: np.ndarray, group: int, query: bool = False) -> np.ndarray:
    """View heads as (..., H_kv, G, n, d): query heads split into groups, K/V heads given a group axis of 1."""
    if group == 1:
        return x
    if query:
        return x.reshape(x.shape[:-3] + (x.shape[-3] // group, group) + x.shape[-2:])
    return x[..., None, :, :]


def _grouped_mask(mask: np.ndarray | None, group: int, ndim: int) -> np.ndarray | None:
    """The mask with as many dims as the queries, its head dim split like theirs (see ``_grouped``)."""
    if mask is None:
        return None
    shape: tuple[int, ...] = (1,) * (ndim - mask.ndim) + mask.shape
    mask = mask.reshape(shape)
    if group == 1:
        return mask
    heads = shape[-3]
    split = (heads // group, group) if heads > 1 else (1, 1)
    return mask.reshape(mask.shape[:-3] + split + mask.shape[-2:])


def _blocks(L: int, S: int, block_size: int, is_causal: bool) -> list[tuple[int, int, slice]]:
    """Key blocks ``[j0, j1)`` with the query rows that can see them (causal: rows ``i ≥ j0``; others skipped).

    The first block always comes, with every row (with no keys it is empty), so it can start the running sums.
    """
    blocks = []
    for j0 in range(0, max(S, 1), block_size):  # (no keys: one empty block, and every output row is 0)
        first_row = j0 if is_causal else 0
        if first_row < L or j0 == 0:  # with is_causal, keys past the last query are never seen: skip the block
            blocks.append((j0, min(j0 + block_size, S), slice(first_row, L)))
    return blocks


def _scores(
    q_r: np.ndarray, k_j: np.ndarray, mask: np.ndarray | None, rows: slice, j0: int, j1: int, is_causal: bool
) -> np.ndarray:
    """``S_j = (Q_r · scale) (K_j)ᵀ + M[:, j0:j1]``, with the causal mask of this block only.

    A mask never comes with ``is_causal`` (SDPA refuses both), so with a mask ``rows`` are all rows.
    """
    s = q_r @ k_j.swapaxes(-1, -2)  # (..., L_r, d) @ (..., d, B_c)
    if mask is not None:  # (..., L|1, S|1): a dim of 1 broadcasts
        s += mask[..., j0:j1] if mask.shape[-1] > 1 else mask
    if is_causal:
        i = np.arange(rows.start, rows.stop)[:, None]
        s[..., i < np.arange(j0, j1)[None, :]] = -np.inf  # key j after query i
    return s
