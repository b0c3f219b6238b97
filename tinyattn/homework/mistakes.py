"""Common mistakes: plausible wrong answers to each task, and why each is wrong.

The library's source holds only the right answer between its ``# BEGIN TASK`` and
``# END TASK`` lines. The wrong ones live here. Each names its task, the line of
the reference it replaces (as written there, without indentation), the wrong
line, and the reason. ``python -m tinyattn.homework check`` plants each one in
turn and demands that a test of its task fail; ``mistakes`` prints them for
docs/teaching.md ("Common mistakes"), which a test keeps in step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    """A wrong line for ``task``: ``wrong`` in place of the reference line ``replaces``."""

    task: str
    replaces: str
    wrong: str
    why: str


MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "unbroadcast",
        "grad = grad.sum(axis=tuple(range(extra)))",
        "grad = grad.mean(axis=tuple(range(extra)))",
        "an input copied along a new axis was used once per copy, so its gradient is the sum over "
        "the copies, not their mean",
    ),
    Mistake(
        "unbroadcast",
        "axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)",
        "axes = ()",
        "forgets the axes of size 1 that were stretched: the gradient keeps the broadcast shape",
    ),
    Mistake(
        "unbroadcast",
        "grad = grad.sum(axis=axes, keepdims=True)",
        "grad = grad.sum(axis=axes)",
        "forgets keepdims: the size-1 axes vanish, so the gradient no longer has the input's shape",
    ),
    Mistake(
        "matmul_backward",
        "da = grad_output @ b.swapaxes(-1, -2)  # (..., n, m) @ (..., m, k) -> (..., n, k)",
        "da = grad_output @ b",
        "dA = dC Bᵀ: without the transpose the product only fits when B is square, and is then wrong",
    ),
    Mistake(
        "matmul_backward",
        "db = a.reshape(-1, k).T @ grad_output.reshape(-1, m)  # (k, m)",
        "db = a.reshape(-1, k).T @ grad_output.reshape(-1, m) / a.shape[0]",
        "a B shared by the whole batch receives the sum of the batch's gradients, not their mean",
    ),
    Mistake(
        "matmul_backward",
        "db = a.swapaxes(-1, -2) @ grad_output  # (..., k, n) @ (..., n, m) -> (..., k, m)",
        "db = grad_output.swapaxes(-1, -2) @ a",
        "that is (dC)ᵀ A = (dB)ᵀ, of shape (m, k): the transpose of the answer",
    ),
    Mistake(
        "linear_forward",
        "y = x @ w.T  # (..., in) @ (in, out) -> (..., out)",
        "y = x @ w",
        "the weight is stored (out, in), as torch stores it, so Y = X Wᵀ; X W only fits a square W",
    ),
    Mistake("linear_forward", "y += b", "y = y", "forgets the bias"),
    Mistake(
        "shape_backward",
        "return (grad_output.reshape(ctx.shape),)",
        "return (grad_output.T.reshape(ctx.shape),)",
        "a reshape keeps the elements in order, so its backward is a reshape back, with no transpose",
    ),
    Mistake(
        "shape_backward",
        "return (grad_output.swapaxes(*ctx.dims),)",
        "return (grad_output.reshape(grad_output.swapaxes(*ctx.dims).shape),)",
        "right shape, wrong places: a transpose moves elements, a reshape does not, so undo it "
        "with the same transpose",
    ),
    Mistake(
        "softmax_backward",
        "grad_input = grad_output - row_sum",
        "grad_input = grad_output.copy()",
        "keeps only the diagonal of the Jacobian: each output of a softmax depends on every input of its row",
    ),
    Mistake(
        "softmax_backward",
        "row_sum = (grad_output * y).sum(axis=ctx.dim, keepdims=True)  # Σ_j dY_j Y_j, one per row",
        "row_sum = grad_output.sum(axis=ctx.dim, keepdims=True)",
        "the row sum is Σ_j dY_j Y_j: each upstream gradient weighted by its probability",
    ),
    Mistake(
        "softmax_backward",
        "row_sum = (grad_output * y).sum(axis=ctx.dim, keepdims=True)  # Σ_j dY_j Y_j, one per row",
        "row_sum = (grad_output * y).sum(axis=-1, keepdims=True)",
        "sums over the last axis whatever dim the softmax was taken over",
    ),
    Mistake(
        "softmax_backward",
        "row_sum = (grad_output * y).sum(axis=ctx.dim, keepdims=True)  # Σ_j dY_j Y_j, one per row",
        "row_sum = (grad_output * y).sum(axis=ctx.dim)",
        "forgets keepdims: the row sums no longer line up with their rows (and silently misalign when "
        "two dims have the same size)",
    ),
    Mistake(
        "log_softmax_backward",
        "return (grad_output - np.exp(y) * grad_output.sum(axis=ctx.dim, keepdims=True),)",
        "return (grad_output - np.exp(y) * grad_output.sum(axis=ctx.dim),)",
        "forgets keepdims: the row sums no longer line up with their rows",
    ),
    Mistake(
        "log_softmax_backward",
        "return (grad_output - np.exp(y) * grad_output.sum(axis=ctx.dim, keepdims=True),)",
        "return (grad_output - np.exp(y) * grad_output,)",
        "the log-sum-exp depends on the whole row, so its part of the gradient is softmax times the "
        "row sum of dY",
    ),
    Mistake(
        "log_softmax_backward",
        "return (grad_output - np.exp(y) * grad_output.sum(axis=ctx.dim, keepdims=True),)",
        "return (grad_output / np.exp(y),)",
        "differentiates log of each softmax output as if the outputs were independent inputs",
    ),
    Mistake(
        "attention",
        'scores = (qk * scale).named("S")  # (..., L, S)',
        'scores = qk.named("S")',
        "forgets the 1/√d_k scale: the logits grow with d_k and the softmax saturates",
    ),
    Mistake(
        "attention",
        'p = scores.softmax(dim=-1).named("P")  # (..., L, S), each row sums to 1 (or is all 0)',
        'p = scores.softmax(dim=-2).named("P")',
        "normalizes over the queries instead of the keys: each query's weights must sum to one",
    ),
    Mistake(
        "attention",
        "return p @ v, p  # (..., L, S) @ (..., S, d_v) -> (..., L, d_v)",
        "return p @ v.transpose(-2, -1), p",
        "P (L, S) weighs the S values, V is (S, d_v): no transpose (this one only runs when S = d_v)",
    ),
    Mistake(
        "mha_split_heads",
        'q = q.view(B, L, h, d_k).transpose(1, 2).named("Q_h")  # (B, h, L, d_k)',
        'q = q.view(B, h, L, d_k).named("Q_h")',
        "the right shape with the wrong elements: each 'head' then mixes features of different positions",
    ),
    Mistake(
        "mha_split_heads",
        'q = q.view(B, L, h, d_k).transpose(1, 2).named("Q_h")  # (B, h, L, d_k)',
        'q = query.view(B, L, h, d_k).transpose(1, 2).named("Q_h")',
        "the chapter's slip: splits the raw input instead of the projection Q, so W^Q is never used",
    ),
    Mistake(
        "mha_split_heads",
        'k = k.view(B, -1, h, d_k).transpose(1, 2).named("K_h")  # (B, h, S, d_k)',
        'k = k.view(B, L, h, d_k).transpose(1, 2).named("K_h")',
        "hard-codes the key length as the query length: breaks cross-attention, add_bias_kv and "
        "add_zero_attn, where S ≠ L",
    ),
    Mistake(
        "mha_split_heads",
        'v = v.view(B, -1, h, d_k).transpose(1, 2).named("V_h")  # (B, h, S, d_k)',
        'v = v.view(B, -1, h, d_k).transpose(2, 3).named("V_h")',
        "transposes the wrong pair of axes: (B, S, d_k, h) instead of (B, h, S, d_k)",
    ),
    Mistake(
        "mha_merge_heads",
        'concat = heads.transpose(1, 2).reshape(B, L, E).named("concat")  # (B, L, E)',
        'concat = heads.transpose(2, 3).reshape(B, L, E).named("concat")',
        "transposes the wrong pair of axes: the reshape then mixes positions and features",
    ),
    Mistake(
        "mha_merge_heads",
        'concat = heads.transpose(1, 2).reshape(B, L, E).named("concat")  # (B, L, E)',
        'concat = heads.reshape(B, L, E).named("concat")',
        "without moving the head axis back next to d_k, the reshape interleaves heads and positions",
    ),
    Mistake(
        "adam_step",
        "v += (1 - beta2) * g * g",
        "v += (1 - beta2) * g",
        "the second moment averages the squared gradient",
    ),
    Mistake(
        "adam_step",
        "m_hat_scale = 1 / (1 - beta1**t)",
        "m_hat_scale = 1",
        "forgets the bias correction of the first moment, which starts at zero",
    ),
)
