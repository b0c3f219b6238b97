"""Gradients that are themselves differentiable: the backward pass recorded as ops (``create_graph=True``).

A gradient is a computation like any other. With ``create_graph=True`` the backward pass (``backprop.py``) calls
``node.backward(dout, backward_graph)`` where it would call ``node.backward(dout)``: the same
backward formulas run, but on Tensors, so every step of them is recorded in a new graph
that ``backward``/``grad`` can walk again (a second derivative; a third, by repetition).

There is one backward formula per op, and it serves both orders. Written with operations that
arrays and Tensors share (``*``, ``@``, ``.sum(axis=...)``, ``.reshape``, ``np.exp``, and the
few helpers ``where``, ``cast``... that pick NumPy or the op), a backward computes on arrays
in the usual pass and on Tensors here. Three cases:

1. **Linear ops of one input** (``Function.linear``: reshape, transpose, indexing, sums, casts...). Their
   backward is a linear map of ``dout`` alone, whatever array or index code it uses. It is
   recorded as one op, ``Transposed``, whose own backward is the op's forward again (the
   transpose of a transpose), so it never needs to run on Tensors.
2. **Fused ops with a composed twin** (``Function.composed``: FlashAttention). Their backward
   is blocked, in-place array code; its derivative is taken through the same function
   written in plain ops (``softmax(Q Kᵀ · scale + M) V``), recomputed here.
3. **Every other op**: its backward runs with Tensors in place of what forward saved, each
   saved input array replaced by that input (its history and all), a saved output by the
   output, and other saved arrays (masks, indices) kept as constants.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from . import backprop
from .core import grad_mode
from .core.function import Context, Function, Node, TensorBase
from .core.grad_mode import enable_grad
from .core.ops.elementwise import Clone
from .graph import GraphNode

# tinyattn's Tensor (tensor.py), which imports this file: named here for the reader, checked as Any
TensorLike = Any


class Transposed(Function):
    """The backward of a linear op ``op``, as an op: ``out = op.backward(dout)``;  ``d(dout) = op.forward(d out)``.

    A linear map's derivative is the map itself, so the gradient of its transpose (``op``'s
    backward) is ``op``'s forward, applied to the incoming gradient. ``Transposed`` is linear
    too: its own backward is recorded as another ``Transposed`` (third derivatives).
    """

    formula = "{out} = backward of a linear op, applied to {0}"
    grad_formulas = ("d{0} = the linear op's forward, applied to d{out}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, grad_output: np.ndarray, *, op: type[Function], op_ctx: Context) -> np.ndarray:
        """``op``'s backward, on the context of its forward."""
        grads = op.backward(op_ctx, grad_output)
        return grads[0] if isinstance(grads, tuple) else grads

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        """``op``'s forward, with its forward's options, on the gradient (a fresh context: nothing saved)."""
        op, op_ctx = ctx.kwargs["op"], ctx.kwargs["op_ctx"]
        return np.asarray(op.forward(Context(), grad, **op_ctx.kwargs))


def backward_graph(node: GraphNode, grad_output: Any) -> tuple[Any, ...]:
    """The op's backward recorded as ops (``node.backward(grad_output, backward_graph)`` calls it, and checks what it
    returns): one Tensor (with a graph) or None per input."""
    fn, ctx = node.fn, node.ctx
    recorder = grad_mode.recorder()  # (the explainer's trace(): it names each recorded op after this backward)
    if recorder is not None:
        recorder.begin_backward_of(node)
    try:
        with enable_grad():
            if fn.linear and len(node.edges) == 1:
                grads: Any = Transposed.apply(grad_output, op=fn, op_ctx=ctx)
            elif fn.composed is not None:
                grads = _through_composed(node, grad_output)
            else:
                grads = fn.backward(_on_tensors(node, grad_output), grad_output)
    finally:
        if recorder is not None:
            recorder.end_backward_of(node)
    if not isinstance(grads, tuple):
        grads = (grads,)
    for g in grads:
        # an array was computed outside the recorded ops: its own derivative would be silently lost
        if not (g is None or isinstance(g, TensorBase)):
            raise RuntimeError(f"{fn.__name__}.backward returned a {type(g).__name__}, not a Tensor, with "
                               "create_graph=True: write it in operations that work on Tensors too, or mark it "
                               "@once_differentiable")
    return grads


def _on_tensors(node: GraphNode, grad_output: Any) -> Any:
    """A copy of the node's context whose saved arrays are Tensors: each input's array that input, the output the
    output (a Tensor whose grad_fn is this node), anything else a constant."""
    ctx: Any = copy.copy(node.ctx)
    saved = list(ctx.saved_tensors)
    for tensor, _ in node.saved_versions:  # (every place forward saved the input's array: x * x saves it twice)
        if isinstance(tensor, TensorBase):  # (not an output overwritten since: backward refused it already)
            saved = [tensor if s is tensor.array else s for s in saved]
    i = getattr(ctx, "saved_output", node.fn.saved_output)  # (an op whose backward reads its output: exp, tanh...;
    if i is not None:  # a Function of yours on arrays notes it on its context)
        output = type(grad_output)._make(np.asarray(saved[i]), True)  # (the class of the recorded gradients)
        output._grad_fn = node
        output._fw_tangent = getattr(node, "_fw_tangent", None)  # (forward over reverse: the output's tangent)
        saved[i] = output
    ctx.saved_tensors = tuple(saved)
    return ctx


def _through_composed(node: GraphNode, grad_output: TensorLike) -> tuple[TensorLike | None, ...]:
    """The fused op's gradients, differentiably: its composed twin recomputed on the inputs, then differentiated.

    Each input position gets a stand-in of its own (a clone: the same values, with the input's history behind
    it), and the gradient is taken with respect to the stand-ins. So a tensor passed as several inputs
    (``attention(x, x, x)``) gets, at each position, the gradient through that position only, as the fused
    op's own backward gives it; the engine then adds them up, as it does for any op."""
    inputs: tuple[Any, ...] = node.inputs
    result: list[TensorLike | None] = [None] * len(inputs)
    with enable_grad():
        stand_ins = list(inputs)
        wanted: dict[Node, int] = {}  # each stand-in's node -> its input position
        for i, x in enumerate(inputs):
            if isinstance(x, TensorBase) and x.requires_grad:
                stand_ins[i] = Clone.apply(x)
                wanted[stand_ins[i].grad_fn] = i
        out = node.fn.composed(*stand_ins, **node.ctx.kwargs)  # type: ignore[union-attr]
        for stand_in, grad in backprop.gradients({out.grad_fn: grad_output}, wanted, backward_graph):
            result[wanted[stand_in]] = grad
    return tuple(result)
