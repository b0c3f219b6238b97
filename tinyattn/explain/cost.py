"""The cost view of a trace: each step's arithmetic, forward and backward, and the memory it keeps.

Counting rules (the usual ones for such tables):

* a multiply-add counts 2 FLOPs, so ``(n, k) @ (k, m)`` is ``2 n k m``;
* any other elementwise arithmetic, a comparison, ``exp`` or ``log`` counts 1 per element;
* a reduction counts 1 per element it reads;
* moving data (reshape, transpose, indexing, concatenation) counts 0, though it takes time.

"Saved" is what the op keeps for its backward (``ctx.save_for_backward``), in bytes; an
array kept by several ops (``X`` by the three projections) counts once in the total.
A step "grows as n²" when its arithmetic or its saved arrays are proportional to
``L × S``, the size of the attention matrix: those terms dominate as sequences grow,
and the saved ones are why composed attention is memory-bound.
"""

from __future__ import annotations

import math
from typing import Callable

from .trace import Step, Trace

Shape = tuple[int, ...]


def _numel(shape: Shape | None) -> int:
    return math.prod(shape) if shape is not None else 0


def _tensor_shape(step: Step, i: int) -> Shape:
    """The shape of input ``i``, which this op's cost formula needs to be a tensor."""
    shape = step.input_shapes[i]
    if shape is None:
        raise ValueError(f"cost: input {i} of {step.op} is not a tensor")
    return shape


def _elementwise(forward: int, backward: int) -> Callable[[Step], tuple[int, int]]:
    """``forward`` FLOPs per output element; ``backward`` per element for each input that gets a gradient."""

    def cost(step: Step) -> tuple[int, int]:
        n = _numel(step.grad_output_shape)
        extra = sum(n for i in step.grad_positions if step.input_shapes[i] != step.grad_output_shape)  # unbroadcast
        return forward * n, backward * n * len(step.grad_positions) + extra

    return cost


def _movement(step: Step) -> tuple[int, int]:
    return 0, 0


def _matmul(step: Step) -> tuple[int, int]:
    k = _tensor_shape(step, 0)[-1]
    mm = 2 * _numel(step.grad_output_shape) * k  # (..., n, k) @ (..., k, m)
    return mm, mm * len(step.grad_positions)  # dA = dC Bᵀ and dB = Aᵀ dC: one such product each


def _linear(step: Step) -> tuple[int, int]:
    n_out = _numel(step.grad_output_shape)
    mm = 2 * n_out * _tensor_shape(step, 0)[-1]
    has_bias = len(step.input_shapes) > 2 and step.input_shapes[2] is not None
    backward = sum(mm if i < 2 else n_out for i in step.grad_positions)  # dX, dW: a product each; db: a sum
    return mm + (n_out if has_bias else 0), backward


def _reduction(forward: int, backward: int) -> Callable[[Step], tuple[int, int]]:
    def cost(step: Step) -> tuple[int, int]:
        n = _numel(step.input_shapes[0])
        return forward * n, backward * n

    return cost


def _flash(step: Step) -> tuple[int, int]:
    q, k, v = (_tensor_shape(step, i) for i in range(3))
    return _flash_cost(q, k, v)


def _packed_flash(step: Step) -> tuple[int, int]:
    qkv = _tensor_shape(step, 0)  # (3, ..., n, d): Q, K and V stacked
    return _flash_cost(qkv[1:], qkv[1:], qkv[1:])


def _flash_cost(q: Shape, k: Shape, v: Shape) -> tuple[int, int]:
    heads, L, d = _numel(q[:-2]), q[-2], q[-1]
    S, d_v = k[-2], v[-1]
    ls = heads * L * S
    forward = 2 * ls * d + 2 * ls * d_v + 5 * ls  # S_j, P_j V_j, and the online softmax
    backward = 2 * ls * d + 2 * ls + 2 * ls * d_v * 2 + 2 * ls + 2 * ls * d * 2 + 2 * heads * L * d_v
    #          recompute S_j, P_j   dP_j and dV_j       dS_j     dQ and dK        D = rowsum(dO ⊙ O)
    return forward, backward


COSTS: dict[str, Callable[[Step], tuple[int, int]]] = {
    "MatMul": _matmul,
    "LinearFn": _linear,
    "FlashAttention": _flash,
    "PackedFlashAttention": _packed_flash,
    "Add": _elementwise(1, 0),
    "Sub": _elementwise(1, 1),
    "Mul": _elementwise(1, 1),
    "Div": _elementwise(1, 3),
    "Pow": _elementwise(1, 4),
    "Neg": _elementwise(1, 1),
    "Exp": _elementwise(1, 1),
    "Log": _elementwise(1, 1),
    "Sqrt": _elementwise(1, 2),
    "Tanh": _elementwise(1, 3),
    "Sigmoid": _elementwise(4, 3),
    "ReLUFn": _elementwise(1, 1),
    "GELUFn": _elementwise(8, 4),
    "Abs": _elementwise(1, 1),
    "MaskedFill": _elementwise(1, 1),
    "Where": _elementwise(1, 1),
    "Softmax": _elementwise(5, 4),  # max, subtract, exp, sum, divide; multiply, sum, subtract, multiply
    "LogSoftmax": _elementwise(4, 3),
    "Sum": _reduction(1, 0),
    "Mean": _reduction(1, 1),
    "Amax": _reduction(1, 1),
    "Var": _reduction(4, 3),
    **dict.fromkeys(
        ["Reshape", "Transpose", "Permute", "Unsqueeze", "Squeeze", "Expand", "GetItem", "Cat", "Stack", "Cast"],
        _movement,
    ),
}


def step_cost(step: Step) -> tuple[int, int] | None:
    """``(forward FLOPs, backward FLOPs)`` of one step, or None for an op without a rule here."""
    rule = COSTS.get(step.op)
    return rule(step) if rule is not None else None


def _is_attention_sized(shape: Shape | None, attention: tuple[int, int]) -> bool:
    return shape is not None and len(shape) >= 2 and tuple(shape[-2:]) == attention


def grows_as_n_squared(step: Step, attention: tuple[int, int]) -> tuple[bool, bool]:
    """``(arithmetic, memory)``: does the step compute over, or keep, an ``L × S`` array?"""
    shapes = [step.grad_output_shape, *step.input_shapes, *(s for _, s, _ in step.saved)]
    flash = step.op in ("FlashAttention", "PackedFlashAttention")
    arithmetic = flash or any(_is_attention_sized(s, attention) for s in shapes)
    memory = any(_is_attention_sized(s, attention) for _, s, _ in step.saved)
    return arithmetic, memory


def cost_table(trace: Trace, attention: tuple[int, int]) -> str:
    """One row per step (FLOPs forward and backward, bytes saved, n² marks) and the totals."""
    w = max([14] + [len(step.op) for step in trace])  # the op column (PackedFlashAttention is 20)
    rule = "-" * (90 + w)
    rows = [
        f"{'step':>4}  {'op':<{w}} {'output':<18} {'forward FLOPs':>13} {'backward FLOPs':>14} "
        f"{'saved for backward':>18}  grows as n²",
        rule,
    ]
    total_fwd = total_bwd = sq_flops = 0
    saved_all: dict[int, int] = {}
    saved_sq: dict[int, int] = {}
    for step in trace:
        cost = step_cost(step)
        fwd, bwd = cost if cost is not None else (0, 0)
        arithmetic, memory = grows_as_n_squared(step, attention)
        total_fwd, total_bwd = total_fwd + fwd, total_bwd + bwd
        sq_flops += (fwd + bwd) if arithmetic else 0
        for key, shape, nbytes in step.saved:
            saved_all[key] = nbytes
            if _is_attention_sized(shape, attention):
                saved_sq[key] = nbytes
        mark = " and ".join(w for w, on in (("FLOPs", arithmetic), ("memory", memory)) if on) or "-"
        flops = (f"{fwd:>13,} {bwd:>14,}") if cost is not None else f"{'?':>13} {'?':>14}"
        name = step.output.split(" (")[0]
        kept = sum(b for _, _, b in step.saved)
        rows.append(f"{step.index:>4}  {step.op:<{w}} {name:<18} {flops} {kept:>16,} B  {mark}")
    total, saved = total_fwd + total_bwd, sum(saved_all.values())
    rows += [
        rule,
        f"{'':>4}  {'total':<{w}} {'':<18} {total_fwd:>13,} {total_bwd:>14,} {saved:>16,} B",
        "",
        f"Terms that grow as n² (L × S = {attention[0]} × {attention[1]}): {sq_flops:,} of {total:,} FLOPs "
        f"({100 * sq_flops / max(total, 1):.0f}%), {sum(saved_sq.values()):,} of {saved:,} saved bytes "
        f"({100 * sum(saved_sq.values()) / max(saved, 1):.0f}%).",
    ]
    return "\n".join(rows)
