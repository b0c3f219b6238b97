"""``Function``: the unit of autograd. Every op in tinyattn is one.

A Function has two static methods side by side, both on plain ``np.ndarray``s::

    forward(ctx, *inputs)      -> np.ndarray
    backward(ctx, grad_output) -> one gradient per input (np.ndarray or None)

``Function.apply(*tensors)`` runs ``forward`` and, when grad mode is on and an
input requires grad, records a ``Node`` for the engine to call ``backward`` on.

The contract between the graph and the tensors, all of it:

* a tensor that requires grad offers ``gradient_edge()``: the node its gradient
  flows into (the op that made it, or for a leaf its ``AccumulateGrad`` node);
* a node holds ``edges``, one per input (a ``Node``, or None for an input that
  gets no gradient), and ``retained``: a weak reference to the tensor whose
  ``.grad`` receives the node's output gradient (a leaf, or a ``retain_grad()``
  tensor), else None.

This file also holds the small helpers every op shares: ``unbroadcast`` (the one
place broadcasting is undone) and the argument checks. The ops below it work on
arrays. One import runs back up: ``Function.apply`` returns a ``Tensor``, and a
Tensor's methods apply the ops, so tensor.py (which imports the ops, which import
this file) is imported at the bottom of this file, after everything it needs here.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

import functools
import weakref
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

NO_OPTIONS: Any = MappingProxyType({})  # (the options of an op called without keywords)


class Context:
    """Scratch space a ``forward`` fills for its ``backward``.

    ``save_for_backward(*arrays)`` stores arrays as ``saved_tensors``; any other
    attribute (``ctx.dim = dim``) may be set too. ``needs_input_grad[i]`` tells
    ``backward`` whether input ``i`` wants a gradient, so it can skip work.
    """

    saved_tensors: tuple[Any, ...] = ()  # (until save_for_backward sets this context's own)
    kwargs: Any = NO_OPTIONS  # the op's keyword options (Function.apply sets them)
    needs_input_grad: Sequence[bool] = ()  # (Function.apply sets each context's own)

    def save_for_backward(self, *arrays: Any) -> None:
        """Keep ``arrays`` for ``backward`` (released after it unless retain_graph)."""
        self.saved_tensors = arrays

    if TYPE_CHECKING:  # for type checkers only: any attribute may be set (ctx.dim = dim) and read back

        def __setattr__(self, name: str, value: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...


class Function:
    """Base class of every differentiable op; subclass it to write your own.

    tinyattn's ops compute on arrays, and so does a Function of yours that says ``on_arrays = True``;
    one without it gets torch's contract instead, Tensors in and out (``custom_function.py``). Example::

        class Square(Function):
            on_arrays = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                return (2 * x * grad_output,)

        y = Square.apply(t)

    ``backward`` may return a bare array instead of a 1-tuple for a one-input op. With ``create_graph=True`` the
    backward runs again on Tensors (higher_order.py); a backward that reads the op's own output gets it there as
    the output, history and all (tinyattn's ops say where they saved it: ``saved_output``; yours note it).
    ``formula`` and ``grad_formulas`` state the forward and the backward as
    equations over names (``{out}`` the output, ``{0}``, ``{1}``... the inputs,
    ``{i}`` the input in question); the gradient-flow explainer prints them.
    """

    formula: str = "{out} = op(...)"
    grad_formulas: tuple[str, ...] = ("d{i} = backward of the op, from d{out}",)
    is_view = False  # True for ops whose result may share its first input's memory (reshape, slicing...)
    # True for ops of one input whose output is linear in it (shape ops, sums, casts): their backward is the
    # transposed map, and its own derivative is the forward again (higher_order.py's Transposed)
    linear = False
    # For a fused op: the same function written in plain ops, ``composed(*inputs, **options) -> Tensor``; its
    # derivative stands in for the fused backward's when a gradient is differentiated (higher_order.py)
    composed: Any = None
    # For an op whose backward reads its own output (exp, tanh, softmax...): where in ``ctx.saved_tensors`` forward
    # saved it. A backward recorded as ops (higher_order.py) reads it as the output, history and all, not a constant
    saved_output: int | None = None
    on_arrays = False  # (see __init_subclass__: a Function of your own that computes on arrays says True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A Function subclassed outside tinyattn is torch's kind, on Tensors (its apply is custom_function.run),
        unless it says ``on_arrays = True``: then it is an op like tinyattn's own, whose forward notes where it
        saved its output, if it did (unless the class says ``saved_output``)."""
        super().__init_subclass__(**kwargs)
        if cls.__module__.split(".")[0] == __name__.split(".")[0]:  # (inside this package: its ops say saved_output)
            return
        if not cls.on_arrays:
            from .custom_function import run  # (custom_function.py imports this file; looked up once per class)

            cls.apply = classmethod(run)  # type: ignore[method-assign, assignment]
        elif "forward" in vars(cls) and "saved_output" not in vars(cls):
            # (its own forward: a staticmethod, as torch's are written, or a plain function; both are called alike)
            cls.forward = staticmethod(_noting_output(vars(cls)["forward"]))  # type: ignore[method-assign]

    def __call__(self, *args: Any) -> Any:
        """Refused, as torch: an instance called as a function is the pre-0.4 style."""
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        """Compute the result from np.ndarrays; save what backward needs on ``ctx``."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> Any:
        """Return one gradient (np.ndarray or None) per positional forward input."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` on the arrays inside ``args``; return the result as a Tensor.

        When grad mode is on and an input requires grad, the result also gets the ``Node`` that
        backward will call (its ``grad_fn``): the op, what forward saved, and the inputs' edges.
        """
        arrays, needs = [], []  # each input's array, and whether it wants a gradient
        for a in args:  # (a Python number, an ndarray, None: passed as it is, no gradient)
            tensor = isinstance(a, Tensor)
            arrays.append(a.array if tensor else a)
            needs.append(a._requires_grad if tensor else False)
        separate_shared_arrays(arrays, args)
        ctx = Context()
        ctx.needs_input_grad, ctx.kwargs = tuple(needs), kwargs or NO_OPTIONS  # (none: one shared empty map)
        out = cls.forward(ctx, *arrays, **kwargs)
        result = Tensor._make(np.asarray(out))  # (forward's own array, or a NumPy scalar made 0-d)
        if cls.is_view:
            note_view(result, out, args[0])
        if grad_mode._grad_enabled and True in needs:
            result._requires_grad = True
            result._grad_fn = Node(cls, ctx, args)
            if grad_mode._recorder is not None:  # the explainer's trace() is watching
                grad_mode._recorder.forward(result._grad_fn, args, result)
        return result


def separate_shared_arrays(arrays: list[Any], args: tuple[Any, ...]) -> None:
    """Give each of two different tensors that hold one array (``x`` and ``x.detach()``) an array object of its own
    (a view: the same memory), so that what forward saves names the input it came from: a second derivative
    replaces each saved input by that input's tensor, history and all, and ``x.detach()`` has none."""
    for i in range(1, len(arrays)):
        for j in range(i):
            if arrays[i] is arrays[j] and args[i] is not args[j] and isinstance(arrays[i], np.ndarray):
                arrays[i] = arrays[i].view()
                break


def _noting_output(forward: Any) -> Any:
    """A forward of yours, on arrays, that notes on its context where it saved its output (``ctx.saved_output``,
    None if it did not): a backward recorded as ops (higher_order.py) reads that array as the output."""

    @functools.wraps(forward)
    def noting(ctx: Context, *args: Any, **kwargs: Any) -> Any:
        out = forward(ctx, *args, **kwargs)
        ctx.saved_output = next((i for i, s in enumerate(ctx.saved_tensors) if s is out), None)
        return out

    return noting


class Node:
    """One recorded call of a Function: the op, its context, and where its inputs' gradients go.

    ``edges[i]`` is the node that receives the gradient of input ``i`` (None if
    that input gets none); ``input_meta[i]`` is input ``i``'s (shape, dtype),
    which every gradient is checked against. Like torch, a node keeps only what
    ``forward`` saved, not its inputs: an intermediate array nobody saved is
    freed as soon as the forward pass moves on. (A fused op, one with a ``composed``
    twin, keeps its inputs too: its second derivative recomputes the twin from them.)
    """

    __slots__ = ("fn", "ctx", "edges", "input_meta", "retained", "released", "saved_versions", "inputs",
                 "__weakref__")

    fn: type[Function]
    ctx: Context | None  # (None once released, and for a leaf)
    retained: weakref.ref | None  # the tensor whose .grad gets this node's output gradient
    edges: Sequence[Node | None]
    input_meta: Sequence[tuple[Any, Any] | None]
    saved_versions: Sequence[tuple[Any, int]]
    released: bool

    def __init__(self, fn: type[Function], ctx: Context, inputs: tuple[Any, ...]) -> None:
        self.fn, self.ctx, self.retained, self.released = fn, ctx, None, False
        # per input: the node its gradient flows into (its grad_fn, or a leaf's node), and its (shape, dtype);
        # None for an input that takes no gradient
        edges: list[Node | None]
        meta: list[tuple[Any, Any] | None]
        edges, meta = [], []
        for x, need in zip(inputs, ctx.needs_input_grad):
            edges.append((x._grad_fn or x._leaf_node or x.gradient_edge()) if need else None)  # (a leaf's: made once)
            meta.append((x.array.shape, x.array.dtype) if need else None)
        # (kept as tuples, one block each: the lists go at once, and the next op's objects reuse their memory, still
        # in the cache; the inputs kept by a fused op only, for its composed twin: higher_order)
        self.edges, self.input_meta, self.inputs = tuple(edges), tuple(meta), inputs if fn.composed is not None else ()
        # (input tensor, its version) for each input whose very array forward saved: changed in place since, the
        # saved array no longer holds the forward's value, and backward must refuse (torch's version counter)
        self.saved_versions = saved_versions(ctx.saved_tensors, inputs) if ctx.saved_tensors else ()

    @property
    def name(self) -> str:
        """The op's name, e.g. ``"Softmax"``."""
        return self.fn.__name__

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """torch's view of the edges: ``((node, 0), ...)``, one per input (``(None, 0)`` for one without a gradient)."""
        return tuple((edge, 0) for edge in self.edges)

    def backward(self, grad_output: Any, record: Any = None) -> tuple[Any, ...]:
        """Call the op's backward; return its gradients, one per edge, each checked against its input.

        Two checks: what forward saved is unchanged (torch's version counter), and each gradient fits its
        input (the engine's guard). ``record`` (with create_graph: ``higher_order.backward_graph``) runs the
        backward as recorded ops instead.
        """
        for tensor, version in self.saved_versions:  # (input tensor, its version when forward saved its array)
            if tensor._version != version:
                raise modified_error(self, tensor, version)
        grads = self.fn.backward(self.ctx, grad_output) if record is None else record(self, grad_output)  # type: ignore[arg-type]
        if type(grads) is not tuple:
            grads = (grads,)  # (a one-input op may return its gradient bare)
        if len(grads) != len(self.edges):
            raise RuntimeError(f"{self.name}.backward returned {len(grads)} gradients for {len(self.edges)} inputs")
        for position, grad in enumerate(grads):  # the guard: each gradient of its input's shape and dtype, or None
            if grad is not None:
                check_gradient(self.name, position, grad, self.input_meta[position])
        return grads

    def release(self) -> None:
        """Free what only backward reads: what forward saved, the inputs it kept and their (shape, dtype).

        The edges stay, as torch's ``next_functions`` do.
        """
        self.ctx, self.released = None, True
        self.saved_versions = self.inputs = self.input_meta = ()

    def output_changed(self, array: np.ndarray) -> None:
        """An in-place op overwrote this node's output ``array``: if backward reads it (forward saved it), refuse."""
        if self.ctx is not None and any(s is array for s in self.ctx.saved_tensors):
            self.saved_versions = (*self.saved_versions, (OverwrittenOutput(array.shape, self.name), 0))


def check_gradient(op: str, position: int, grad: Any, meta: tuple[Any, Any] | None) -> None:
    """Refuse a gradient that does not fit input ``position`` of ``op``, whose (shape, dtype) is ``meta`` (None: the
    input takes no gradient, and what was returned for it is dropped)."""
    if meta is None:
        return
    shape = getattr(grad, "shape", None)
    dtype = getattr(grad, "dtype", None)
    if shape == meta[0] and dtype == meta[1]:
        return
    if shape is None or dtype is None:  # not an array: a Python number, say
        got = f"a {type(grad).__name__}"
    else:
        got = f"a gradient of shape {shape} and dtype {dtype}"
    raise RuntimeError(f"{op}.backward returned {got} for input {position}, which has shape {meta[0]} "
                       f"and dtype {meta[1]}")


class OverwrittenOutput:
    """Stands, in ``saved_versions``, for a node's output that an in-place op changed after forward saved it."""

    _version = _changes = 1
    _base = None

    def __init__(self, shape: tuple[int, ...], op: str) -> None:
        self.shape, self.op = shape, op


def saved_versions(saved: tuple[Any, ...], inputs: tuple[Any, ...]) -> tuple[tuple[Any, int], ...]:
    """``(tensor, version)`` for each input whose very array forward saved: torch's saved-variable check (and,
    for a backward recorded as ops, the inputs it computes on, history and all)."""
    versions = []
    for x in inputs:
        if isinstance(x, Tensor):
            for s in saved:
                if s is x.array:
                    versions.append((x, x._version))
                    break
    return tuple(versions)


def modified_error(node: Node, tensor: Any, version: int) -> RuntimeError:
    """torch's message for a saved value changed in place between forward and backward."""
    what = f"the output of {tensor.op}" if isinstance(tensor, OverwrittenOutput) else type(tensor).__name__
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{what} of shape {tuple(tensor.shape)}] is at version "
        f"{tensor._version}; expected version {version} instead ({node.name}.backward needs its value "
        "from the forward pass: an optimizer step or an in-place op ran between forward and backward)"
    )


class AccumulateGrad(Function):
    """The sink of a leaf: the gradient that reaches it is the leaf's ``.grad``; nothing flows on."""

    formula = "{out} (a leaf)"
    grad_formulas = ()

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[()]:
        """No inputs, so no gradients to send on."""
        return ()


class LeafNode(Node):
    """A leaf's uniform edge (torch's ``AccumulateGrad``): a node with no inputs that outlives backward."""

    __slots__ = ()

    def __init__(self, leaf: Any) -> None:
        self.fn, self.ctx, self.retained, self.released = AccumulateGrad, None, weakref.ref(leaf), False
        self.edges = self.input_meta = self.saved_versions = self.inputs = ()


# ---------------------------------------------------------------------------
# Helpers shared by the ops
# ---------------------------------------------------------------------------


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` down to ``shape`` (and cast to ``dtype``).

    Forward broadcasting copies an input along new leading axes and along axes
    of size 1, so its gradient is the sum of the upstream gradient over exactly
    those axes.
    """
    if grad.shape == shape and (dtype is None or grad.dtype == dtype):
        return grad  # nothing was broadcast (the usual case)
    # BEGIN TASK unbroadcast
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    # END TASK
    if dtype is not None and grad.dtype != dtype:
        grad = cast(grad, dtype)
    return grad


def on_tensors(*xs: Any) -> bool:
    """True when a backward computes on Tensors: it is being recorded as ops (``create_graph``, higher_order.py)."""
    for x in xs:
        if isinstance(x, Tensor):
            return True
    return False


def cast(x: Any, dtype: Any) -> Any:
    """``x`` in ``dtype``: ``astype`` for an array, ``to`` for a Tensor."""
    return x.to(dtype) if isinstance(x, Tensor) else x.astype(dtype, copy=False)


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
    if type(dim) is int and -ndim <= dim < ndim:  # the usual case, checked at once
        return dim % ndim
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected {-max(ndim, 1)}..{max(ndim, 1) - 1})"
        )
    return int(dim) % max(ndim, 1)


def normalize_dims(op: str, dim: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative axes; ``None`` means every axis.

    A 0-d tensor accepts ``dim`` 0 or -1, as torch does, and has no axis to reduce: ``()``.
    """
    if dim is None:
        return tuple(range(ndim))
    if type(dim) is int and -ndim <= dim < ndim:  # the usual case: one dim, in range
        return (dim % ndim,)
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = tuple(sorted({normalize_dim(op, d, ndim) for d in dims}))
    if len(out) != len(dims):
        raise ValueError(f"{op}: dim {tuple(dims)} repeats an axis")
    return out if ndim else ()



# The two layers above this file that ``Function.apply`` needs: the grad mode it checks and the Tensor it
# returns. Imported last: tensor.py builds on this file (it imports Context and the helpers above).
from . import grad_mode  # noqa: E402
from .tensor import Tensor, note_view  # noqa: E402


def __getattr__(name: str) -> Any:
    """``torch.autograd.function.once_differentiable`` and ``FunctionCtx`` live in custom_function.py (which
    imports this file): looked up there when a program asks this module for them."""
    if name in ("once_differentiable", "FunctionCtx"):
        from . import custom_function

        return getattr(custom_function, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
