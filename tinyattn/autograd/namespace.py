"""torch's functions that are also Tensor methods: ``ta.exp(x)`` is ``x.exp()``, ``ta.softmax(x, 1)`` ``x.softmax(1)``.

Each function here is one line: the method it calls holds the op (or the composition),
so there is one place to read. Arguments are torch's, names and order.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .core.ops.elementwise import Add, Div, Mul, Neg, Sub, named_ops
from .tensor import NO_COMPLEX, NO_SPARSE, Tensor, einsum

__all__ = [
    "abs", "add", "allclose", "amax", "amin", "argmax", "argmin", "argsort", "bmm", "clamp", "clip", "clone",
    "cos", "div", "dot", "einsum", "equal", "erf", "exp", "flatten", "flip", "gather", "is_tensor", "isclose", "log",
    "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor", "masked_fill", "matmul", "max", "movedim",
    "mean", "min", "mm", "mul", "neg", "norm", "numel", "outer", "permute", "pow", "relu", "repeat_interleave",
    "reshape", "sigmoid", "sin", "softmax", "sort", "sqrt", "square", "squeeze", "std", "sub", "sum", "t",
    "tanh", "topk", "transpose", "tril", "triu", "unbind", "unsqueeze", "var",
    "bincount", "eq", "floor_divide", "masked_select", "narrow", "ne", "nonzero", "remainder", "rsqrt",
    "all", "any", "argwhere", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "broadcast_to", "ceil",
    "cumsum", "diag", "divide", "floor", "ge", "greater", "greater_equal", "gt", "index_fill", "index_select", "le",
    "less", "less_equal", "lt", "matrix_power", "maximum", "minimum", "multiply", "mv", "not_equal", "prod", "ravel",
    "reciprocal", "round", "scatter", "sign", "subtract", "swapdims", "true_divide", "trunc", "unique",
    "logsumexp", "log1p", "expm1", "log10", "log2", "lerp",
    "complex", "polar", "sparse_coo_tensor", "sparse_csr_tensor", "view_as_complex", "view_as_real",
]


def _tensor(op: str, input: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def _into(op: str, out: Tensor | None, result: Tensor) -> Tensor:
    """torch's ``out=``: the result written into ``out`` (resized if its shape differs), which is returned."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result.requires_grad or out.requires_grad:
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out.shape == result.shape:
        out.array[...] = result.array
    else:
        out.array = result.array.astype(out.dtype)
    out._version += 1
    return out


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is a tinyattn Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    return _tensor("numel", input).numel()


# -- elementwise ---------------------------------------------------------------------------


def exp(input: Tensor) -> Tensor:
    """``e ** input``."""
    return _tensor("exp", input).exp()


def log(input: Tensor) -> Tensor:
    """Natural logarithm."""
    return _tensor("log", input).log()


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, exact where ``input`` is tiny."""
    return _tensor("log1p", input).log1p()


def expm1(input: Tensor) -> Tensor:
    """``exp(input) - 1``, exact where ``input`` is tiny."""
    return _tensor("expm1", input).expm1()


def log10(input: Tensor) -> Tensor:
    """Logarithm to base 10."""
    return _tensor("log10", input).log10()


def log2(input: Tensor) -> Tensor:
    """Logarithm to base 2."""
    return _tensor("log2", input).log2()


def lerp(input: Tensor, end: Any, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    return _tensor("lerp", input).lerp(end, weight)


def sqrt(input: Tensor) -> Tensor:
    """Square root."""
    return _tensor("sqrt", input).sqrt()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _tensor("tanh", input).tanh()


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``."""
    return _tensor("sigmoid", input).sigmoid()


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)``."""
    return _tensor("relu", input).relu()


def abs(input: Tensor) -> Tensor:
    """Absolute value."""
    return _tensor("abs", input).abs()


def sin(input: Tensor) -> Tensor:
    """The sine of each element (in radians)."""
    return _tensor("sin", input).sin()


def erf(input: Tensor) -> Tensor:
    """The error function of each element."""
    return _tensor("erf", input).erf()


def cos(input: Tensor) -> Tensor:
    """The cosine of each element (in radians)."""
    return _tensor("cos", input).cos()


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    return Neg.apply(_tensor("neg", input))


def square(input: Tensor) -> Tensor:
    """``input * input``."""
    return _tensor("square", input).square()


def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` (either may be a number)."""
    return input ** exponent


def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other``."""
    return _into("add", out, Add.apply(input, other if alpha == 1 else other * alpha))


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    return _into("sub", out, Sub.apply(input, other if alpha == 1 else other * alpha))


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``input * other``."""
    return _into("mul", out, Mul.apply(input, other))


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other`` (true division; ``rounding_mode`` "floor" or "trunc" leaves the graph)."""
    if rounding_mode is None:
        return Div.apply(input, other)
    a, b = (x.array if isinstance(x, Tensor) else x for x in (input, other))
    if rounding_mode == "floor":
        return Tensor._make(np.asarray(np.floor_divide(a, b)))
    if rounding_mode == "trunc":
        return Tensor._make(np.asarray(np.trunc(np.true_divide(a, b))).astype(np.result_type(a, b)))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Each element limited to ``[min, max]``."""
    return _tensor("clamp", input).clamp(min, max)


def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Alias of ``clamp``."""
    return _tensor("clip", input).clamp(min, max)


def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` is True, else ``input``."""
    return _tensor("masked_fill", input).masked_fill(mask, value)


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy that stays in the graph."""
    return _tensor("clone", input).clone()


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims, zeros above (``tril(ones(n, n))`` is the causal mask)."""
    return _tensor("tril", input).tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims, zeros below."""
    return _tensor("triu", input).triu(diagonal)


# -- products ---------------------------------------------------------------------------------


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product ``input @ other`` (1-D, 2-D and batched)."""
    return _into("matmul", out, _tensor("matmul", input) @ other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices (2-D only): ``input @ mat2``."""
    if _tensor("mm", input).ndim != 2 or _tensor("mm", mat2).ndim != 2:
        raise RuntimeError(f"mm: expected two 2-D tensors, got shapes {input.shape} and {mat2.shape}")
    return input @ mat2


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """A batch of matrix products (3-D only, same batch size): ``input @ mat2``."""
    if _tensor("bmm", input).ndim != 3 or _tensor("bmm", mat2).ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: expected two 3-D tensors with the same batch size, "
                           f"got shapes {input.shape} and {mat2.shape}")
    return input @ mat2


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of the same length: ``input @ tensor``."""
    if _tensor("dot", input).ndim != 1 or _tensor("dot", tensor).ndim != 1 or input.shape != tensor.shape:
        raise RuntimeError(f"dot: expected two 1-D tensors of the same size, got shapes {input.shape} "
                           f"and {tensor.shape}")
    return input @ tensor


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[i] * vec2[j]`` for every ``i, j``: a column times a row (``unsqueeze`` and ``*``)."""
    if _tensor("outer", input).ndim != 1 or _tensor("outer", vec2).ndim != 1:
        raise RuntimeError(f"outer: expected two 1-D tensors, got shapes {input.shape} and {vec2.shape}")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


# -- reductions, sorting, indexing --------------------------------------------------------------


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (all if None)."""
    return _tensor("sum", input).to(dtype).sum(dim, keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim`` (all if None)."""
    return _tensor("mean", input).to(dtype).mean(dim, keepdim)


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Maximum over ``dim``; ties share the gradient."""
    return _tensor("amax", input).amax(dim, keepdim)


def amin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Minimum over ``dim``; ties share the gradient."""
    return _tensor("amin", input).amin(dim, keepdim)


def max(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The largest element, or ``(values, indices)`` along ``dim``."""
    return _tensor("max", input).max(dim, keepdim)


def min(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The smallest element, or ``(values, indices)`` along ``dim``."""
    return _tensor("min", input).min(dim, keepdim)


def var(input: Tensor, dim: Any = None, *, correction: int = 1, keepdim: bool = False) -> Tensor:
    """Variance over ``dim`` with ``correction`` (1: Bessel's)."""
    return _tensor("var", input).var(dim, keepdim=keepdim, correction=correction)


def std(input: Tensor, dim: Any = None, *, correction: int = 1, keepdim: bool = False) -> Tensor:
    """Standard deviation over ``dim`` with ``correction``."""
    return _tensor("std", input).std(dim, keepdim=keepdim, correction=correction)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
         dtype: Any = None) -> Tensor:
    """The ``p``-norm of ``input`` over ``dim``."""
    if out is not None:
        raise TypeError("norm: out= is not supported")
    return _tensor("norm", input).norm(p, dim, keepdim, dtype=dtype)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (along ``dim``)."""
    return _tensor("argmax", input).argmax(dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest element (along ``dim``)."""
    return _tensor("argmin", input).argmin(dim, keepdim)


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    """``(values, indices)`` sorted along ``dim``."""
    return _tensor("sort", input).sort(dim, descending, stable=stable)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    return _tensor("argsort", input).argsort(dim, descending, stable=stable)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The ``k`` largest (or smallest) along ``dim``, as ``(values, indices)``."""
    return _tensor("topk", input).topk(k, dim, largest, sorted)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Values of ``input`` picked along ``dim`` at ``index``."""
    return _tensor("gather", input).gather(dim, index)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True if every element of ``input`` is close to ``other``'s."""
    return _tensor("allclose", input).allclose(other, rtol, atol, equal_nan)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise closeness, as a bool tensor."""
    return _tensor("isclose", input).isclose(other, rtol, atol, equal_nan)


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both have the same shape and elements."""
    return _tensor("equal", input).equal(other)


def logical_not(input: Tensor) -> Tensor:
    """True where ``input`` is zero."""
    return _tensor("logical_not", input).logical_not()


def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``and``."""
    return _tensor("logical_and", input).logical_and(other)


def logical_or(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``or``."""
    return _tensor("logical_or", input).logical_or(other)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``xor``."""
    return _tensor("logical_xor", input).logical_xor(other)


# -- shapes ---------------------------------------------------------------------------------------


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """Same data, new shape."""
    return _tensor("reshape", input).reshape(shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim..end_dim`` merged into one."""
    return _tensor("flatten", input).flatten(start_dim, end_dim)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Two dims swapped."""
    return _tensor("transpose", input).transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    return _tensor("t", input).t()


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """The dims reordered."""
    return _tensor("permute", input).permute(dims)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Dims ``source`` moved to ``destination``."""
    return _tensor("movedim", input).movedim(source, destination)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A dim of size 1 inserted at ``dim``."""
    return _tensor("unsqueeze", input).unsqueeze(dim)


def squeeze(input: Tensor, dim: int | None = None) -> Tensor:
    """Dims of size 1 removed (only ``dim`` if given)."""
    return _tensor("squeeze", input).squeeze(dim)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """The order of elements reversed along ``dims``."""
    return _tensor("flip", input).flip(dims)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, that dim removed."""
    return _tensor("unbind", input).unbind(dim)


def repeat_interleave(input: Tensor, repeats: Any, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``dim``."""
    return _tensor("repeat_interleave", input).repeat_interleave(repeats, dim)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably."""
    return _tensor("softmax", input).to(dtype).softmax(dim)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably."""
    return _tensor("log_softmax", input).to(dtype).log_softmax(dim)


def eq(input: Tensor, other: Any) -> Tensor:
    """``input == other``, element by element."""
    return _tensor("eq", input).eq(other)


def ne(input: Tensor, other: Any) -> Tensor:
    """``input != other``, element by element."""
    return _tensor("ne", input).ne(other)


def rsqrt(input: Tensor) -> Tensor:
    """``1 / sqrt(input)``."""
    return _tensor("rsqrt", input).rsqrt()


def remainder(input: Any, other: Any) -> Tensor:
    """``input % other`` (the sign of ``other``, as Python's); ``input`` may be a number."""
    if isinstance(input, (int, float)) and isinstance(other, Tensor):
        return other.__rmod__(input)
    return _tensor("remainder", input).remainder(other)


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``; ``input`` may be a number."""
    if isinstance(input, (int, float)) and isinstance(other, Tensor):
        return other.__rfloordiv__(input)
    return _tensor("floor_divide", input).floor_divide(other)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` entries of ``dim`` from ``start``."""
    return _tensor("narrow", input).narrow(dim, start, length)


def masked_select(input: Tensor, mask: Any) -> Tensor:
    """The entries of ``input`` where ``mask`` is True, in a 1-d tensor."""
    return _tensor("masked_select", input).masked_select(mask)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the nonzero entries of ``input``."""
    return _tensor("nonzero", input).nonzero(as_tuple=as_tuple)


def bincount(input: Tensor, weights: Any = None, minlength: int = 0) -> Tensor:
    """How often each value occurs in the 1-d integer ``input`` (or the sum of ``weights`` at it)."""
    return _tensor("bincount", input).bincount(weights, minlength)


# -- the methods of tensor.py's arithmetic, rounding and scans, spelled as functions ---------------------------


def true_divide(dividend: Tensor, divisor: Any) -> Tensor:
    """``dividend / divisor``."""
    return _tensor("true_divide", dividend).true_divide(divisor)


def multiply(input: Tensor, other: Any) -> Tensor:
    """Alias of ``mul``."""
    return _tensor("multiply", input).mul(other)


def subtract(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """Alias of ``sub``."""
    return _tensor("subtract", input).sub(other, alpha=alpha)


def divide(input: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Alias of ``div``."""
    return _tensor("divide", input).div(other, rounding_mode=rounding_mode)


def gt(input: Tensor, other: Any) -> Tensor:
    """``input > other``."""
    return _tensor("gt", input).gt(other)


def ge(input: Tensor, other: Any) -> Tensor:
    """``input >= other``."""
    return _tensor("ge", input).ge(other)


def lt(input: Tensor, other: Any) -> Tensor:
    """``input < other``."""
    return _tensor("lt", input).lt(other)


def le(input: Tensor, other: Any) -> Tensor:
    """``input <= other``."""
    return _tensor("le", input).le(other)


def greater(input: Tensor, other: Any) -> Tensor:
    """Alias of ``gt``."""
    return _tensor("greater", input).gt(other)


def greater_equal(input: Tensor, other: Any) -> Tensor:
    """Alias of ``ge``."""
    return _tensor("greater_equal", input).ge(other)


def less(input: Tensor, other: Any) -> Tensor:
    """Alias of ``lt``."""
    return _tensor("less", input).lt(other)


def less_equal(input: Tensor, other: Any) -> Tensor:
    """Alias of ``le``."""
    return _tensor("less_equal", input).le(other)


def not_equal(input: Tensor, other: Any) -> Tensor:
    """``input != other``."""
    return _tensor("not_equal", input).ne(other)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The larger of the two, element by element."""
    return _tensor("maximum", input).maximum(other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """The smaller of the two, element by element."""
    return _tensor("minimum", input).minimum(other)


def floor(input: Tensor) -> Tensor:
    """Round down."""
    return _tensor("floor", input).floor()


def ceil(input: Tensor) -> Tensor:
    """Round up to an integer."""
    return _tensor("ceil", input).ceil()


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even."""
    return _tensor("round", input).round(decimals=decimals)


def trunc(input: Tensor) -> Tensor:
    """Round towards zero."""
    return _tensor("trunc", input).trunc()


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1."""
    return _tensor("sign", input).sign()


def reciprocal(input: Tensor) -> Tensor:
    """``1 / input``."""
    return _tensor("reciprocal", input).reciprocal()


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector."""
    return _tensor("mv", input).mv(vec)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` multiplied by itself ``n`` times."""
    return _tensor("matrix_power", input).matrix_power(n)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along ``dim``."""
    return _tensor("cumsum", input).cumsum(dim, dtype=dtype)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector made a diagonal matrix, or a matrix's diagonal."""
    return _tensor("diag", input).diag(diagonal)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices at ``index`` along ``dim``."""
    return _tensor("index_select", input).index_select(dim, index)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``value`` in the slices at ``index`` along ``dim``."""
    return _tensor("index_fill", input).index_fill(dim, index, value)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any) -> Tensor:
    """A copy with ``src`` (a tensor, or a number) written at ``index`` along ``dim``."""
    return _tensor("scatter", input).scatter(dim, index, src)


def ravel(input: Tensor) -> Tensor:
    """All elements in one dim."""
    return _tensor("ravel", input).ravel()


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose``."""
    return _tensor("swapdims", input).swapdims(dim0, dim1)


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    """Alias of ``expand``."""
    return _tensor("broadcast_to", input).broadcast_to(shape)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None) -> Any:
    """The distinct values, sorted."""
    return _tensor("unique", input).unique(sorted, return_inverse, return_counts, dim)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements."""
    return _tensor("argwhere", input).argwhere()


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The product of the elements."""
    return _tensor("prod", input).prod(dim, keepdim, dtype=dtype)


def bitwise_xor(input: Tensor, other: Any) -> Tensor:
    """``input ^ other``."""
    return _tensor("bitwise_xor", input).bitwise_xor(other)


def bitwise_and(input: Tensor, other: Any) -> Tensor:
    """``input & other``."""
    return _tensor("bitwise_and", input).bitwise_and(other)


def bitwise_or(input: Tensor, other: Any) -> Tensor:
    """``input | other``."""
    return _tensor("bitwise_or", input).bitwise_or(other)


def bitwise_not(input: Tensor) -> Tensor:
    """``~input``."""
    return _tensor("bitwise_not", input).bitwise_not()


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element (along ``dim``) is nonzero."""
    return _tensor("all", input).all(dim, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether some element (along ``dim``) is nonzero."""
    return _tensor("any", input).any(dim, keepdim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably."""
    return _tensor("logsumexp", input).logsumexp(dim, keepdim)


# -- what a real, dense NumPy library cannot be: refused, each with its reason (docs/coverage.md) ------------


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      pin_memory: bool = False, requires_grad: bool = False, check_invariants: Any = None,
                      is_coalesced: Any = None) -> Tensor:
    """Refused: tinyattn has no sparse tensors."""
    raise NotImplementedError(NO_SPARSE)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: Any = None) -> Tensor:
    """Refused: tinyattn has no sparse tensors."""
    raise NotImplementedError(NO_SPARSE)


def view_as_complex(input: Any) -> Tensor:
    """Refused: tinyattn has no complex tensors."""
    raise NotImplementedError(NO_COMPLEX)


def view_as_real(input: Any) -> Tensor:
    """Refused: tinyattn has no complex tensors."""
    raise NotImplementedError(NO_COMPLEX)


def complex(real: Any, imag: Any) -> Tensor:
    """Refused: tinyattn has no complex tensors."""
    raise NotImplementedError(NO_COMPLEX)


def polar(abs: Any, angle: Any) -> Tensor:
    """Refused: tinyattn has no complex tensors."""
    raise NotImplementedError(NO_COMPLEX)


def elementwise_function(name: str, op: Any) -> Any:
    """``ta.exp(x)``: the function of an elementwise op that names itself (``core/ops/elementwise.py``)."""

    def function(input: Tensor) -> Tensor:
        return getattr(_tensor(name, input), name)()

    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.__doc__.split(";")[0].strip() + " (" + op.__name__ + ", core/ops/elementwise.py)."
    return function


# Every elementwise op that names itself is a function: those written out above, and the rest made from the op
for _name, _op in named_ops():
    if _name not in globals():
        globals()[_name] = elementwise_function(_name, _op)
        __all__.append(_name)
