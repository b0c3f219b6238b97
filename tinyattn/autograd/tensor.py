"""``Tensor``: the tensor users get, the core's tensor (``core/tensor.py``) with torch's methods and mechanisms.

The core's ``Tensor`` holds the array, the gradient, the node that made it and ``backward``, and its
arithmetic operators. This class adds, above it:

* torch's methods, each one line that applies a core op (here, ``tensor_api.py`` and ``tensor_math.py``);
* torch's ``backward`` arguments (``retain_graph``, ``create_graph``, ``inputs``: ``engine.py``);
* the version counter and views: a tensor made by a view op shares its base's memory and counter, and an
  in-place change moves the counter on, so that a backward that saved the old value refuses (``graph.py``);
* ``retain_grad``, ``detach``, ``.data``, the legacy constructor, printing and NumPy interoperation.

Its nodes are ``graph.py``'s (``node_class``, ``leaf_class``), and the last step of every op on its tensors,
``op_result``, gives the result its forward-mode tangent inside a dual level (``tangents.py``).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Sequence

import numpy as np

from . import engine, hooks, printing, tangents
from .arrays import ArrayLike, to_array
from .core import dtypes  # dtypes.DEFAULT_FLOAT: read at each call (set_default_dtype)
from .core import tensor as core
from .core.checks import normalize_dim
from .core.function import Function, Node
from .core.grad_mode import is_grad_enabled
from .core.ops.elementwise import (
    Abs,
    Add,
    Cos,
    Div,
    Exp,
    Log,
    MaskedFill,
    Mul,
    Neg,
    Pow,
    ReLUFn,
    Sigmoid,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Where,
    named_ops,
)
from .core.ops.matmul import MatMul
from .core.ops.reduction import Amax, Mean, Sum, TakeAlong, Var
from .core.ops.shape import Cat, Expand, GetItem, Permute, Reshape, Squeeze, Stack, Transpose, Unsqueeze
from .core.ops.softmax import LogSoftmax, Softmax
from .devices import check_device
from .graph import GraphLeaf, GraphNode
from .tensor_api import MinMax, TensorAPI, _plain_index
from .tensor_math import TensorMath

Scalar = int | float


def legacy_array(dtype: Any, args: tuple, name: str, device: Any = None) -> np.ndarray:
    """The array of ``Tensor(*args)``, ``FloatTensor(*args)``: sizes give zeros, a sequence its values in ``dtype``."""
    check_device(name, device)
    if not args:
        return np.zeros((0,), dtype)
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in args):
        return np.zeros(tuple(int(a) for a in args), dtype)  # (torch leaves them uninitialized)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray, Tensor)):
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype != np.dtype(dtype):
                raise TypeError(f"{name}(): expected a tensor of dtype {np.dtype(dtype)}, got one of {data.dtype}")
            return data.array
        return to_array(data).astype(dtype, copy=False)
    got = ", ".join(type(a).__name__ for a in args)
    raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data, got ({got})")


def note_view(result: Tensor, source: Tensor) -> Tensor:
    """A view op made ``result`` from ``source``: if ``result``'s array is a view of ``source``'s memory (not a copy
    NumPy made, as reshaping a transposed array does), ``result`` shares ``source``'s base, and so its version
    counter, as torch's views do. Returns ``result``."""
    out = result.array
    if out.base is not None and (out.base is source.array or out.base is source.array.base):
        result._base = source.memory_owner()
    return result


def view_op(fn: type[Function], source: Tensor, **options: Any) -> Tensor:
    """Apply the view op ``fn`` to ``source``: its result shares ``source``'s memory and version counter."""
    return note_view(fn.apply(source, **options), source)


class Tensor(core.Tensor, TensorAPI, TensorMath):
    """An n-dimensional array that can record the ops applied to it.

    Attributes:
        array: the value, an ``np.ndarray`` (what the ops compute on; ``.data`` is the same
            memory as a tensor cut from the graph, as torch's ``.data``).
        grad: ``dL/dself`` after ``backward()`` (leaves, or ``retain_grad()``), a Tensor, else None.
        requires_grad: whether ops on this tensor are recorded.
        name: an optional human label (``"Q"``, ``"scores"``) used by the explainer.
    """

    __array_priority__ = 1000  # ndarray (op) Tensor defers to Tensor's reflected ops
    __hash__ = object.__hash__  # __eq__ is elementwise, identity stays the hash

    # (the core's attributes, as this class has them: its gradient and nodes are of the kinds this layer adds)
    array: np.ndarray
    _grad: Tensor | None
    _grad_fn: GraphNode | None
    _changes = 0  # in-place changes of this tensor's memory (a view's are counted on its base: see _version)
    _base: Tensor | None = None  # the tensor whose memory this one views (its version counter is the base's)
    _fw_tangent: Tensor | None = None  # forward mode's tangent, inside a dual level (tangents.py)
    node_class = GraphNode  # the node an op on these tensors records: torch's version check, freeing... (graph.py)
    leaf_class = GraphLeaf

    @classmethod
    def op_result(cls, result: Tensor, fn: type[Function], inputs: tuple[Any, ...], options: dict[str, Any]) -> Tensor:
        """The last step of every op on these tensors: the result's forward-mode tangent, inside a dual level.

        ``Function.apply`` ends here; the tangent comes from the inputs' (``tangents.py``)."""
        return tangents.with_tangent(result, fn, inputs, options)

    def __init__(self, *args: Any, device: Any = None) -> None:
        """torch's legacy constructor: ``Tensor(2, 3)`` (zeros of that shape), ``Tensor(data)`` (in the
        default float dtype), ``Tensor()`` (empty); ``Tensor(tensor)`` shares the tensor's memory.
        Code written today makes tensors with ``tinyattn.tensor(data, dtype=..., requires_grad=...)``."""
        if len(args) == 1 and isinstance(args[0], Tensor) and device is None:
            self.array = args[0].array.view()
            return
        self.array = legacy_array(dtypes.DEFAULT_FLOAT, args, "Tensor", device)

    @property
    def data(self) -> Tensor:
        """This tensor's memory as a tensor cut from the graph, as torch's ``.data``: ``p.data.uniform_(-0.1, 0.1)``."""
        return Tensor._make(self.array.view())  # (an array object of its own, as detach()'s)

    @data.setter
    def data(self, value: Any) -> None:
        self.array = value.array if isinstance(value, Tensor) else np.asarray(value)

    # -- autograd state ------------------------------------------------------

    def memory_owner(self) -> Tensor:
        """The tensor whose memory this one is: its base, for a view (or a ``detach()``), else itself."""
        if self._base is None:
            return self
        return self._base

    @property
    def _version(self) -> int:
        """torch's version counter: bumped by every in-place change of this memory, one counter for a base and
        all its views. A backward whose forward saved the value refuses once it has moved on (``graph.py``)."""
        return self.memory_owner()._changes

    @_version.setter
    def _version(self, value: int) -> None:
        self.memory_owner()._changes = value

    def named(self, name: str) -> Tensor:
        """Set ``name`` and return the tensor itself: ``q = F.linear(x, w).named("Q")``."""
        self.name = name
        return self

    def register_hook(self, hook: Any) -> hooks.RemovableHandle:
        """Run ``hook(grad)`` on this tensor's gradient in every later backward pass.

        A tensor the hook returns replaces the gradient. Returns a handle whose ``remove()`` takes the hook off
        (``hooks.py``)."""
        return hooks.register(self, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward (a leaf keeps it anyway)."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        if self._grad_fn is not None:
            self._grad_fn.retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """True if ``retain_grad()`` was called on this non-leaf tensor."""
        node = self._grad_fn
        return node is not None and node.retained is not None and node.retained() is self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor (torch's spelling)."""
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's memory (and its version counter) and cut from the graph."""
        t = Tensor._make(self.array.view())  # (an array object of its own: what an op saves tells the two apart)
        t._base = self.memory_owner()
        return t

    def backward(
        self,
        gradient: ArrayLike | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Tensor | Sequence[Tensor] | None = None,
    ) -> None:
        """Accumulate ``d self / d leaf`` (times ``gradient``) into every leaf's ``.grad``.

        With ``inputs`` (a tensor or a sequence, as torch's), into those tensors' ``.grad`` only, leaves or not.
        With ``create_graph=True`` each ``.grad`` is a Tensor that can be differentiated again.
        """
        # the pass starts at this tensor's node, from its gradient (root_gradient refuses a tensor without a node)
        roots: dict[Node, Any] = {self.gradient_edge(): engine.root_gradient(self, gradient, create_graph)}  # type: ignore[dict-item]
        engine.run_backward(roots, retain_graph, create_graph, None if inputs is None else engine.wanted_inputs(inputs))

    def numpy(self) -> np.ndarray:
        """The value as an ndarray (shares memory, like torch); refused while it requires grad, as in torch."""
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on a Tensor that requires grad: the array would leave the graph. "
                "Use tensor.detach().numpy() instead."
            )
        return self.array

    def item(self) -> Scalar:
        """The value of a one-element tensor as a Python number."""
        if self.array.size != 1:
            raise ValueError(f"item: only one-element tensors can be converted, got shape {self.shape}")
        return self.array.item()

    def tolist(self) -> Any:
        """The value as nested Python lists."""
        return self.array.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = self.numpy()  # refused while the tensor requires grad: np.asarray(t) would drop the graph
        return data.copy() if copy else data  # (NumPy casts it to ``dtype`` itself)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on tensors: ``np.exp(t)`` is ``t.exp()`` (differentiable), ``x + t`` is ``Add``.

        Other ufuncs compute on the arrays and give a tensor, but refuse a tensor that requires
        grad (their result would silently leave the graph).
        """
        op = _UFUNC_OPS.get(ufunc)
        if method == "__call__" and not kwargs and op is not None:
            return op.apply(*inputs)
        if method == "__call__" and not kwargs and ufunc in _COMPARISONS:
            return Tensor._make(ufunc(*(_unwrap(x) for x in inputs)))
        if is_grad_enabled() and any(isinstance(x, Tensor) and x._requires_grad for x in inputs):
            raise TypeError(
                f"numpy.{ufunc.__name__} has no gradient here: apply the Tensor's own op, or .detach() first"
            )
        result = getattr(ufunc, method)(*(_unwrap(x) for x in inputs), **kwargs)
        return Tensor._make(result) if isinstance(result, np.ndarray) else result

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __repr__(self) -> str:
        body = printing.array_text(self.array, prefix="tensor(")  # (torch.set_printoptions: printing.py)
        extras = []
        if self.dtype != np.float32 and self.dtype.kind == "f":
            extras.append(f"dtype={self.dtype}")
        if self._grad_fn is not None:
            extras.append(f"grad_fn=<{self._grad_fn.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        if self.name:
            extras.append(f"name={self.name!r}")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    def __bool__(self) -> bool:
        if self.array.size != 1:
            raise RuntimeError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self.array)

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product ``self @ other`` (1-D, 2-D and batched, batch dims broadcast)."""
        return MatMul.apply(self, other)

    # -- comparisons: bool tensors, no gradient --------------------------------

    def _compare(self, other: Tensor | Scalar | np.ndarray, ufunc: np.ufunc) -> Tensor:
        return Tensor._make(ufunc(self.array, _unwrap(other)))

    def __lt__(self, other: Tensor | Scalar) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Tensor | Scalar) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Tensor | Scalar) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Tensor | Scalar) -> Tensor:
        return self._compare(other, np.greater_equal)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)  # type: ignore[arg-type]

    # -- elementwise functions (ops/elementwise.py) ----------------------------

    def exp(self) -> Tensor:
        """``e ** self``."""
        return Exp.apply(self)

    def log(self) -> Tensor:
        """Natural logarithm."""
        return Log.apply(self)

    def sqrt(self) -> Tensor:
        """Square root."""
        return Sqrt.apply(self)

    def tanh(self) -> Tensor:
        """Hyperbolic tangent."""
        return Tanh.apply(self)

    def relu(self) -> Tensor:
        """``max(self, 0)``."""
        return ReLUFn.apply(self)

    def sigmoid(self) -> Tensor:
        """``1 / (1 + exp(-self))``."""
        return Sigmoid.apply(self)

    def abs(self) -> Tensor:
        """Absolute value."""
        return Abs.apply(self)

    def masked_fill(self, mask: Tensor | np.ndarray, value: Scalar) -> Tensor:
        """``value`` where ``mask`` (bool, broadcastable to self) is True, else self."""
        return MaskedFill.apply(self, mask, value=value)

    # -- reductions (ops/reduction.py) -----------------------------------------

    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        """Sum over ``dim`` (an int, a tuple, or None for all); NumPy's ``axis=``/``keepdims=`` too, as torch."""
        if numpy_names:
            dim, keepdim = _numpy_names("sum", dim, keepdim, numpy_names)
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        """Mean over ``dim`` (an int, a tuple, or None for all); NumPy's ``axis=``/``keepdims=`` too, as torch."""
        if numpy_names:
            dim, keepdim = _numpy_names("mean", dim, keepdim, numpy_names)
        return Mean.apply(self, dim=dim, keepdim=keepdim)

    def amax(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """Maximum over ``dim``; ties share the gradient equally (as torch)."""
        return Amax.apply(self, dim=dim, keepdim=keepdim)

    def amin(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        """Minimum over ``dim``; ties share the gradient equally (as torch): ``-amax(-x)``."""
        return -Amax.apply(-self, dim=dim, keepdim=keepdim)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The largest element; with ``dim``, ``(values, indices)`` along it (the gradient goes to the index)."""
        if dim is None:
            return self.amax()
        return self._extreme("max", np.argmax, dim, keepdim)

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The smallest element; with ``dim``, ``(values, indices)`` along it (the gradient goes to the index)."""
        if dim is None:
            return self.amin()
        return self._extreme("min", np.argmin, dim, keepdim)

    def _extreme(self, op: str, arg: Any, dim: int, keepdim: bool) -> MinMax:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__} (for two tensors use ta.where)")
        d = normalize_dim(op, dim, self.ndim)
        if self.ndim and self.shape[d] == 0:
            raise IndexError(f"{op}: cannot take the {op} of an empty dim {dim} of shape {self.shape}")
        index = np.expand_dims(arg(self.array, axis=d), d) if self.ndim else np.array(0)  # (0-d: the one element)
        values = TakeAlong.apply(self, index=index, dim=d)
        if not keepdim and self.ndim:
            values, index = values.squeeze(d), np.squeeze(index, d)
        return MinMax(values, Tensor._make(index.astype(np.int64)))

    def var(
        self,
        dim: int | Sequence[int] | None = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Tensor:
        """Variance over ``dim`` with ``correction`` (default 1, Bessel's; ``unbiased=False`` is 0), as torch."""
        if unbiased is not None and correction is not None:
            raise ValueError("var: give unbiased or correction, not both")
        if correction is None:
            correction = 0 if unbiased is False else 1
        return Var.apply(self, dim=dim, keepdim=keepdim, correction=correction)

    def std(
        self,
        dim: int | Sequence[int] | None = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Tensor:
        """Standard deviation: ``sqrt(var(...))`` with the same arguments."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    # -- shape ops (ops/shape.py) ----------------------------------------------

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """Same data, new shape; one entry may be -1."""
        return view_op(Reshape, self, shape=_shape_arg(shape))

    def view(self, *shape: int | Sequence[int]) -> Tensor:
        """Alias of ``reshape`` (NumPy decides whether a copy is needed)."""
        return view_op(Reshape, self, shape=_shape_arg(shape), op="view")

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` into one; with one dim to merge, the tensor itself (as torch)."""
        shape = _flat_shape(self.shape, start_dim, end_dim)
        return self if shape == self.shape else view_op(Reshape, self, shape=shape)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Swap two dims (of a 0-d tensor, dims 0 and -1 are the same one: nothing moves)."""
        if self.array.ndim == 0:
            normalize_dim("transpose", dim0, 0), normalize_dim("transpose", dim1, 0)
            return view_op(Reshape, self, shape=())
        return view_op(Transpose, self, dim0=dim0, dim1=dim1)

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        """Alias of ``transpose`` (torch's, and NumPy's name)."""
        return self.transpose(axis0, axis1)

    def permute(self, *dims: int | Sequence[int]) -> Tensor:
        """Reorder the dims: output dim i is input dim ``dims[i]``."""
        return view_op(Permute, self, dims=_shape_arg(dims))

    @property
    def T(self) -> Tensor:
        """Transpose of a 2-D tensor."""
        if self.ndim != 2:
            raise ValueError(f"T: expected a 2-D tensor, got shape {self.shape}")
        return view_op(Transpose, self, dim0=0, dim1=1)

    def unsqueeze(self, dim: int) -> Tensor:
        """Insert a dim of size 1 at ``dim``."""
        return view_op(Unsqueeze, self, dim=dim)

    def squeeze(self, dim: int | None = None) -> Tensor:
        """Remove dims of size 1 (only ``dim`` if given)."""
        return view_op(Squeeze, self, dim=dim)

    def expand(self, *sizes: int | Sequence[int]) -> Tensor:
        """Broadcast to ``sizes`` (-1 keeps a dim)."""
        return view_op(Expand, self, sizes=_shape_arg(sizes))

    def __getitem__(self, index: Any) -> Tensor:
        return view_op(GetItem, self, index=index if type(index) is slice else _plain_index(index))  # (x[:E]: as it is)

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes; each a slice."""
        if self.ndim == 0:
            raise ValueError("split: expects a tensor with at least one dim, got a 0-d tensor")
        d = normalize_dim("split", dim, self.ndim)
        length = self.shape[d]
        if isinstance(split_size_or_sections, (int, np.integer)):
            if split_size_or_sections <= 0:
                raise ValueError(f"split: split_size must be positive, got {split_size_or_sections}")
            step = int(split_size_or_sections)
            bounds = [(s, s + step) for s in range(0, max(length, 1), step)]  # an empty dim: one empty piece
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != length:
                raise ValueError(f"split: sizes {tuple(sizes)} do not sum to {length}, "
                                 f"the length of dim {dim} of {self.shape}")
            ends = list(itertools.accumulate(sizes))
            bounds = list(zip([0, *ends[:-1]], ends))
        return tuple(self[(slice(None),) * d + (slice(start, end),)] for start, end in bounds)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """``chunks`` pieces of size ``ceil(length / chunks)`` along ``dim`` (the last may be smaller)."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        if self.ndim == 0:
            raise ValueError("chunk: expects a tensor with at least one dim, got a 0-d tensor")
        length = self.shape[normalize_dim("chunk", dim, self.ndim)]
        return self.split(max(-(-length // chunks), 1), dim)

    # -- softmax family (ops/softmax.py) ---------------------------------------

    def softmax(self, dim: int) -> Tensor:
        """``exp(x) / sum(exp(x), dim)``, computed stably."""
        return Softmax.apply(self, dim=dim)

    def log_softmax(self, dim: int) -> Tensor:
        """``x - logsumexp(x, dim)``, computed stably."""
        return LogSoftmax.apply(self, dim=dim)


def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """Accept both ``t.reshape(2, 3)`` and ``t.reshape((2, 3))``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _flat_shape(shape: tuple[int, ...], start_dim: int, end_dim: int) -> tuple[int, ...]:
    if len(shape) == 0:
        return (1,)
    start = normalize_dim("flatten", start_dim, len(shape))
    end = normalize_dim("flatten", end_dim, len(shape))
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return shape[:start] + (int(np.prod(shape[start : end + 1])),) + shape[end + 1 :]


def _numpy_names(op: str, dim: Any, keepdim: bool, names: dict[str, Any]) -> tuple[Any, bool]:
    """torch's aliases ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``; any other keyword is refused."""
    unknown = set(names) - {"axis", "keepdims"}
    if unknown:
        raise TypeError(f"{op}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    return names.get("axis", dim), names.get("keepdims", keepdim)


def _unwrap(x: Any) -> Any:
    """A tensor's array, or ``x`` itself (an ndarray's own ``.array`` is a memoryview, not what we want)."""
    return x.array if isinstance(x, Tensor) else x


def where(condition: Tensor | np.ndarray, input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input`` where ``condition`` is True, else ``other`` (all three broadcast)."""
    return Where.apply(condition, input, other)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim."""
    return Cat.apply(*tensors, dim=dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    return Stack.apply(*tensors, dim=dim)


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``tensor.split(...)``: cut ``tensor`` along ``dim`` into pieces."""
    return tensor.split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.chunk(...)``: ``chunks`` pieces of (nearly) equal size."""
    return input.chunk(chunks, dim)


# NumPy ufuncs that are tinyattn ops: np.exp(t) is t.exp(), and ndarray + Tensor is Add
_UFUNC_OPS = {
    np.add: Add, np.subtract: Sub, np.multiply: Mul, np.true_divide: Div,
    np.power: Pow, np.negative: Neg, np.exp: Exp, np.log: Log, np.sqrt: Sqrt,
    np.tanh: Tanh, np.absolute: Abs, np.matmul: MatMul, np.sin: Sin, np.cos: Cos,
}
# ...and those whose result is piecewise constant (a zero derivative): computed on the arrays, outside the graph
_COMPARISONS = {np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal, np.sign}


def elementwise_method(op: Any) -> Any:
    """``x.exp()``: the method of an elementwise op that names itself (``core/ops/elementwise.py``)."""

    def method(self: Tensor) -> Tensor:
        return op.apply(self)

    method.__name__ = op.name
    method.__qualname__ = f"Tensor.{op.name}"
    method.__doc__ = op.__doc__.split(";")[0].strip() + " (" + op.__name__ + ", core/ops/elementwise.py)."
    return method


# Every elementwise op that names itself is a method: those written out above (with their own docstring), and
# the rest made from the op (adding one to core/ops/elementwise.py is all it takes)
for _op in named_ops():
    if not hasattr(Tensor, _op.name):
        setattr(Tensor, _op.name, elementwise_method(_op))
