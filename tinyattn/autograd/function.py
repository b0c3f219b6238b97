"""``Function``: the unit of autograd. Every op in tinyattn is one.

A Function has two static methods side by side::

    forward(ctx, *inputs)      -> np.ndarray            # inputs arrive as np.ndarrays
    backward(ctx, grad_output) -> one gradient per input (np.ndarray or None)

``Function.apply(*args)`` unwraps tensors, runs ``forward`` and, when grad mode is
on and some input requires grad, records a ``Node`` so the engine can later call
``backward``. This file also holds the small helpers every op shares:
``unbroadcast`` (the one place broadcasting is undone) and the argument checks.

Homework: comments in this file mark the parts that ``python -m tinyattn.homework`` blanks for
students, and plausible wrong answers (mutants) its tests must catch; see docs/teaching.md.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable, Sequence

import numpy as np

from .grad_mode import is_grad_enabled
from .tensor import Tensor


class Context:
    """Scratch space a ``forward`` fills for its ``backward``.

    ``save_for_backward(*arrays)`` stores arrays as ``saved_tensors``; any other
    attribute (``ctx.dim = dim``) may be set too. ``needs_input_grad[i]`` tells
    ``backward`` whether input ``i`` wants a gradient, so it can skip work.
    """

    saved_tensors: tuple[Any, ...]

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()

    def save_for_backward(self, *arrays: Any) -> None:
        """Keep ``arrays`` for ``backward`` (released after it unless retain_graph)."""
        self.saved_tensors = arrays


class Node:
    """One recorded call of a Function: which op, its context, and where its inputs came from.

    ``edges[i]`` says where the gradient of input ``i`` goes: the ``Node`` that
    produced that input, the input itself if it is a leaf, or None (a
    non-tensor, or a tensor that needs no gradient). ``input_meta[i]`` is that
    input's (shape, dtype), which the engine checks each gradient against. Like torch, a node keeps
    only what ``forward`` saved, not its inputs' values: an intermediate array
    nobody saved is freed as soon as the forward pass moves on.
    """

    __slots__ = ("fn", "ctx", "edges", "input_meta", "constants", "output", "out_name", "released")

    def __init__(self, fn: type[Function], ctx: Context, args: Sequence[Any], output: Tensor) -> None:
        self.fn = fn
        self.ctx: Context | None = ctx
        edges: list[Node | Tensor | None] = []
        meta: list[tuple[tuple[int, ...], Any] | None] = []
        constants: list[Any] = []  # what the explainer shows for inputs that get no gradient
        for a in args:
            if isinstance(a, Tensor):
                meta.append((a.data.shape, a.data.dtype))
                if a._requires_grad:
                    edges.append(a if a._grad_fn is None else a._grad_fn)
                    constants.append(None)
                else:
                    edges.append(None)
                    constants.append(a._name or "const")
            else:
                edges.append(None)
                meta.append(None)
                constants.append(a if isinstance(a, (int, float)) else "const")
        self.edges: tuple[Node | Tensor | None, ...] = tuple(edges)
        self.input_meta = tuple(meta)
        self.constants = tuple(constants)
        self.output = weakref.ref(output)  # for retain_grad(); does not keep the output alive
        self.out_name: str | None = None  # the output's name, kept after the output itself is freed
        self.released = False

    @property
    def name(self) -> str:
        """The op's name, e.g. ``"Softmax"``."""
        return self.fn.__name__

    def release(self) -> None:
        """Free the saved arrays and the links to the inputs (the graph behind)."""
        self.ctx = None
        self.edges = ()
        self.released = True


class Function:
    """Base class of every differentiable op; subclass it to write your own.

    Example::

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

    ``formula`` and ``grad_formulas`` state the forward and the backward as
    equations over names (``{out}`` the output, ``{0}``, ``{1}``... the inputs,
    ``{i}`` the input in question); the gradient-flow explainer prints them.
    """

    formula: str = "{out} = op(...)"
    grad_formulas: tuple[str, ...] = ("d{i} = backward of the op, from d{out}",)

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        """Compute the result from np.ndarrays; save what backward needs on ``ctx``."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> Any:
        """Return one gradient (np.ndarray or None) per positional forward input."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        """Run ``forward`` on the arrays inside ``args`` and record the graph node."""
        arrays, needs_input_grad = [], []
        for a in args:
            is_tensor = isinstance(a, Tensor)
            arrays.append(a.data if is_tensor else a)
            needs_input_grad.append(is_tensor and a._requires_grad)
        record = any(needs_input_grad) and is_grad_enabled()
        ctx = Context(tuple(needs_input_grad))
        out = cls.forward(ctx, *arrays, **kwargs)
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        result = Tensor._make(out, requires_grad=record)
        if record:
            result._grad_fn = Node(cls, ctx, args, result)
        return result


# ---------------------------------------------------------------------------
# Helpers shared by the ops
# ---------------------------------------------------------------------------


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` down to ``shape`` (and cast to ``dtype``).

    Forward broadcasting copies an input along new leading axes and along axes
    of size 1, so its gradient is the sum of the upstream gradient over exactly
    those axes.
    """
    # BEGIN TASK unbroadcast
    extra = grad.ndim - len(shape)
    if extra > 0:
        # MUTANT: grad = grad.mean(axis=tuple(range(extra)))
        grad = grad.sum(axis=tuple(range(extra)))
    # MUTANT: axes = ()
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    # END TASK
    if dtype is not None and grad.dtype != dtype:
        grad = grad.astype(dtype)
    return grad


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast rule, with an error that names the op and the shapes."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{op}: shapes {listed} cannot be broadcast together") from None


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True if an array of ``shape`` broadcasts to exactly ``target`` (as a mask or ``expand`` needs)."""
    try:
        return tuple(np.broadcast_shapes(shape, target)) == tuple(target)
    except ValueError:
        return False


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """Turn a possibly negative ``dim`` into an index in ``[0, ndim)``, or raise."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected {-max(ndim, 1)}..{max(ndim, 1) - 1})"
        )
    return int(dim) % max(ndim, 1)


def normalize_dims(op: str, dim: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative axes; ``None`` means every axis."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = tuple(sorted({normalize_dim(op, d, ndim) for d in dims}))
    if len(out) != len(dims):
        raise ValueError(f"{op}: dim {tuple(dims)} repeats an axis")
    return out


def shape_str(shape: Sequence[int]) -> str:
    """Format a shape as a Python tuple, e.g. ``(3, 4)`` or ``(5,)``."""
    return str(tuple(int(n) for n in shape))
