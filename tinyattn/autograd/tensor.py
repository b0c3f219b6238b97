"""``Tensor``: the tensor users get, the core's tensor (``core/tensor.py``) with torch's methods and mechanisms.

**Where a method lives.** A method the chapter's multi-head attention calls (``core/attention.py``) is in
``core/tensor.py``, one op each, and this class adds to it only what torch adds (a view's shared memory, ``dim``
spelled ``axis``...). Every other method is here, in the section of its kind below. A one-input elementwise op
that names itself (``core/ops/elementwise.py``: ``name = "sinh"``) needs no method: ``x.sinh()`` is made from
the op, at the end of this file.

The core's ``Tensor`` holds the array, the gradient, the node that made it and ``backward``, its arithmetic
operators and the chapter's methods. This class adds, above it:

* torch's methods, each a line that applies a core op, or a composition of them that says so in its docstring
  (its gradient is then the chain rule through those ops), or a conversion with no gradient (``.long()``);
* torch's ``backward`` arguments (``retain_graph``, ``create_graph``, ``inputs``: ``engine.py``);
* the version counter and views: a tensor made by a view op shares its base's memory and counter, and an
  in-place change moves the counter on, so that a backward that saved the old value refuses (``graph.py``);
* ``retain_grad``, hooks, ``detach``, ``.data``, the legacy constructor, printing and NumPy interoperation.

Its nodes are ``graph.py``'s (``node_class``, ``leaf_class``), and the last step of every op on its tensors,
``op_result``, gives the result its forward-mode tangent inside a dual level (``tangents.py``).
"""

from __future__ import annotations

import builtins
import itertools
import math
import weakref
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np

from . import engine, hooks, pickling, printing, tangents, views
from .arrays import ArrayLike, _rng, _size, multinomial_indices, to_array
from .core import (
    dtypes,  # dtypes.DEFAULT_FLOAT: read at each call (set_default_dtype)
    grad_mode,
)
from .core import tensor as core
from .core.checks import normalize_dim, normalize_dims
from .core.dtypes import as_dtype
from .core.function import Function, Node, TensorBase
from .core.grad_mode import is_grad_enabled
from .core.ops.elementwise import (
    Abs,
    Add,
    Cast,
    Clamp,
    Clone,
    Copy,
    Cos,
    Div,
    Erf,
    Exp,
    Expm1,
    Log,
    Log1p,
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
from .core.ops.matmul import Einsum, MatMul
from .core.ops.reduction import Amax, Mean, Norm, Sum, TakeAlong, Var
from .core.ops.shape import (
    Cat,
    Expand,
    Gather,
    GetItem,
    Permute,
    Reshape,
    SetItem,
    Squeeze,
    Stack,
    Transpose,
    Triangle,
    Unsqueeze,
    gather_index,
)
from .core.ops.softmax import LogSoftmax, Softmax
from .devices import CPU, check_device, device
from .graph import GraphLeaf, GraphNode

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


class MinMax(NamedTuple):
    """What ``max(dim)`` and ``min(dim)`` return, as torch: ``values`` (differentiable) and ``indices``."""

    values: Tensor
    indices: Tensor


def _plain_index(index: Any) -> Any:
    """Replace tensors inside an index by their arrays (the op sees arrays only); an index of ints ends in
    ``...``, so that one element is a 0-d view of the tensor's memory, as torch's (NumPy would copy it out)."""
    if isinstance(index, tuple):
        return tuple(i if type(i) is int else _plain_index(i) for i in index) + (
            (Ellipsis,) if int in map(type, index) and set(map(type, index)) == {int} else ())
    if isinstance(index, TensorBase):
        return index.array
    if isinstance(index, list):
        array = np.asarray(index)
        return array.astype(np.int64) if array.size == 0 else array  # x[[]]: an empty integer index, as torch
    return (index, Ellipsis) if type(index) is int else index


def _array(x: Any) -> Any:
    return x.array if hasattr(x, "gradient_edge") else x


def _dtype_kind(x: Any) -> str:
    """NumPy's kind letter of a tensor's, an array's or a Python number's dtype."""
    return np.asarray(_array(x)).dtype.kind


def _from_array(array: np.ndarray, like: Tensor) -> Tensor:
    """A new tensor of ``like``'s class holding ``array`` (no graph: its values come from a step without a
    derivative)."""
    return type(like)._make(np.asarray(array))


def _as_tensor(value: Any, like: Tensor) -> Tensor:
    """``value`` (a number, an array) as a tensor of ``like``'s kind, for the reflected operators."""
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    if array.dtype.kind in "iubf" and like.dtype.kind == "f":
        array = array.astype(like.dtype)
    return type(like)._make(array)


def to_arguments(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[np.dtype | None, bool]:
    """torch's ``to(...)`` forms read as ``(dtype or None, copy)``; the device is checked (the CPU only).

    ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``, each with ``non_blocking``,
    ``copy`` (and ``memory_format``) as keywords.
    """
    unknown = set(kwargs) - {"device", "dtype", "copy", "non_blocking", "memory_format"}
    if unknown:
        raise TypeError(f"{op}: unexpected keyword argument {sorted(unknown)[0]!r}")
    where, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if hasattr(a, "gradient_edge"):  # to(other): other's dtype (and device)
            dtype = a.dtype
        elif isinstance(a, (str, device)) or (isinstance(a, int) and not isinstance(a, bool)):
            where = a
        elif a is not None and not isinstance(a, bool):  # (a bool is non_blocking: nothing to do on the CPU)
            dtype = a
    check_device(op, where)
    return (None if dtype is None else as_dtype(dtype)), bool(kwargs.get("copy", False))


NO_SPARSE = ("sparse tensors are not supported in tinyattn: every tensor is a dense NumPy array (keep the dense "
             "tensor; its values and gradients are the same)")
NO_COMPLEX = ("complex tensors are not supported in tinyattn: every tensor is real (keep the real and imaginary parts "
              "as two real tensors, or a trailing dim of 2)")

def _value(x: Any) -> Any:
    return x.array if hasattr(x, "gradient_edge") else x



class Tensor(core.Tensor):
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
    def _version(self) -> builtins.int:
        """torch's version counter: bumped by every in-place change of this memory, one counter for a base and
        all its views. A backward whose forward saved the value refuses once it has moved on (``graph.py``)."""
        return self.memory_owner()._changes

    @_version.setter
    def _version(self, value: builtins.int) -> None:
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
    def retains_grad(self) -> builtins.bool:
        """True if ``retain_grad()`` was called on this non-leaf tensor."""
        node = self._grad_fn
        return node is not None and node.retained is not None and node.retained() is self

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
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
        retain_graph: builtins.bool | None = None,
        create_graph: builtins.bool = False,
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

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
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

    def __len__(self) -> builtins.int:
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

    def __bool__(self) -> builtins.bool:
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

    def sum(self, dim: builtins.int | Sequence[builtins.int] | None = None, keepdim: builtins.bool = False,
            **numpy_names: Any) -> Tensor:
        """Sum over ``dim`` (an int, a tuple, or None for all); NumPy's ``axis=``/``keepdims=`` too, as torch."""
        if numpy_names:
            dim, keepdim = _numpy_names("sum", dim, keepdim, numpy_names)
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self, dim: builtins.int | Sequence[builtins.int] | None = None, keepdim: builtins.bool = False,
             **numpy_names: Any) -> Tensor:
        """Mean over ``dim`` (an int, a tuple, or None for all); NumPy's ``axis=``/``keepdims=`` too, as torch."""
        if numpy_names:
            dim, keepdim = _numpy_names("mean", dim, keepdim, numpy_names)
        return Mean.apply(self, dim=dim, keepdim=keepdim)

    def amax(self, dim: builtins.int | Sequence[builtins.int] | None = None, keepdim: builtins.bool = False) -> Tensor:
        """Maximum over ``dim``; ties share the gradient equally (as torch)."""
        return Amax.apply(self, dim=dim, keepdim=keepdim)

    def amin(self, dim: builtins.int | Sequence[builtins.int] | None = None, keepdim: builtins.bool = False) -> Tensor:
        """Minimum over ``dim``; ties share the gradient equally (as torch): ``-amax(-x)``."""
        return -Amax.apply(-self, dim=dim, keepdim=keepdim)

    def max(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The largest element; with ``dim``, ``(values, indices)`` along it (the gradient goes to the index)."""
        if dim is None:
            return self.amax()
        return self._extreme("max", np.argmax, dim, keepdim)

    def min(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The smallest element; with ``dim``, ``(values, indices)`` along it (the gradient goes to the index)."""
        if dim is None:
            return self.amin()
        return self._extreme("min", np.argmin, dim, keepdim)

    def _extreme(self, op: str, arg: Any, dim: builtins.int, keepdim: builtins.bool) -> MinMax:
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
        dim: builtins.int | Sequence[builtins.int] | None = None,
        unbiased: builtins.bool | None = None,
        keepdim: builtins.bool = False,
        *,
        correction: builtins.int | None = None,
    ) -> Tensor:
        """Variance over ``dim`` with ``correction`` (default 1, Bessel's; ``unbiased=False`` is 0), as torch."""
        if unbiased is not None and correction is not None:
            raise ValueError("var: give unbiased or correction, not both")
        if correction is None:
            correction = 0 if unbiased is False else 1
        return Var.apply(self, dim=dim, keepdim=keepdim, correction=correction)

    def std(
        self,
        dim: builtins.int | Sequence[builtins.int] | None = None,
        unbiased: builtins.bool | None = None,
        keepdim: builtins.bool = False,
        *,
        correction: builtins.int | None = None,
    ) -> Tensor:
        """Standard deviation: ``sqrt(var(...))`` with the same arguments."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    # -- shape ops (ops/shape.py) ----------------------------------------------

    def reshape(self, *shape: builtins.int | Sequence[builtins.int]) -> Tensor:
        """Same data, new shape; one entry may be -1."""
        return view_op(Reshape, self, shape=_shape_arg(shape))

    def view(self, *shape: builtins.int | Sequence[builtins.int]) -> Tensor:
        """Alias of ``reshape`` (NumPy decides whether a copy is needed)."""
        return view_op(Reshape, self, shape=_shape_arg(shape), op="view")

    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` into one; with one dim to merge, the tensor itself (as torch)."""
        shape = _flat_shape(self.shape, start_dim, end_dim)
        return self if shape == self.shape else view_op(Reshape, self, shape=shape)

    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        """Swap two dims (of a 0-d tensor, dims 0 and -1 are the same one: nothing moves)."""
        if self.array.ndim == 0:
            normalize_dim("transpose", dim0, 0), normalize_dim("transpose", dim1, 0)
            return view_op(Reshape, self, shape=())
        return view_op(Transpose, self, dim0=dim0, dim1=dim1)

    def swapaxes(self, axis0: builtins.int, axis1: builtins.int) -> Tensor:
        """Alias of ``transpose`` (torch's, and NumPy's name)."""
        return self.transpose(axis0, axis1)

    def permute(self, *dims: builtins.int | Sequence[builtins.int]) -> Tensor:
        """Reorder the dims: output dim i is input dim ``dims[i]``."""
        return view_op(Permute, self, dims=_shape_arg(dims))

    @property
    def T(self) -> Tensor:
        """Transpose of a 2-D tensor."""
        if self.ndim != 2:
            raise ValueError(f"T: expected a 2-D tensor, got shape {self.shape}")
        return view_op(Transpose, self, dim0=0, dim1=1)

    def unsqueeze(self, dim: builtins.int) -> Tensor:
        """Insert a dim of size 1 at ``dim``."""
        return view_op(Unsqueeze, self, dim=dim)

    def squeeze(self, dim: builtins.int | None = None) -> Tensor:
        """Remove dims of size 1 (only ``dim`` if given)."""
        return view_op(Squeeze, self, dim=dim)

    def expand(self, *sizes: builtins.int | Sequence[builtins.int]) -> Tensor:
        """Broadcast to ``sizes`` (-1 keeps a dim)."""
        return view_op(Expand, self, sizes=_shape_arg(sizes))

    def __getitem__(self, index: Any) -> Tensor:
        return view_op(GetItem, self, index=index if type(index) is slice else _plain_index(index))  # (x[:E]: as it is)

    def split(self, split_size_or_sections: builtins.int | Sequence[builtins.int],
              dim: builtins.int = 0) -> tuple[Tensor, ...]:
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

    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """``chunks`` pieces of size ``ceil(length / chunks)`` along ``dim`` (the last may be smaller)."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        if self.ndim == 0:
            raise ValueError("chunk: expects a tensor with at least one dim, got a 0-d tensor")
        length = self.shape[normalize_dim("chunk", dim, self.ndim)]
        return self.split(max(-(-length // chunks), 1), dim)

    # -- softmax family (ops/softmax.py) ---------------------------------------

    def softmax(self, dim: builtins.int) -> Tensor:
        """``exp(x) / sum(exp(x), dim)``, computed stably."""
        return Softmax.apply(self, dim=dim)

    def log_softmax(self, dim: builtins.int) -> Tensor:
        """``x - logsumexp(x, dim)``, computed stably."""
        return LogSoftmax.apply(self, dim=dim)

    # == torch's everyday methods: comparisons, copies, in-place changes, devices and dtypes, sizes... ==

    """torch's Tensor methods around the core: ``to``, ``device``, ``long()``, ``t()``, ``sin``, ``topk``..."""

    # -- comparisons, remainders and selections by name (compositions of the core's ops) -----------

    def eq(self: Tensor, other: Any) -> Tensor:
        """``self == other``, element by element (a bool tensor)."""
        return self == other

    def ne(self: Tensor, other: Any) -> Tensor:
        """``self != other``, element by element (a bool tensor)."""
        return self != other

    def __abs__(self: Tensor) -> Tensor:
        return self.abs()

    def rsqrt(self: Tensor) -> Tensor:
        """``1 / sqrt(self)``: a composition, so its gradient is ``-1/2 self^(-3/2)`` by the chain rule."""
        return 1 / self.sqrt()

    def remainder(self: Tensor, divisor: Any) -> Tensor:
        """``self - divisor * floor(self / divisor)`` (Python's ``%``: the sign of ``divisor``).

        A composition: ``floor`` is piecewise constant, so the gradient is ``1`` for ``self`` and
        ``-floor(self / divisor)`` for ``divisor``, as torch's."""
        if self.dtype.kind in "iub" and _dtype_kind(divisor) in "iub":
            return _from_array(np.remainder(self.array, _array(divisor)), self)
        quotient = self / divisor
        return self - _from_array(np.floor(quotient.array), self) * divisor

    def __mod__(self: Tensor, other: Any) -> Tensor:
        return self.remainder(other)

    def __rmod__(self: Tensor, other: Any) -> Tensor:
        return _as_tensor(other, self).remainder(self)

    def floor_divide(self: Tensor, value: Any) -> Tensor:
        """``floor(self / value)`` (Python's ``//``); not differentiable (torch's backward refuses it)."""
        if self.dtype.kind in "iub" and _dtype_kind(value) in "iub":
            return _from_array(np.floor_divide(self.array, _array(value)), self)
        with grad_mode.no_grad():
            return _from_array(np.floor((self / value).array), self)

    def __floordiv__(self: Tensor, other: Any) -> Tensor:
        return self.floor_divide(other)

    def __rfloordiv__(self: Tensor, other: Any) -> Tensor:
        return _as_tensor(other, self).floor_divide(self)

    def mm(self: Tensor, mat2: Tensor) -> Tensor:
        """``self @ mat2`` for two matrices (``matmul`` without broadcasting), with torch's refusals."""
        if self.ndim != 2:
            raise RuntimeError("self must be a matrix")
        if getattr(mat2, "ndim", None) != 2:
            raise RuntimeError("mat2 must be a matrix")
        if self.shape[1] != mat2.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} and "
                               f"{mat2.shape[0]}x{mat2.shape[1]})")
        return self @ mat2

    def narrow(self: Tensor, dimension: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """``length`` entries of ``dimension`` from ``start`` (a slice: the gradient lands back in them)."""
        d = normalize_dim("narrow", dimension, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not 0 <= start <= size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
        if length < 0 or start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def select(self: Tensor, dim: builtins.int, index: builtins.int) -> Tensor:
        """``self[..., index, ...]`` at ``dim``, that dim removed (a view)."""
        d = normalize_dim("select", dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexError(f"select(): index {index} out of range for tensor of size {tuple(self.shape)} at "
                             f"dimension {dim}")
        return self[(slice(None),) * d + (index,)]

    def masked_select(self: Tensor, mask: Any) -> Tensor:
        """The entries where ``mask`` (broadcast against ``self``) is True, in a 1-d tensor."""
        m = np.asarray(_array(mask))
        if m.dtype != np.bool_:
            raise RuntimeError(f"masked_select: expected BoolTensor for mask, got dtype {m.dtype}")
        try:
            shape = np.broadcast_shapes(self.shape, m.shape)
        except ValueError:
            raise RuntimeError(f"masked_select: the mask's shape {tuple(m.shape)} does not broadcast with "
                               f"the input's {tuple(self.shape)}") from None
        return self.expand(*shape)[np.broadcast_to(m, shape)]

    def nonzero(self: Tensor, *, as_tuple: builtins.bool = False) -> Any:
        """The indices of the nonzero entries: ``(count, ndim)`` int64, or one 1-d tensor per dim."""
        found = np.nonzero(self.array if self.ndim else self.array.reshape(1))
        if as_tuple:
            return tuple(_from_array(i.astype(np.int64), self) for i in found)
        return _from_array(np.stack(found, axis=1)[:, :self.ndim].astype(np.int64), self)  # (a 0-d tensor: (count, 0))

    def bincount(self: Tensor, weights: Any = None, minlength: builtins.int = 0) -> Tensor:
        """How often each value ``0..max`` occurs (or the sum of ``weights`` at it); a 1-d tensor."""
        if self.dtype.kind not in "iu":  # (torch's kernel exists for integers only: "torch.FloatTensor" -> 'Float')
            raise NotImplementedError(f'"bincount_cpu" not implemented for \'{_TYPE_NAMES[self.dtype][6:-6]}\'')
        if self.ndim != 1 or (self.array.size and self.array.min() < 0):
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        w = None if weights is None else np.asarray(_array(weights))
        if w is not None and w.shape != self.shape:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        counts = np.bincount(self.array, weights=w, minlength=minlength)
        kind = w.dtype if w is not None and w.dtype.kind == "f" else np.float64 if w is not None else np.int64
        return _from_array(counts.astype(kind), self)

    # -- copies and pickles (pickling.py): the values and requires_grad, never the graph ---------

    def __deepcopy__(self: Tensor, memo: dict[builtins.int, Any]) -> Tensor:
        return pickling.deepcopy(self, memo)

    def __reduce_ex__(self: Tensor, protocol: Any) -> tuple[Any, ...]:
        return pickling.reduce(self)

    # -- in place: torch's trailing underscore, x[i] = v, and += -= *= /= ----------------------

    def _in_place(self: Tensor, op: str, fn: Any, *args: Any, **kwargs: Any) -> Tensor:
        """Make ``fn(self, *args)`` this tensor's value, as torch's in-place ops do; return the tensor.

        Outside a graph (grad mode off, or nothing involved requires grad) the result is written into
        this tensor's memory, so every view and ``.data`` of it sees the change. Inside one, the op is
        recorded: it becomes this tensor's ``grad_fn`` (torch's "rebase"), and its backward is the op's
        formula; a view's base gets the change and a new history too (``views.py``). Either way the version
        counter moves on, so a backward that saved the old value refuses.
        A leaf that requires grad is refused (unless grad mode is off, as in an optimizer's step).
        """
        in_graph = grad_mode._grad_enabled and (self._requires_grad or any(
            getattr(a, "_requires_grad", False) for a in args))
        if in_graph and self._requires_grad and self._grad_fn is None:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation "
                               "(wrap it in `with ta.no_grad():`, as optimizers do)")
        if self._base is not None and any(getattr(t, "_fw_tangent", None) is not None  # (forward mode's tangents)
                                          for t in (self, self._base, *args)):
            raise RuntimeError(f"{op}: an in-place change to a view, with forward-mode tangents, is not supported "
                               "here; change a clone() of the view instead")
        if in_graph and self._base is not None:  # a view: its base's history is rewritten (views.py)
            return self._change_view_in_place(op, fn, args, kwargs)
        result = fn.apply(self, *args, **kwargs)
        if not np.can_cast(result.dtype, self.dtype, casting="same_kind"):  # (copies and fills cast: always can)
            raise RuntimeError(f"{op}: result type {result.dtype} can't be cast to the desired output type "
                               f"{self.dtype}")
        for t in (self, self._base):  # the op that made this memory's owner (a view's or detach()'s base) and this
            if t is not None and t._grad_fn is not None:  # tensor's own: if either saved its output, it now refuses
                t._grad_fn.output_changed(t.array)
        self._version += 1  # (a view's: its base's, which changed with it)
        if in_graph:
            node = result._grad_fn
            # what the op saved of this tensor is its old array, which no later change touches: saved from now on
            # as a tensor of its own, with the old history (which a backward recorded as ops computes on)
            if node is not None and any(t is self for t, _ in node.saved_versions):
                old = type(self)._make(self.array, self._requires_grad)
                old._grad_fn, old._leaf_node = self._grad_fn, self._leaf_node
                node.saved_versions = [(old, 0) if t is self else (t, v) for t, v in node.saved_versions]
            if result.dtype != self.dtype:
                result = Cast.apply(result, dtype=self.dtype)
            self.array, self._grad_fn, self._requires_grad = result.array, result._grad_fn, True
        else:
            self.array[...] = result.array
        self._fw_tangent = result._fw_tangent  # (forward mode, inside a dual level: the new value's tangent)
        return self

    def _change_view_in_place(self: Tensor, op: str, fn: Any, args: tuple, kwargs: dict) -> Tensor:
        views.change_in_place(self, op, fn, args, kwargs)
        self._version += 1
        return self

    def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self += alpha * other``, in place."""
        return self._in_place("add_", Add, other if alpha == 1 else other * alpha)

    def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self -= alpha * other``, in place."""
        return self._in_place("sub_", Sub, other if alpha == 1 else other * alpha)

    def mul_(self: Tensor, value: Any) -> Tensor:
        """``self *= value``, in place."""
        return self._in_place("mul_", Mul, value)

    def div_(self: Tensor, value: Any, *, rounding_mode: str | None = None) -> Tensor:
        """``self /= value``, in place (an integer tensor is refused: true division gives floats)."""
        if rounding_mode is not None:
            raise NotImplementedError("div_: rounding_mode is not implemented in place; use ta.div(...)")
        return self._in_place("div_", Div, value)

    def masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
        """``value`` where ``mask`` is True, in place."""
        return self._in_place("masked_fill_", MaskedFill, mask, value=value)

    def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        """Limit each element to ``[min, max]``, in place."""
        return self._in_place("clamp_", Clamp, min=_array(min), max=_array(max))

    def copy_(self: Tensor, src: Any, non_blocking: builtins.bool = False) -> Tensor:
        """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor, in place."""
        return self._in_place("copy_", Copy, src if hasattr(src, "gradient_edge") else np.asarray(src))

    def fill_(self: Tensor, value: Any) -> Tensor:
        """Set every element to ``value``, in place."""
        return self._in_place("fill_", Copy, value)

    def zero_(self: Tensor) -> Tensor:
        """Set every element to 0, in place."""
        return self._in_place("zero_", Copy, 0)

    def uniform_(self: Tensor, *bounds: builtins.float, generator: Any = None, **names: builtins.float) -> Tensor:
        """Fill with samples from the uniform distribution on ``[from, to)`` (default [0, 1)), in place.

        torch's arguments are ``from`` and ``to``; ``from`` is a Python keyword, so they are read from
        ``*bounds`` (``uniform_(-0.1, 0.1)``) or as ``**{"from": a, "to": b}``."""
        low = bounds[0] if len(bounds) > 0 else names.pop("from", 0.0)
        high = bounds[1] if len(bounds) > 1 else names.pop("to", 1.0)
        if len(bounds) > 2 or names:
            raise TypeError(f"uniform_: expected uniform_(from=0, to=1, *, generator=None), got {len(bounds)} "
                            f"positional arguments and {sorted(names)}")
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
        values = _rng("uniform_", generator).uniform(low, high, self.shape)
        return self._in_place("uniform_", Copy, values)

    def normal_(self: Tensor, mean: builtins.float = 0, std: builtins.float = 1, *, generator: Any = None) -> Tensor:
        """Fill with samples from the normal distribution ``N(mean, std**2)``, in place."""
        return self._in_place("normal_", Copy, _rng("normal_", generator).normal(mean, std, self.shape))

    def __setitem__(self: Tensor, index: Any, value: Any) -> None:
        """``x[index] = value`` (basic, advanced and bool-mask indexes): in place; in a graph ``value`` gets
        the gradient of the elements it wrote, the overwritten ones get none."""
        value = value if hasattr(value, "gradient_edge") else np.asarray(value)
        self._in_place("__setitem__", SetItem, value, index=_plain_index(index))

    def __iadd__(self: Tensor, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self: Tensor, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self: Tensor, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self: Tensor, other: Any) -> Tensor:
        return self.div_(other)

    # -- devices and dtypes ------------------------------------------------------

    @property
    def device(self) -> device:
        """Where the tensor lives: always ``device(type='cpu')``."""
        return CPU

    @property
    def is_cuda(self) -> builtins.bool:
        """False: tinyattn runs on the CPU only."""
        return False

    def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """This tensor on a device and/or in a dtype: ``to(dtype)``, ``to(device, dtype)``, ``to(other)``.

        As torch, the tensor itself when nothing would change (and ``copy`` is False). A cast to a float
        dtype is differentiable; to an int or bool dtype the result leaves the graph. Any device but the
        CPU raises.
        """
        dtype, copy = to_arguments("to", args, kwargs)
        if dtype is None or dtype == self.dtype:
            return Clone.apply(self) if copy else self
        if dtype.kind != "f":
            return self._make(self.array.astype(dtype))
        return Cast.apply(self, dtype=dtype)

    def cpu(self: Tensor) -> Tensor:
        """The tensor itself (it is on the CPU); here so ``t.detach().cpu().numpy()`` runs."""
        return self

    def cuda(self: Tensor, device: Any = None, non_blocking: builtins.bool = False) -> Tensor:
        """Refused: there is no CUDA device (the error a torch built without CUDA raises)."""
        check_device("cuda", "cuda" if device is None else device)
        return self

    def type(self: Tensor, dtype: Any = None, non_blocking: builtins.bool = False) -> Any:
        """With no argument, the type's name (``"torch.FloatTensor"``, as torch); else ``to(dtype)``."""
        if dtype is None:
            return _TYPE_NAMES.get(np.dtype(self.dtype), f"tinyattn.{self.dtype}")
        dtype = getattr(dtype, "legacy_dtype", dtype)  # torch.FloatTensor and its kin stand for their dtype
        if isinstance(dtype, str):
            names = {v: k for k, v in _TYPE_NAMES.items()}
            if dtype not in names:
                raise TypeError(f"type: invalid type {dtype!r}")
            dtype = names[dtype]
        return self.to(dtype)

    def type_as(self: Tensor, tensor: Tensor) -> Tensor:
        """Cast to ``tensor``'s dtype."""
        return self.to(tensor.dtype)

    def double(self: Tensor) -> Tensor:
        """Cast to float64."""
        return self.to(np.float64)

    def float(self: Tensor) -> Tensor:
        """Cast to float32."""
        return self.to(np.float32)

    def half(self: Tensor) -> Tensor:
        """Cast to float16."""
        return self.to(np.float16)

    def long(self: Tensor) -> Tensor:
        """Cast to int64 (no gradient flows through)."""
        return self.to(np.int64)

    def int(self: Tensor) -> Tensor:
        """Cast to int32 (no gradient flows through)."""
        return self.to(np.int32)

    def short(self: Tensor) -> Tensor:
        """Cast to int16 (no gradient flows through)."""
        return self.to(np.int16)

    def byte(self: Tensor) -> Tensor:
        """Cast to uint8 (no gradient flows through)."""
        return self.to(np.uint8)

    def bool(self: Tensor) -> Tensor:
        """Cast to bool: True where nonzero (no gradient flows through)."""
        return self.to(np.bool_)

    def is_complex(self: Tensor) -> builtins.bool:
        """False: tinyattn has no complex tensors."""
        return False

    @property
    def is_sparse(self: Tensor) -> builtins.bool:
        """False: tinyattn's tensors are all dense."""
        return False

    def to_sparse(self: Tensor, sparseDims: Any = None) -> Tensor:  # noqa: N803  (torch's name)
        """Refused: tinyattn has no sparse tensors (``NO_SPARSE``)."""
        raise NotImplementedError(NO_SPARSE)

    def to_sparse_csr(self: Tensor, dense_dim: Any = None) -> Tensor:
        """Refused: tinyattn has no sparse tensors (``NO_SPARSE``)."""
        raise NotImplementedError(NO_SPARSE)

    def is_floating_point(self: Tensor) -> builtins.bool:
        """True for a float dtype."""
        return builtins.bool(self.dtype.kind == "f")

    def contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
        """The tensor itself (tinyattn has no strides to fix); here so torch code runs unchanged."""
        return self

    # -- sizes ---------------------------------------------------------------------

    def dim(self: Tensor) -> builtins.int:
        """The number of dimensions (torch's spelling of ``ndim``)."""
        return self.array.ndim

    def ndimension(self: Tensor) -> builtins.int:
        """The number of dimensions."""
        return self.array.ndim

    def size(self: Tensor, dim: builtins.int | None = None) -> Any:
        """The shape (a ``torch.Size``), or the length along ``dim``."""
        if dim is None:
            return printing.Size(self.array.shape)
        return self.array.shape[normalize_dim("size", dim, self.ndim)]

    def numel(self: Tensor) -> builtins.int:
        """The number of elements."""
        return builtins.int(self.array.size)

    def nelement(self: Tensor) -> builtins.int:
        """The number of elements (``numel``)."""
        return builtins.int(self.array.size)

    def element_size(self: Tensor) -> builtins.int:
        """Bytes per element."""
        return builtins.int(self.array.itemsize)

    # -- Python protocols ------------------------------------------------------------

    def __format__(self: Tensor, spec: str) -> str:
        """``f"{loss:.4f}"`` formats a one-element tensor's value, as torch; otherwise ``str(self)``."""
        if self.array.size == 1 and self.ndim == 0:
            return format(self.array.item(), spec)
        return format(str(self), spec)

    def __index__(self: Tensor) -> builtins.int:
        """A one-element integer tensor as an index (``range(n)``, ``list[t]``)."""
        if self.array.size != 1 or self.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors of a single element can be converted to an index "
                            f"(got dtype {self.dtype}, shape {self.shape})")
        return builtins.int(self.array.item())

    def __int__(self: Tensor) -> builtins.int:
        return builtins.int(self.item())

    def __float__(self: Tensor) -> builtins.float:
        return builtins.float(self.item())

    def __iter__(self: Tensor) -> Iterator[Tensor]:
        """The slices along dim 0, each differentiable (``for row in x``)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # -- logical and bitwise (bool and integer tensors; no gradient) -----------------

    def _logical(self: Tensor, other: Any, ufunc: np.ufunc, op: str) -> Tensor:
        for x in (self.array, np.asarray(_array(other))):
            if x.dtype.kind == "f":
                raise TypeError(f"{op}: not supported for floating-point tensors (dtype {x.dtype}); "
                                "compare first (x > 0) or use logical_and")
        return self._make(ufunc(self.array, _array(other)))

    def __invert__(self: Tensor) -> Tensor:
        if self.dtype.kind == "f":
            raise TypeError(f"~: bitwise_not is not supported for floating-point tensors (dtype {self.dtype})")
        return self._make(np.invert(self.array))

    def __and__(self: Tensor, other: Any) -> Tensor:
        return self._logical(other, np.bitwise_and, "&")

    __rand__ = __and__

    def __or__(self: Tensor, other: Any) -> Tensor:
        return self._logical(other, np.bitwise_or, "|")

    __ror__ = __or__

    def __xor__(self: Tensor, other: Any) -> Tensor:
        return self._logical(other, np.bitwise_xor, "^")

    __rxor__ = __xor__

    def logical_not(self: Tensor) -> Tensor:
        """True where the element is zero (False)."""
        return self._make(np.logical_not(self.array))

    def logical_and(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``and`` of the truth values."""
        return self._make(np.logical_and(self.array, _array(other)))

    def logical_or(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``or`` of the truth values."""
        return self._make(np.logical_or(self.array, _array(other)))

    def logical_xor(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``xor`` of the truth values."""
        return self._make(np.logical_xor(self.array, _array(other)))

    def isclose(self: Tensor, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                equal_nan: builtins.bool = False) -> Tensor:
        """Elementwise ``|self - other| <= atol + rtol * |other|``, as a bool tensor."""
        return self._make(np.isclose(self.array, _array(other), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def allclose(self: Tensor, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                 equal_nan: builtins.bool = False) -> builtins.bool:
        """True if every element ``isclose``."""
        return builtins.bool(np.allclose(self.array, _array(other), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def all(self: Tensor, dim: Any = None, keepdim: builtins.bool = False, **numpy: Any) -> Tensor:
        """True where every element (along ``dim``; all of them if None) is nonzero, as a bool tensor.

        ``np.all(t, axis=...)`` calls this with NumPy's names (``axis``, ``keepdims``), which torch accepts too."""
        return self._truth("all", np.all, dim, keepdim, numpy)

    def any(self: Tensor, dim: Any = None, keepdim: builtins.bool = False, **numpy: Any) -> Tensor:
        """True where some element (along ``dim``; any of them if None) is nonzero, as a bool tensor."""
        return self._truth("any", np.any, dim, keepdim, numpy)

    def _truth(self: Tensor, op: str, reduce: Any, dim: Any, keepdim: Any, numpy: dict[str, Any]) -> Tensor:
        dim, keepdim = numpy.pop("axis", dim), numpy.pop("keepdims", keepdim)
        if numpy.pop("out", None) is not None or numpy:
            raise TypeError(f"{op}: unexpected arguments {sorted(numpy) or ['out']}")
        axis = None if dim is None or not self.ndim else normalize_dims(op, dim, self.ndim)
        return self._make(np.asarray(reduce(self.array, axis=axis, keepdims=builtins.bool(keepdim))))

    def equal(self: Tensor, other: Tensor) -> builtins.bool:
        """True if both have the same shape and elements."""
        return builtins.bool(np.array_equal(self.array, _array(other)))

    # -- new tensors like this one ------------------------------------------------------

    def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: builtins.bool = False) -> Tensor:
        """A copy of ``data`` as a tensor of this dtype."""
        check_device("new_tensor", device)
        return self._new(to_array(data, as_dtype(self.dtype if dtype is None else dtype)), requires_grad)

    def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: builtins.bool = False) -> Tensor:
        """Zeros of ``size`` in this dtype."""
        return self._new_filled("new_zeros", size, 0, dtype, device, requires_grad)

    def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        """Ones of ``size`` in this dtype."""
        return self._new_filled("new_ones", size, 1, dtype, device, requires_grad)

    def new_full(self: Tensor, size: Sequence[builtins.int], fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        """``fill_value`` everywhere, of ``size``, in this dtype."""
        if isinstance(fill_value, TensorBase):
            fill_value = fill_value.array.item()
        return self._new_filled("new_full", (size,), fill_value, dtype, device, requires_grad)

    def _new_filled(self: Tensor, op: str, size: tuple[Any, ...], fill: Any, dtype: Any, device: Any,
                    requires_grad: builtins.bool) -> Tensor:
        check_device(op, device)
        array = np.full(_size(op, size), fill, dtype=as_dtype(self.dtype if dtype is None else dtype))
        return self._new(array, requires_grad)

    def _new(self: Tensor, array: np.ndarray, requires_grad: builtins.bool) -> Tensor:
        """A new leaf of this tensor's class holding ``array``."""
        t = type(self)._make(array)
        t.requires_grad = requires_grad  # (refused for int and bool dtypes, as torch)
        return t

    # -- ops: one line each (the op's class has the formula) ---------------------------

    def clone(self: Tensor, *, memory_format: Any = None) -> Tensor:
        """A copy that stays in the graph (the gradient passes through unchanged)."""
        return Clone.apply(self)

    def sin(self: Tensor) -> Tensor:
        """The sine of each element (in radians)."""
        return Sin.apply(self)

    def cos(self: Tensor) -> Tensor:
        """The cosine of each element (in radians)."""
        return Cos.apply(self)

    def erf(self: Tensor) -> Tensor:
        """The error function ``erf(x) = 2/√π ∫₀ˣ exp(-t²) dt`` of each element."""
        return Erf.apply(self)

    def clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        """Each element limited to ``[min, max]`` (either may be None); the gradient passes inside it."""
        for name, bound in (("min", min), ("max", max)):
            if hasattr(bound, "gradient_edge"):
                if bound.requires_grad:
                    raise NotImplementedError(f"clamp: no gradient to a tensor {name} here; pass a number")
                bound = bound.array
        return Clamp.apply(self, min=_array(min), max=_array(max))

    def clip(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        """Alias of ``clamp``."""
        return self.clamp(min, max)

    def tril(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
        """The lower triangle of the last two dims (on and below diagonal ``diagonal``), zeros above."""
        return Triangle.apply(self, upper=False, diagonal=diagonal)

    def triu(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
        """The upper triangle of the last two dims (on and above diagonal ``diagonal``), zeros below."""
        return Triangle.apply(self, upper=True, diagonal=diagonal)

    def gather(self: Tensor, dim: builtins.int, index: Tensor) -> Tensor:
        """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and likewise for any dim), as torch."""
        return Gather.apply(self, dim=dim, index=_array(index))

    def norm(
        self: Tensor, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None
    ) -> Tensor:
        """The ``p``-norm over ``dim`` (all by default).

        2 (``"fro"``) is one op; ``1``, ``inf``, ``-inf``, ``0`` and other ``p`` are compositions: ``abs().sum()``,
        ``abs().amax()``, ``abs().amin()``, a count, ``abs().pow(p).sum().pow(1/p)``."""
        if dtype is not None and not np.can_cast(self.dtype, as_dtype(dtype), casting="safe"):
            raise RuntimeError(f"norm: the dtype of the input ({self.dtype}) should be convertible without narrowing "
                               f"to the specified dtype ({as_dtype(dtype)})")
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind != "f":
            raise RuntimeError(f"norm: expected a floating point tensor as input, got {x.dtype}")
        if p in ("fro", 2, 2.0, None):
            return Norm.apply(x, dim=dim, keepdim=keepdim)
        if p == "nuc" or isinstance(p, str):
            raise NotImplementedError(f"norm: p={p!r} (a matrix norm) is not implemented; p-norms of vectors are")
        if p == math.inf:
            return x.abs().amax(dim, keepdim)
        if p == -math.inf:
            return x.abs().amin(dim, keepdim)
        if p == 0:
            return (x != 0).to(x.dtype).sum(dim, keepdim)
        if p == 1:
            return x.abs().sum(dim, keepdim)
        return (x.abs() ** p).sum(dim, keepdim) ** (1.0 / p)

    def pow(self: Tensor, exponent: Any) -> Tensor:
        """``self ** exponent``."""
        return self ** exponent

    def square(self: Tensor) -> Tensor:
        """``self * self``."""
        return self * self

    def t(self: Tensor) -> Tensor:
        """Transpose of a tensor with at most 2 dims (0-d and 1-d come back as they are), as torch."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self.reshape(self.shape)

    @property
    def mT(self: Tensor) -> Tensor:
        """The last two dims swapped (a batch of matrices, each transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"mT: expected a tensor with 2 or more dimensions, got shape {self.shape}")
        return self.transpose(-2, -1)

    def view_as(self: Tensor, other: Tensor) -> Tensor:
        """``view(other.shape)``."""
        return self.view(other.shape)

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        """``reshape(other.shape)``."""
        return self.reshape(other.shape)

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        """``expand(other.shape)``."""
        return self.expand(other.shape)

    # -- compositions of the core's ops ---------------------------------------------------

    def argmax(self: Tensor, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        """The index of the largest element (of the flattened tensor if ``dim`` is None); the first if tied."""
        return self._arg_extreme("argmax", np.argmax, dim, keepdim)

    def argmin(self: Tensor, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        """The index of the smallest element (of the flattened tensor if ``dim`` is None); the first if tied."""
        return self._arg_extreme("argmin", np.argmin, dim, keepdim)

    def _arg_extreme(self: Tensor, op: str, find: Any, dim: Any, keepdim: builtins.bool) -> Tensor:
        if dim is None:
            return self._make(np.asarray(find(self.array), dtype=np.int64))
        axis = normalize_dim(op, dim, self.ndim)
        return self._make(np.asarray(find(self.array, axis=axis, keepdims=keepdim), dtype=np.int64))

    def _sort_order(self: Tensor, op: str, dim: Any, descending: builtins.bool) -> tuple[builtins.int, np.ndarray]:
        """``dim`` normalized, and the indices that sort along it (stable: ties keep their order)."""
        d = normalize_dim(op, dim, self.ndim)
        return d, np.argsort(-self.array if descending else self.array, axis=d, kind="stable")

    def sort(self: Tensor, dim: builtins.int = -1, descending: builtins.bool = False, *,
             stable: builtins.bool = False) -> Any:
        """``(values, indices)`` sorted along ``dim``; values are ``self`` picked at the indices (``TakeAlong``)."""
        if self.ndim == 0:
            return MinMax(self.reshape(()), self._make(np.zeros((), dtype=np.int64)))
        d, order = self._sort_order("sort", dim, descending)
        return MinMax(TakeAlong.apply(self, index=order, dim=d), self._make(order.astype(np.int64)))

    def argsort(self: Tensor, dim: builtins.int = -1, descending: builtins.bool = False, *,
                stable: builtins.bool = False) -> Tensor:
        """The indices that sort ``self`` along ``dim``."""
        return self.sort(dim, descending, stable=stable)[1]

    def topk(self: Tensor, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
             sorted: builtins.bool = True) -> Any:
        """The ``k`` largest (or smallest) along ``dim`` as ``(values, indices)``: ``sort`` cut to ``k``."""
        d = normalize_dim("topk", dim, self.ndim) if self.ndim else 0
        length = self.shape[d] if self.ndim else 1
        if not 0 <= k <= length:
            raise RuntimeError(f"topk: k ({k}) is out of range for dimension {dim} of size {length}")
        if self.ndim == 0:
            return self.sort()
        _, order = self._sort_order("topk", dim, largest)
        index = np.take(order, np.arange(k), axis=d)
        return MinMax(TakeAlong.apply(self, index=index, dim=d), self._make(index.astype(np.int64)))

    def repeat(self: Tensor, *repeats: Any) -> Tensor:
        """Tile the tensor ``repeats[i]`` times along dim ``i`` (``np.tile``): a reshape, an expand and a reshape."""
        sizes = tuple(repeats[0]) if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)) else repeats
        if len(sizes) < self.ndim:
            raise RuntimeError(f"repeat: number of dimensions of repeat dims {len(sizes)} can not be smaller "
                               f"than number of dimensions of tensor {self.ndim}")
        shape = (1,) * (len(sizes) - self.ndim) + tuple(self.shape)
        spread = tuple(v for n in shape for v in (1, n))  # a size-1 dim before every dim
        tiled = tuple(v for r, n in zip(sizes, shape) for v in (r, n))
        return self.reshape(spread).expand(tiled).reshape(tuple(r * n for r, n in zip(sizes, shape)))

    def repeat_interleave(self: Tensor, repeats: Any, dim: builtins.int | None = None, *,
                          output_size: builtins.int | None = None) -> Tensor:
        """Each element repeated ``repeats`` times along ``dim`` (the tensor flattened if None).

        It is indexing with the repeated positions, so the gradient sums over each element's copies."""
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else normalize_dim("repeat_interleave", dim, x.ndim)
        counts = np.asarray(_array(repeats))
        if np.any(counts < 0):
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        positions = np.repeat(np.arange(x.shape[d]), counts)
        return x[(slice(None),) * d + (positions,)]

    def flip(self: Tensor, *dims: Any) -> Tensor:
        """The order of the elements reversed along ``dims``: a ``[::-1]`` slice per dim."""
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        index = [slice(None)] * self.ndim
        axes = [normalize_dim("flip", d, self.ndim) for d in dims]
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"flip: dims {tuple(dims)} name a dim more than once")
        for d in axes:
            index[d] = slice(None, None, -1)
        return self[tuple(index)]

    def movedim(self: Tensor, source: Any, destination: Any) -> Tensor:
        """Dims ``source`` moved to positions ``destination`` (ints or sequences), the others kept in order."""
        src = [source] if isinstance(source, builtins.int) else list(source)
        dst = [destination] if isinstance(destination, builtins.int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({tuple(src)} dims) should "
                               f"contain the same number of dims as destination ({tuple(dst)} dims)")
        src = [normalize_dim("movedim", d, self.ndim) for d in src]
        dst = [normalize_dim("movedim", d, self.ndim) for d in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise RuntimeError(f"movedim: repeated dim in source {tuple(src)} or destination {tuple(dst)}")
        rest = iter(d for d in range(self.ndim) if d not in src)
        placed = dict(zip(dst, src))
        return self.permute([placed[i] if i in placed else next(rest) for i in range(self.ndim)])

    def unbind(self: Tensor, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim``, that dim removed: ``self[..., i, ...]`` for each ``i``."""
        d = normalize_dim("unbind", dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    # == arithmetic with torch's keywords, rounding, scans, index tensors, in-place math ==

    """Mixin of ``Tensor``: the methods that torch also has as ``torch.<name>(input, ...)``."""

    # -- arithmetic with torch's keywords -------------------------------------------------------------

    def add(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self + alpha * other``."""
        return Add.apply(self, other if alpha == 1 else other * alpha)

    def sub(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """``self - alpha * other``."""
        return Sub.apply(self, other if alpha == 1 else other * alpha)

    def mul(self: Tensor, value: Any) -> Tensor:
        """``self * value``."""
        return Mul.apply(self, value)

    def div(self: Tensor, value: Any, *, rounding_mode: str | None = None) -> Tensor:
        """``self / value`` (true division; ``rounding_mode`` "floor" or "trunc" leaves the graph)."""
        if rounding_mode is None:
            return Div.apply(self, value)
        a, b = self.array, _value(value)
        if rounding_mode == "floor":
            return type(self)._make(np.asarray(np.floor_divide(a, b)))
        if rounding_mode == "trunc":
            return type(self)._make(np.asarray(np.trunc(np.true_divide(a, b))).astype(np.result_type(a, b)))
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")

    subtract, multiply, divide = sub, mul, div

    def true_divide(self: Tensor, value: Any) -> Tensor:
        """``self / value`` (always true division)."""
        return Div.apply(self, value)

    def reciprocal(self: Tensor) -> Tensor:
        """``1 / self``."""
        return Div.apply(1.0 if self.is_floating_point() else np.float32(1), self)

    def maximum(self: Tensor, other: Tensor) -> Tensor:
        """The larger of the two, element by element (the gradient goes to the larger one; half each on ties)."""
        return self._pick(other, self.array > other.array)

    def minimum(self: Tensor, other: Tensor) -> Tensor:
        """The smaller of the two, element by element (the gradient goes to the smaller one; half each on ties)."""
        return self._pick(other, self.array < other.array)

    def _pick(self: Tensor, other: Tensor, mine: np.ndarray) -> Tensor:
        """``self`` where ``mine``, else ``other``; where they tie, their mean (so each gets half the gradient)."""
        picked = Where.apply(mine, self, other)
        ties = self.array == other.array
        return Where.apply(ties, (self + other) * 0.5, picked) if ties.any() else picked

    # -- comparisons (outside the graph, as torch's) ---------------------------------------------------

    def gt(self: Tensor, other: Any) -> Tensor:
        """``self > other``, a bool tensor."""
        return self > other

    def ge(self: Tensor, other: Any) -> Tensor:
        """``self >= other``, a bool tensor."""
        return self >= other

    def lt(self: Tensor, other: Any) -> Tensor:
        """``self < other``, a bool tensor."""
        return self < other

    def le(self: Tensor, other: Any) -> Tensor:
        """``self <= other``, a bool tensor."""
        return self <= other

    greater, greater_equal, less, less_equal = gt, ge, lt, le

    def not_equal(self: Tensor, other: Any) -> Tensor:
        """``self != other``, a bool tensor."""
        return self.ne(other)

    # -- rounding and signs (no gradient flows through them) ---------------------------------------------

    def _constant(self: Tensor, array: np.ndarray) -> Tensor:
        return type(self)._make(np.asarray(array))

    def floor(self: Tensor) -> Tensor:
        """Round down (the result is a constant: its gradient is zero, so it leaves the graph)."""
        return self._constant(np.floor(self.array))

    def ceil(self: Tensor) -> Tensor:
        """Round up (outside the graph: its gradient is zero)."""
        return self._constant(np.ceil(self.array))

    def round(self: Tensor, *, decimals: builtins.int = 0) -> Tensor:
        """Round half to even, as torch (outside the graph: its gradient is zero)."""
        return self._constant(np.round(self.array, decimals))

    def trunc(self: Tensor) -> Tensor:
        """Round towards zero (outside the graph: its gradient is zero)."""
        return self._constant(np.trunc(self.array))

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1 (outside the graph: its gradient is zero)."""
        return self._constant(np.sign(self.array))

    # -- products and scans ----------------------------------------------------------------------------

    def dot(self: Tensor, other: Tensor) -> Tensor:
        """The inner product of two 1-D tensors of the same length: ``self @ other``."""
        if self.ndim != 1 or other.ndim != 1 or self.shape != other.shape:
            raise RuntimeError(f"dot: expected two 1-D tensors of the same size, got shapes {tuple(self.shape)} "
                               f"and {tuple(other.shape)}")
        return self @ other

    def bmm(self: Tensor, batch2: Tensor) -> Tensor:
        """A batch of matrix products (3-D only, same batch size): ``self @ batch2``."""
        if self.ndim != 3 or batch2.ndim != 3 or self.shape[0] != batch2.shape[0]:
            raise RuntimeError(f"bmm: expected two 3-D tensors with the same batch size, "
                               f"got shapes {tuple(self.shape)} and {tuple(batch2.shape)}")
        return self @ batch2

    def mv(self: Tensor, vec: Tensor) -> Tensor:
        """Matrix times vector: ``self @ vec``."""
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"mv: expected a 2-D and a 1-D tensor, got shapes {tuple(self.shape)} and "
                               f"{tuple(vec.shape)}")
        return self @ vec

    def matrix_power(self: Tensor, n: builtins.int) -> Tensor:
        """``self @ self @ ... @ self`` (``n`` factors; ``n = 0`` gives the identity)."""
        if self.ndim < 2 or self.shape[-1] != self.shape[-2]:
            raise RuntimeError(f"matrix_power: expected a square matrix, got shape {tuple(self.shape)}")
        if n < 0:
            raise RuntimeError("matrix_power: a negative power needs an inverse, which tinyattn does not have")
        out = self._constant(np.broadcast_to(np.eye(self.shape[-1], dtype=self.dtype), self.shape).copy())
        for _ in range(n):
            out = out @ self
        return out

    def cumsum(self: Tensor, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        """Running sums along ``dim``: a product with a triangle of ones, so the gradient is the reversed scan."""
        d = normalize_dim("cumsum", dim, builtins.max(self.ndim, 1))
        x = self if dtype is None else self.to(dtype)
        n = x.shape[d] if x.ndim else 1
        ones_above = self._constant(np.triu(np.ones((n, n), dtype=x.dtype)))  # out[j] = sum over i <= j of x[i]
        moved = x.reshape(1) if x.ndim == 0 else x.movedim(d, -1)
        out = moved @ ones_above
        return out.reshape(()) if x.ndim == 0 else out.movedim(-1, d)

    def diag(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
        """A 1-D tensor made the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal as 1-D."""
        if self.ndim == 1:
            n, k = self.shape[0], diagonal
            rows, cols = np.arange(n) + builtins.max(-k, 0), np.arange(n) + builtins.max(k, 0)
            square = self._constant(np.zeros((n + builtins.abs(k),) * 2, dtype=self.dtype))
            return SetItem.apply(square, self, index=(rows, cols))
        if self.ndim == 2:
            rows = np.arange(self.shape[0])[:, None]
            return self[np.nonzero(np.arange(self.shape[1])[None, :] - rows == diagonal)]
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got shape {tuple(self.shape)}")

    # -- indexing by index tensors ---------------------------------------------------------------------

    def index_select(self: Tensor, dim: builtins.int, index: Any) -> Tensor:
        """The slices at ``index`` (a 1-D int tensor) along ``dim``."""
        idx = np.asarray(_value(index))
        if idx.ndim > 1 or idx.dtype.kind not in "iu":
            raise RuntimeError(f"index_select: expected a 1-D int index, got dtype {idx.dtype} and shape "
                               f"{idx.shape}")
        d = normalize_dim("index_select", dim, builtins.max(self.ndim, 1))
        return self[(slice(None),) * d + (idx.reshape(-1),)]

    def _index_mask(self: Tensor, op: str, dim: builtins.int, index: Any) -> np.ndarray:
        idx = np.asarray(_value(index)).reshape(-1)
        d = normalize_dim(op, dim, builtins.max(self.ndim, 1))
        mask = np.zeros(self.shape, dtype=bool)
        mask[(slice(None),) * d + (idx,)] = True
        return mask

    def index_fill(self: Tensor, dim: builtins.int, index: Any, value: Any) -> Tensor:
        """``value`` in the slices at ``index`` along ``dim``."""
        return MaskedFill.apply(self, self._index_mask("index_fill", dim, index), value=_value(value))

    def index_fill_(self: Tensor, dim: builtins.int, index: Any, value: Any) -> Tensor:
        """``index_fill``, in place."""
        return self._in_place("index_fill_", MaskedFill, self._index_mask("index_fill_", dim, index),
                              value=_value(value))

    def _scatter_where(self: Tensor, op: str, dim: builtins.int, index: Any) -> tuple[np.ndarray, ...]:
        return gather_index(op, self.shape, normalize_dim(op, dim, builtins.max(self.ndim, 1)),
                            np.asarray(_value(index)))

    def _scatter_value(self: Tensor, index: Any, src: Any) -> Any:
        if not hasattr(src, "gradient_edge"):  # a number: torch's ``value`` overload
            return np.asarray(src, dtype=self.dtype)
        shape = np.shape(_value(index))
        return src[tuple(slice(0, n) for n in shape)]  # (torch reads src only where index reaches)

    def scatter(self: Tensor, dim: builtins.int, index: Any, src: Any) -> Tensor:
        """A copy with ``out[index[i] along dim] = src[i]`` (``src`` a tensor, or one number for all).

        ``src`` gets the gradient of what it wrote, the overwritten elements get none."""
        where = self._scatter_where("scatter", dim, index)
        return SetItem.apply(self, self._scatter_value(index, src), index=where)

    def scatter_(self: Tensor, dim: builtins.int, index: Any, src: Any) -> Tensor:
        """``scatter``, in place."""
        where = self._scatter_where("scatter_", dim, index)
        return self._in_place("scatter_", SetItem, self._scatter_value(index, src), index=where)

    # -- the elementwise ops, in place (each through the one in-place mechanism, _in_place) ----------------

    def abs_(self: Tensor) -> Tensor:
        """``abs``, in place."""
        return self._in_place("abs_", Abs)

    def exp_(self: Tensor) -> Tensor:
        """``exp``, in place."""
        return self._in_place("exp_", Exp)

    def log_(self: Tensor) -> Tensor:
        """``log``, in place."""
        return self._in_place("log_", Log)

    def sqrt_(self: Tensor) -> Tensor:
        """``sqrt``, in place."""
        return self._in_place("sqrt_", Sqrt)

    def tanh_(self: Tensor) -> Tensor:
        """``tanh``, in place."""
        return self._in_place("tanh_", Tanh)

    def sigmoid_(self: Tensor) -> Tensor:
        """``sigmoid``, in place."""
        return self._in_place("sigmoid_", Sigmoid)

    def relu_(self: Tensor) -> Tensor:
        """``relu``, in place."""
        return self._in_place("relu_", ReLUFn)

    def neg_(self: Tensor) -> Tensor:
        """``-self``, in place."""
        return self._in_place("neg_", Neg)

    def sin_(self: Tensor) -> Tensor:
        """``sin``, in place."""
        return self._in_place("sin_", Sin)

    def cos_(self: Tensor) -> Tensor:
        """``cos``, in place."""
        return self._in_place("cos_", Cos)

    def log1p(self: Tensor) -> Tensor:
        """``log(1 + self)``, exact where ``self`` is tiny (one op, ``Log1p``)."""
        return Log1p.apply(self)

    def expm1(self: Tensor) -> Tensor:
        """``exp(self) - 1``, exact where ``self`` is tiny (one op, ``Expm1``)."""
        return Expm1.apply(self)

    def log10(self: Tensor) -> Tensor:
        """``log(self) / log(10)``."""
        return self.log() / math.log(10.0)

    def log2(self: Tensor) -> Tensor:
        """``log(self) / log(2)``."""
        return self.log() / math.log(2.0)

    def lerp(self: Tensor, end: Any, weight: Any) -> Tensor:
        """``self + weight * (end - self)``: from ``self`` towards ``end`` by ``weight``."""
        return self + weight * (end - self)

    def lerp_(self: Tensor, end: Any, weight: Any) -> Tensor:
        """``lerp``, in place (an exponential moving average: ``ema.lerp_(p, 1 - decay)``)."""
        return self._in_place("lerp_", Copy, self.lerp(end, weight))

    def log1p_(self: Tensor) -> Tensor:
        """``log1p``, in place."""
        return self._in_place("log1p_", Log1p)

    def expm1_(self: Tensor) -> Tensor:
        """``expm1``, in place."""
        return self._in_place("expm1_", Expm1)

    def tril_(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
        """``tril``, in place."""
        return self._in_place("tril_", Triangle, upper=False, diagonal=diagonal)

    def triu_(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
        """``triu``, in place."""
        return self._in_place("triu_", Triangle, upper=True, diagonal=diagonal)

    def logsumexp(self: Tensor, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        """``log(sum(exp(self), dim))``, computed stably: the largest element taken out first (a constant)."""
        m = self.amax(dim, keepdim=True).detach()
        finite = m.masked_fill(~np.isfinite(m.array), 0.0)  # (a row of -inf: its log-sum is -inf, not nan)
        total = (self - finite).exp().sum(dim, keepdim=keepdim).log()
        return total + (finite if keepdim else finite.reshape(total.shape))

    # -- reshaping spellings ---------------------------------------------------------------------------

    def ravel(self: Tensor) -> Tensor:
        """All elements in one dim: ``reshape(-1)``."""
        return self.reshape(-1)

    def is_contiguous(self: Tensor, memory_format: Any = None) -> builtins.bool:
        """Whether the elements lie in row-major order in memory (False after ``t()`` or ``transpose``)."""
        return builtins.bool(self.array.flags.c_contiguous)

    def swapdims(self: Tensor, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        """Alias of ``transpose``."""
        return self.transpose(dim0, dim1)

    def broadcast_to(self: Tensor, shape: Sequence[builtins.int]) -> Tensor:
        """Alias of ``expand``."""
        return self.expand(*shape)

    def unsqueeze_(self: Tensor, dim: builtins.int) -> Tensor:
        """``unsqueeze``, changing this tensor's shape in place."""
        return self._reshape_in_place("unsqueeze_", self.unsqueeze(dim))

    def squeeze_(self: Tensor, dim: builtins.int | None = None) -> Tensor:
        """``squeeze``, changing this tensor's shape in place."""
        return self._reshape_in_place("squeeze_", self.squeeze(dim))

    def _reshape_in_place(self: Tensor, op: str, reshaped: Tensor) -> Tensor:
        if self._requires_grad or self._grad_fn is not None:
            raise RuntimeError(f"{op}: changing the shape of a tensor that is part of a graph is not supported "
                               f"here; use the out-of-place {op[:-1]}() instead")
        self.array = reshaped.array
        return self

    # -- values that have no gradient ------------------------------------------------------------------

    def unique(self: Tensor, sorted: builtins.bool = True, return_inverse: builtins.bool = False,
               return_counts: builtins.bool = False, dim: builtins.int | None = None) -> Any:
        """The distinct values, sorted (with ``return_inverse``/``return_counts`` as torch)."""
        if dim is not None:
            raise NotImplementedError("unique(dim=...) is not implemented; flatten first")
        values, inverse, counts = np.unique(self.array, return_inverse=True, return_counts=True)
        out = [self._constant(values)]
        if return_inverse:
            out.append(self._constant(inverse.reshape(self.shape).astype(np.int64)))
        if return_counts:
            out.append(self._constant(counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    def multinomial(self: Tensor, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """Indices drawn from each row's categorical distribution, with weights ``self`` (``torch.multinomial``)."""
        return type(self)._make(multinomial_indices(self, num_samples, replacement, generator))

    def argwhere(self: Tensor) -> Tensor:
        """The indices of the nonzero elements, one row each: ``nonzero()``."""
        return self.nonzero()

    def prod(self: Tensor, dim: builtins.int | None = None, keepdim: builtins.bool = False, *,
             dtype: Any = None) -> Tensor:
        """The product of the elements (of all, or along ``dim``); refuses inside a graph (no backward here)."""
        if self._requires_grad and grad_mode.is_grad_enabled():
            raise RuntimeError("prod: its gradient is not implemented in tinyattn; compute it under no_grad, or "
                               "write it as exp(log(x).sum()) for positive x")
        a = self.array if dtype is None else self.array.astype(dtype)
        if a.dtype.kind in "bu" or (a.dtype.kind == "i" and dtype is None):
            a = a.astype(np.int64)
        if dim is None:
            return self._constant(np.prod(a))
        return self._constant(np.prod(a, axis=normalize_dim("prod", dim, builtins.max(self.ndim, 1)),
                                      keepdims=keepdim))

    def bitwise_xor(self: Tensor, other: Any) -> Tensor:
        """``self ^ other`` for ints and bools."""
        return self._bitwise("bitwise_xor", np.bitwise_xor, other)

    def bitwise_and(self: Tensor, other: Any) -> Tensor:
        """``self & other`` for ints and bools."""
        return self._bitwise("bitwise_and", np.bitwise_and, other)

    def bitwise_or(self: Tensor, other: Any) -> Tensor:
        """``self | other`` for ints and bools."""
        return self._bitwise("bitwise_or", np.bitwise_or, other)

    def bitwise_not(self: Tensor) -> Tensor:
        """``~self`` for ints and bools."""
        return self._bitwise("bitwise_not", lambda a, _: np.invert(a), 0)

    def _bitwise(self: Tensor, op: str, fn: Any, other: Any) -> Tensor:
        b = np.asarray(_value(other))
        if self.dtype.kind not in "iub" or b.dtype.kind not in "iub":
            raise RuntimeError(f"{op}: expected integer or bool tensors, got {self.dtype} and {b.dtype}")
        return self._constant(fn(self.array, b))


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


def elementwise_method(name: str, op: Any) -> Any:
    """``x.exp()``: the method of an elementwise op that names itself (``core/ops/elementwise.py``)."""

    def method(self: Tensor) -> Tensor:
        return op.apply(self)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = op.__doc__.split(";")[0].strip() + " (" + op.__name__ + ", core/ops/elementwise.py)."
    return method


# Every elementwise op that names itself is a method: those written out above (with their own docstring), and
# the rest made from the op (adding one to core/ops/elementwise.py is all it takes)
for _name, _op in named_ops():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, elementwise_method(_name, _op))




def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)`` is a batched matmul (one op, ``Einsum``)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the first argument must be the equation string, got {type(equation).__name__}")
    return Einsum.apply(*operands, equation=equation)


_TYPE_NAMES = {
    np.dtype(np.float32): "torch.FloatTensor", np.dtype(np.float64): "torch.DoubleTensor",
    np.dtype(np.float16): "torch.HalfTensor", np.dtype(np.int64): "torch.LongTensor",
    np.dtype(np.int32): "torch.IntTensor", np.dtype(np.int16): "torch.ShortTensor",
    np.dtype(np.int8): "torch.CharTensor", np.dtype(np.uint8): "torch.ByteTensor",
    np.dtype(np.bool_): "torch.BoolTensor",
}
