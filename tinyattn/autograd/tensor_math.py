# mypy: disable-error-code="misc"
# (the methods annotate `self: Tensor`, the class that inherits them; mypy calls that "misc" in a mixin)
"""The rest of torch's everyday Tensor methods, each composed from ops the core already has.

``x.add(y)``, ``x.mul(y)``, ``x.gt(0)``, ``x.maximum(y)``, ``x.index_select(0, idx)``, ``x.scatter(1, idx, 1.0)``,
``x.cumsum(0)``, ``x.diag()``... No new backward formula is written here: each method is spelled in
ops that carry their own (``Add``, ``SetItem``, ``MatMul``, indexing...), so the gradients come
from there. Methods that torch cannot differentiate either (comparisons, ``floor``, ``unique``,
``argwhere``) return tensors outside the graph. ``namespace.py`` gives each its ``torch.add(x, y)``
spelling.
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .arrays import multinomial_indices
from .core import grad_mode
from .core.checks import normalize_dim
from .core.ops.elementwise import (
    Abs,
    Add,
    Copy,
    Cos,
    Div,
    Exp,
    Expm1,
    Log,
    Log1p,
    MaskedFill,
    Mul,
    Neg,
    ReLUFn,
    Sigmoid,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Where,
)
from .core.ops.shape import SetItem, Triangle, gather_index

if TYPE_CHECKING:
    from .tensor import Tensor


def _value(x: Any) -> Any:
    return x.array if hasattr(x, "gradient_edge") else x


class TensorMath:
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

    def round(self: Tensor, *, decimals: int = 0) -> Tensor:
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

    def matrix_power(self: Tensor, n: int) -> Tensor:
        """``self @ self @ ... @ self`` (``n`` factors; ``n = 0`` gives the identity)."""
        if self.ndim < 2 or self.shape[-1] != self.shape[-2]:
            raise RuntimeError(f"matrix_power: expected a square matrix, got shape {tuple(self.shape)}")
        if n < 0:
            raise RuntimeError("matrix_power: a negative power needs an inverse, which tinyattn does not have")
        out = self._constant(np.broadcast_to(np.eye(self.shape[-1], dtype=self.dtype), self.shape).copy())
        for _ in range(n):
            out = out @ self
        return out

    def cumsum(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
        """Running sums along ``dim``: a product with a triangle of ones, so the gradient is the reversed scan."""
        d = normalize_dim("cumsum", dim, builtins.max(self.ndim, 1))
        x = self if dtype is None else self.to(dtype)
        n = x.shape[d] if x.ndim else 1
        ones_above = self._constant(np.triu(np.ones((n, n), dtype=x.dtype)))  # out[j] = sum over i <= j of x[i]
        moved = x.reshape(1) if x.ndim == 0 else x.movedim(d, -1)
        out = moved @ ones_above
        return out.reshape(()) if x.ndim == 0 else out.movedim(-1, d)

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
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

    def index_select(self: Tensor, dim: int, index: Any) -> Tensor:
        """The slices at ``index`` (a 1-D int tensor) along ``dim``."""
        idx = np.asarray(_value(index))
        if idx.ndim > 1 or idx.dtype.kind not in "iu":
            raise RuntimeError(f"index_select: expected a 1-D int index, got dtype {idx.dtype} and shape "
                               f"{idx.shape}")
        d = normalize_dim("index_select", dim, builtins.max(self.ndim, 1))
        return self[(slice(None),) * d + (idx.reshape(-1),)]

    def _index_mask(self: Tensor, op: str, dim: int, index: Any) -> np.ndarray:
        idx = np.asarray(_value(index)).reshape(-1)
        d = normalize_dim(op, dim, builtins.max(self.ndim, 1))
        mask = np.zeros(self.shape, dtype=bool)
        mask[(slice(None),) * d + (idx,)] = True
        return mask

    def index_fill(self: Tensor, dim: int, index: Any, value: Any) -> Tensor:
        """``value`` in the slices at ``index`` along ``dim``."""
        return MaskedFill.apply(self, self._index_mask("index_fill", dim, index), value=_value(value))

    def index_fill_(self: Tensor, dim: int, index: Any, value: Any) -> Tensor:
        """``index_fill``, in place."""
        return self._in_place("index_fill_", MaskedFill, self._index_mask("index_fill_", dim, index),
                              value=_value(value))

    def _scatter_where(self: Tensor, op: str, dim: int, index: Any) -> tuple[np.ndarray, ...]:
        return gather_index(op, self.shape, normalize_dim(op, dim, builtins.max(self.ndim, 1)),
                            np.asarray(_value(index)))

    def _scatter_value(self: Tensor, index: Any, src: Any) -> Any:
        if not hasattr(src, "gradient_edge"):  # a number: torch's ``value`` overload
            return np.asarray(src, dtype=self.dtype)
        shape = np.shape(_value(index))
        return src[tuple(slice(0, n) for n in shape)]  # (torch reads src only where index reaches)

    def scatter(self: Tensor, dim: int, index: Any, src: Any) -> Tensor:
        """A copy with ``out[index[i] along dim] = src[i]`` (``src`` a tensor, or one number for all).

        ``src`` gets the gradient of what it wrote, the overwritten elements get none."""
        where = self._scatter_where("scatter", dim, index)
        return SetItem.apply(self, self._scatter_value(index, src), index=where)

    def scatter_(self: Tensor, dim: int, index: Any, src: Any) -> Tensor:
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

    def swapdims(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """Alias of ``transpose``."""
        return self.transpose(dim0, dim1)

    def broadcast_to(self: Tensor, shape: Sequence[int]) -> Tensor:
        """Alias of ``expand``."""
        return self.expand(*shape)

    def unsqueeze_(self: Tensor, dim: int) -> Tensor:
        """``unsqueeze``, changing this tensor's shape in place."""
        return self._reshape_in_place("unsqueeze_", self.unsqueeze(dim))

    def squeeze_(self: Tensor, dim: int | None = None) -> Tensor:
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
               return_counts: builtins.bool = False, dim: int | None = None) -> Any:
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

    def multinomial(self: Tensor, num_samples: int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """Indices drawn from each row's categorical distribution, with weights ``self`` (``torch.multinomial``)."""
        return type(self)._make(multinomial_indices(self, num_samples, replacement, generator))

    def argwhere(self: Tensor) -> Tensor:
        """The indices of the nonzero elements, one row each: ``nonzero()``."""
        return self.nonzero()

    def prod(self: Tensor, dim: int | None = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
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
