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

and ``TensorBase``, at the end of this file, is what the graph reads of a tensor: ``tensor.py``'s ``Tensor`` is
built on it. ``apply`` returns a tensor of its inputs' class, with a node of the class that tensor class names
(``node_class``): core tensors in, a core tensor with a core ``Node`` out; a class built on ``Tensor`` (tinyattn's
torch-like one) gets tensors and nodes of its own kinds, by the same lines.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from . import checks, grad_mode


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
    # What forward mode needs to know of an op whose jvp follows from what it states already (``jvp`` below):
    # linear: its output is linear in its inputs, all together (a + b, reshape, cat, sums, casts), so its
    #   backward is the transposed linear map, and its jvp the op itself, applied to the tangents;
    # multilinear: linear in each input, the others held fixed (a * b, a @ b, einsum): the product rule;
    # symmetric: its Jacobian is symmetric (softmax's diag(Y) − Y Yᵀ, a mask's diagonal), so J t = Jᵀ t, the
    #   backward applied to the tangent;
    # constant_inputs: the positions of inputs never differentiated (a mask, a condition), kept as they are
    linear = False
    multilinear = False
    symmetric = False
    constant_inputs: tuple[int, ...] = ()
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

        Called with one tangent per input (zeros where an input has none; None for an input that is None), and
        the inputs and output of forward. This default takes it from what the op states already (the class
        attributes above): the op itself for a linear op, the product rule for a multilinear one, the backward
        for a symmetric Jacobian. Every other op states its own."""
        inputs = args[0]  # (args: the inputs, then the output, which no default reads)
        constant = cls.constant_inputs
        if cls.linear:  # J t is the op, on the tangents
            given = [x if i in constant else t for i, (x, t) in enumerate(zip(inputs, tangents))]
            return cls.forward(_context(len(inputs), options), *given, **options)
        if cls.multilinear:  # the product rule: one input's tangent at a time, the others as they are
            total = None
            for i, t in enumerate(tangents):
                if i in constant:
                    continue
                given = [t if j == i else x for j, x in enumerate(inputs)]
                term = cls.forward(_context(len(inputs), options), *given, **options)
                total = term if total is None else total + term
            return total
        if cls.symmetric:  # J t = Jᵀ t: the backward, on what forward saves, applied to the tangent
            ctx = _context(len(inputs), options)
            cls.forward(ctx, *inputs, **options)
            free = next(i for i in range(len(inputs)) if i not in constant)
            grads = cls.backward(ctx, tangents[free])
            return grads[free] if isinstance(grads, tuple) else grads
        raise NotImplementedError(f"{cls.__name__} has no jvp: forward-mode AD does not support it")

    @classmethod
    def apply(cls, *inputs: Any, **options: Any) -> Any:
        """Run ``forward`` on the arrays inside ``inputs``; return the result as a tensor, with its node."""
        # 1. the arrays forward computes on, which inputs want a gradient (a number or an array: none), and the
        #    class of the result: its tensor inputs' (the most derived one, if they differ)
        arrays = []
        needs = []
        made = None
        for x in inputs:
            if isinstance(x, TensorBase):
                arrays.append(x.array)
                needs.append(x._requires_grad)
                if made is None or isinstance(x, made):
                    made = type(x)
            else:
                arrays.append(x)
                needs.append(False)
        if made is None:
            raise TypeError(f"{cls.__name__}.apply: expected a tensor among the inputs, got "
                            f"({', '.join(type(x).__name__ for x in inputs)})")
        # 2. forward, with a fresh context to save into
        ctx = Context()
        ctx.needs_input_grad = tuple(needs)
        ctx.kwargs = options
        out = cls.forward(ctx, *arrays, **options)
        # 3. the result, a tensor around forward's array (a NumPy scalar becomes a 0-d array)
        result = made._make(np.asarray(out))
        # 4. the node backward will call, if grad mode is on and some input wants a gradient
        if grad_mode.is_grad_enabled() and True in needs:
            result._requires_grad = True
            result._grad_fn = made.node_class(cls, ctx, inputs)
            grad_mode.note_forward(result._grad_fn, inputs, result)
        # 5. what the result's class adds to each op's result: nothing here (torch's layer: a forward-mode tangent)
        return made.op_result(result, cls, inputs, options)


def _context(count: int, options: dict[str, Any]) -> Context:
    """A fresh context for running an op's forward (and backward) outside a recorded call: forward mode's."""
    ctx = Context()
    ctx.needs_input_grad = (True,) * count
    ctx.kwargs = options
    return ctx


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


class TensorBase:
    """What the graph reads of a tensor, all of it.

    ``tensor.py``'s ``Tensor`` is built on this class and adds the rest (``grad``, ``backward``, the operators).

    Attributes:
        array: the value, an ``np.ndarray`` (``shape``, ``dtype`` and ``ndim`` are its).
        requires_grad: whether ops on this tensor are recorded (``_requires_grad``, which ``apply`` reads).
        _grad_fn: the node of the op that made this tensor (None for a leaf).
        _grad: ``dL/dself`` once a backward pass reached this tensor's ``.grad``, else None.
        node_class, leaf_class: the nodes ops on tensors of this class record, and a leaf of this class flows
            into. A class built on ``Tensor`` may name its own, built on these.
    """

    array: np.ndarray
    _requires_grad = False
    _grad_fn: Node | None = None
    _grad: Any = None
    _leaf_node: LeafNode | None = None
    node_class: type[Node] = Node
    leaf_class: type[LeafNode] = LeafNode

    @classmethod
    def _make(cls, array: np.ndarray, requires_grad: bool = False) -> Any:
        """Wrap an ndarray as it is, without a copy or a check (an op's result, a gradient...)."""
        t = cls.__new__(cls)
        t.array = array
        t._requires_grad = requires_grad
        return t

    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded for backward."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value:
            checks.can_require_grad(self.array.dtype)
        else:
            checks.can_stop_requiring_grad(self._grad_fn)
        self._requires_grad = bool(value)

    # -- the array's facts -----------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple."""
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype."""
        return self.array.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self.array.ndim

    # -- the graph: the node this tensor's gradient flows into -------------------------------------------------

    def gradient_edge(self) -> Node | None:
        """The node this tensor's gradient flows into: its ``grad_fn``, a leaf's ``LeafNode``, or None."""
        if self._grad_fn is not None:
            return self._grad_fn
        if not self._requires_grad:
            return None
        if self._leaf_node is None:  # (made once: every graph the leaf is in sends its gradient to this node)
            self._leaf_node = self.leaf_class(self)
        return self._leaf_node

    @classmethod
    def op_result(cls, result: Any, fn: type[Function], inputs: tuple[Any, ...], options: dict[str, Any]) -> Any:
        """The last step of ``Function.apply``: ``result``, the tensor ``fn`` made from ``inputs``, as it is.

        A class built on ``Tensor`` may add to it (tinyattn's torch-like ``Tensor``: the result's forward-mode
        tangent)."""
        return result
