# mypy: disable-error-code="misc"
# (the methods annotate `self: Tensor`, the class that inherits them; mypy calls that "misc" in a mixin)
"""The rest of torch's ``Tensor`` methods: conversions, devices, sizes, and ops built on the core's.

``Tensor`` (``tensor.py``) inherits these so that torch code runs unchanged; the
core file keeps the autograd state, the arithmetic and one line per op a student
follows. Each method here is a conversion (no gradient: ``.long()``, ``.bool()``),
a one-line call of an op (``sin``, ``clamp``, ``gather``...: the op's class holds
its formula), or an honest composition of ops, which says so in its docstring
(its gradient is then the chain rule through those ops).
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Sequence

import numpy as np

from . import pickling, printing, views
from .arrays import _rng, _size, to_array
from .core import grad_mode
from .core.checks import normalize_dim, normalize_dims
from .core.dtypes import as_dtype
from .core.function import TensorBase
from .core.ops.elementwise import Add, Cast, Clamp, Clone, Copy, Cos, Div, Erf, MaskedFill, Mul, Sin, Sub
from .core.ops.matmul import Einsum
from .core.ops.reduction import Norm, TakeAlong
from .core.ops.shape import Gather, SetItem, Triangle
from .devices import CPU, check_device, device

if TYPE_CHECKING:
    from .tensor import Tensor


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
    if isinstance(value, TensorBase):
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


class TensorAPI:
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

    def __deepcopy__(self: Tensor, memo: dict[int, Any]) -> Tensor:
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
    def is_cuda(self) -> bool:
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

    def cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
        """Refused: there is no CUDA device (the error a torch built without CUDA raises)."""
        check_device("cuda", "cuda" if device is None else device)
        return self

    def type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
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
