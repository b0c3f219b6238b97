"""``Function``, ``Context`` and ``Node``: how one op runs forward and records what its backward needs.

Every op is a ``Function`` with two static methods side by side, both on plain ``np.ndarray``s::

    forward(ctx, *inputs)      -> np.ndarray
    backward(ctx, grad_output) -> one gradient per input (np.ndarray or None)

and a third, ``jvp``, for forward mode: the output's tangent from one tangent per input (``forward_ad``).

``Function.apply(*tensors)`` is the bridge between tensors and arrays. It takes the arrays out of the
tensors, runs ``forward`` on them, and puts the result in a new tensor. If grad mode is on and an input
requires grad, it also records a ``Node``: the op, its context (what forward saved), and one *edge* per
input, the node that input's gradient flows into. The nodes and edges are the graph that the engine
(``engine.py``) walks backward.

The contract between the graph and the tensors, all of it:

* a tensor that requires grad offers ``gradient_edge()``: the node its gradient flows into (the op that
  made it, or for a leaf its ``LeafNode``);
* a node holds ``edges``, one per input (a ``Node``, or None for an input that gets no gradient), and
  ``retained``: a weak reference to the tensor whose ``.grad`` receives the node's output gradient (a leaf),
  else None.

This file never imports a tensor class: ``tensor.py`` registers the one ``apply`` makes (``registry.py``),
and so can a class built on it.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import checks, grad_mode, registry


class Context:
    """Scratch space a ``forward`` fills for its ``backward``.

    ``save_for_backward(*arrays)`` stores arrays as ``saved_tensors``; any other attribute (``ctx.dim = dim``)
    may be set too. ``needs_input_grad[i]`` tells ``backward`` whether input ``i`` wants a gradient, so it can
    skip work; ``kwargs`` holds the op's keyword options.
    """

    saved_tensors: tuple[Any, ...] = ()
    kwargs: Any = None
    needs_input_grad: Sequence[bool] = ()

    def save_for_backward(self, *arrays: Any) -> None:
        """Keep ``arrays`` for ``backward``."""
        self.saved_tensors = arrays

    if TYPE_CHECKING:  # for type checkers only: any attribute may be set (ctx.dim = dim) and read back

        def __setattr__(self, name: str, value: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...


class Function:
    """Base class of every differentiable op: a ``forward`` and a ``backward`` on arrays. Example::

        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return (2 * x * grad_output,)

        y = Square.apply(t)

    ``backward`` may return a bare array instead of a 1-tuple for a one-input op. ``formula`` and
    ``grad_formulas`` state the forward and the backward as equations over names (``{out}`` the output,
    ``{0}``, ``{1}``... the inputs, ``{i}`` the input in question); the gradient-flow explainer prints them.
    """

    formula: str = "{out} = op(...)"
    grad_formulas: tuple[str, ...] = ("d{i} = backward of the op, from d{out}",)
    # True for an op of one input whose output is linear in it (shape ops, sums, casts): its backward is the
    # transposed linear map, and its jvp is the op itself, applied to the tangent
    linear = False
    # For a fused op: the same function written in plain ops, ``composed(*inputs, **options) -> Tensor``
    composed: Any = None
    # For an op whose backward reads its own output (exp, tanh, softmax...): where in ``ctx.saved_tensors``
    # forward saved it
    saved_output: int | None = None

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        """Compute the result from np.ndarrays; save what backward needs on ``ctx``."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> Any:
        """Return one gradient (np.ndarray or None) per positional forward input."""
        raise NotImplementedError

    @classmethod
    def jvp(cls, tangents: Any, *args: Any, **options: Any) -> Any:
        """Forward mode: the output's tangent ``tout = J t``.

        Called as ``jvp(tangents, inputs, out, **options)``: one tangent per input (zeros where an input has none;
        None for an input that is None), and the inputs and output of forward. A linear op's tangent is the op
        itself applied to its input's tangent: this default. Every other op states its own."""
        if not cls.linear:
            raise NotImplementedError(f"{cls.__name__} has no jvp: forward-mode AD does not support it")
        return cls.forward(Context(), tangents[0], **options)

    @classmethod
    def apply(cls, *inputs: Any, **options: Any) -> Any:
        """Run ``forward`` on the arrays inside ``inputs``; return the result as a tensor, with its node."""
        # 1. the arrays forward computes on, and which inputs want a gradient (a number or an array: none)
        arrays = []
        needs = []
        for x in inputs:
            if isinstance(x, registry.TensorBase):
                arrays.append(x.array)
                needs.append(x._requires_grad)
            else:
                arrays.append(x)
                needs.append(False)
        # 2. forward, with a fresh context to save into
        ctx = Context()
        ctx.needs_input_grad = tuple(needs)
        ctx.kwargs = options
        out = cls.forward(ctx, *arrays, **options)
        # 3. the result, a tensor around forward's array (a NumPy scalar becomes a 0-d array)
        result = registry.Tensor._make(np.asarray(out))
        # 4. the node backward will call, if grad mode is on and some input wants a gradient
        if grad_mode.is_grad_enabled() and True in needs:
            result._requires_grad = True
            result._grad_fn = registry.Node(cls, ctx, inputs)
            grad_mode.note_forward(result._grad_fn, inputs, result)
        return result


class Node:
    """One recorded call of a Function: the op, its context, and where its inputs' gradients go.

    ``edges[i]`` is the node that receives the gradient of input ``i`` (None if that input gets none);
    ``input_meta[i]`` is input ``i``'s (shape, dtype), which every gradient is checked against. Like torch,
    a node keeps only what ``forward`` saved, not its inputs: an array nobody saved is freed as soon as the
    forward pass moves on.
    """

    retained: weakref.ref | None = None  # the tensor whose .grad gets this node's output gradient (a leaf's)

    def __init__(self, fn: type[Function], ctx: Context, inputs: tuple[Any, ...]) -> None:
        self.fn = fn
        self.ctx: Context | None = ctx
        edges: list[Node | None] = []
        meta: list[Any] = []
        for x, needs_grad in zip(inputs, ctx.needs_input_grad):
            if needs_grad:
                edges.append(x.gradient_edge())
                meta.append((x.array.shape, x.array.dtype))
            else:
                edges.append(None)
                meta.append(None)
        self.edges: tuple[Node | None, ...] = tuple(edges)
        self.input_meta: tuple[Any, ...] = tuple(meta)

    @property
    def name(self) -> str:
        """The op's name, e.g. ``"Softmax"``."""
        return self.fn.__name__

    def backward(self, grad_output: Any) -> tuple[Any, ...]:
        """The op's backward on what its forward saved: one gradient per input, each checked against it."""
        grads = self.fn.backward(self.ctx, grad_output)  # type: ignore[arg-type]
        return checks.gradients_fit(self.name, grads, self.input_meta)


class AccumulateGrad(Function):
    """The op of a leaf's node: no inputs, so no gradient flows on; the one that reaches it is the leaf's."""

    formula = "{out} (a leaf)"
    grad_formulas = ()

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[()]:
        """No inputs, so no gradients to send on."""
        return ()


class LeafNode(Node):
    """A leaf's node (torch's ``AccumulateGrad``): no inputs, and ``retained`` is the leaf itself."""

    def __init__(self, leaf: Any) -> None:
        self.fn = AccumulateGrad
        self.ctx = None
        self.edges = ()
        self.input_meta = ()
        self.retained = weakref.ref(leaf)


registry.register(node=Node, leaf=LeafNode)
