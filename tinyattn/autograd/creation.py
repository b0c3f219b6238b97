"""Ways to make tensors, with torch's names and arguments: ``tensor``, ``zeros``, ``randn``, ``arange``...

Every factory takes ``dtype=`` (any of torch's names, see ``core/dtypes.py``),
``device=`` (the CPU; see ``devices.py``) and ``requires_grad=``. Random tensors
come from one NumPy ``Generator``; ``manual_seed(s)`` replaces it, which makes
every later ``randn``/``rand``/``randint``... (and the modules' initial weights,
and dropout masks) reproducible. A random factory also takes ``generator=``, a
``Generator`` of its own. The numbers differ from torch's (another generator),
the distributions are the same.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .arrays import (  # noqa: F401  (re-exported: tinyattn.manual_seed, tinyattn.Generator...)
    ArrayLike,
    Generator,
    _rng,
    _size,
    _size_given,
    default_generator,
    float_dtype,
    initial_seed,
    manual_seed,
    multinomial_indices,
    seed,
    to_array,
)
from .core import dtypes
from .core.dtypes import as_dtype, bool_, float32, float64, int64  # noqa: F401  (re-exported)
from .devices import check_device
from .tensor import Tensor


def _new(op: str, data: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    check_device(op, device)
    t = Tensor._make(data)
    t.requires_grad = requires_grad  # (refused for int and bool dtypes, as torch)
    return t


def tensor(
    data: ArrayLike, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (Python floats become the default float dtype, ints int64)."""
    check_device("tensor", device)
    t = Tensor._make(to_array(data, None if dtype is None else as_dtype(dtype)))
    t.requires_grad = requires_grad  # (refused for int and bool dtypes, as torch)
    return t


def as_tensor(data: ArrayLike, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory with a NumPy array or tensor of the same dtype (else a copy)."""
    check_device("as_tensor", device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(as_dtype(dtype))
    if isinstance(data, np.ndarray) and (dtype is None or as_dtype(dtype) == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray``: a change to one shows in the other, as torch."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype.kind not in "fiub":
        raise TypeError(f"from_numpy: can't convert an array of dtype {ndarray.dtype}")
    return Tensor._make(ndarray)


def _filled(op: str, fill: Any, size: tuple[Any, ...], dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    return _new(op, np.full(_size(op, size), fill, dtype=as_dtype(dtype)), device, requires_grad)


def zeros(*size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:
    """A tensor of zeros."""
    return _filled("zeros", 0, _size_given("zeros", size, size_keyword), dtype, device,
                   requires_grad)


def ones(*size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:
    """A tensor of ones."""
    return _filled("ones", 1, _size_given("ones", size, size_keyword), dtype, device,
                   requires_grad)


def empty(*size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:
    """A tensor to be overwritten (torch leaves it uninitialised; here it holds zeros)."""
    return _filled("empty", 0, _size_given("empty", size, size_keyword), dtype, device,
                   requires_grad)


def _scalar_dtype(value: Any) -> np.dtype:
    """The dtype torch infers from a Python number: bool, int64, or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    return dtypes.DEFAULT_FLOAT


def full(
    size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (its dtype inferred from the value, as torch)."""
    fill_value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    dtype = _scalar_dtype(fill_value) if dtype is None else dtype
    return _filled("full", fill_value, (size,), dtype, device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The ``n`` by ``m`` (default ``n``) identity matrix."""
    rows, cols = _size("eye", (n, n if m is None else m))
    return _new("eye", np.eye(rows, cols, dtype=as_dtype(dtype)), device, requires_grad)


def arange(
    start: float = 0, end: float | None = None, step: float = 1, *,
    dtype: Any = None, device: Any = None, requires_grad: bool = False,
) -> Tensor:
    """``start, start + step, ...`` below ``end`` (ints give int64, floats the default float)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: end {end} cannot be reached from start {start} with step {step}")
    if dtype is None:
        all_ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if all_ints else dtypes.DEFAULT_FLOAT
    return _new("arange", np.arange(start, end, step).astype(as_dtype(dtype)), device, requires_grad)


def linspace(
    start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    (steps,) = _size("linspace", (steps,))
    return _new("linspace", np.linspace(start, end, steps).astype(as_dtype(dtype)), device, requires_grad)


def rand(
    *size: int | Sequence[int], generator: Any = None, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **size_keyword: Any,
) -> Tensor:
    """Samples from the uniform distribution on [0, 1)."""
    data = _rng("rand", generator).random(_size("rand", _size_given("rand", size, size_keyword)))
    data = data.astype(float_dtype(dtype))
    return _new("rand", data, device, requires_grad)


def randn(
    *size: int | Sequence[int], generator: Any = None, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **size_keyword: Any,
) -> Tensor:
    """Samples from the standard normal distribution."""
    data = _rng("randn", generator).standard_normal(_size("randn", _size_given("randn", size, size_keyword)))
    data = data.astype(float_dtype(dtype))
    return _new("randn", data, device, requires_grad)


def randint(
    low: int = 0, high: Any = None, size: Any = None, *, generator: Any = None, dtype: Any = None,
    device: Any = None, requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or ``randint(low, high, size)``."""
    if high is None:  # randint(high, size=...): torch's first overload, the size given by name
        low, high = 0, low
    elif size is None:  # randint(high, size): the same, the size given in place
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: expected randint(high, size) or randint(low, high, size)")
    if high <= low:
        raise RuntimeError(f"randint: random_ expects 'from' < 'to', got from={low} >= to={high}")
    data = _rng("randint", generator).integers(low, high, _size("randint", (size,)))
    return _new("randint", data.astype(as_dtype(np.int64 if dtype is None else dtype)), device, requires_grad)


def randperm(
    n: int, *, generator: Any = None, dtype: Any = int64, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A random permutation of ``0 .. n-1``."""
    (n,) = _size("randperm", (n,))
    return _new("randperm", _rng("randperm", generator).permutation(n).astype(as_dtype(dtype)), device, requires_grad)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None) -> Tensor:
    """Samples from normal distributions: ``normal(mean, std, size)`` with floats, or elementwise from tensors."""
    for name, value in (("mean", mean), ("std", std)):
        if isinstance(value, Tensor) and value.requires_grad:
            raise NotImplementedError(f"normal: no gradient to {name} here; pass {name}.detach()")
    m, s = (v.array if isinstance(v, Tensor) else v for v in (mean, std))
    if np.any(np.asarray(s) < 0):
        raise RuntimeError("normal: std must be >= 0")
    shape = _size("normal", (size,)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    dtype = next((v.dtype for v in (mean, std) if isinstance(v, Tensor)), dtypes.DEFAULT_FLOAT)
    if dtype.kind != "f":
        raise TypeError(f"normal: expected floating-point mean and std, got {dtype}")
    return Tensor._make(_rng("normal", generator).normal(m, s, shape).astype(dtype))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """Indices drawn from each row's categorical distribution, with weights ``input`` (need not sum to 1)."""
    return Tensor._make(multinomial_indices(input, num_samples, replacement, generator))


# -- like another tensor ------------------------------------------------------------


def _like(input: Tensor, dtype: Any) -> tuple[tuple[int, ...], Any]:
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    return input.shape, input.dtype if dtype is None else dtype


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with ``input``'s shape and dtype."""
    shape, dtype = _like(input, dtype)
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with ``input``'s shape and dtype."""
    shape, dtype = _like(input, dtype)
    return ones(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor to be overwritten, with ``input``'s shape and dtype (here it holds zeros)."""
    shape, dtype = _like(input, dtype)
    return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape and dtype."""
    shape, dtype = _like(input, dtype)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples on [0, 1) with ``input``'s shape and dtype."""
    shape, dtype = _like(input, dtype)
    return rand(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples with ``input``'s shape and dtype."""
    shape, dtype = _like(input, dtype)
    return randn(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(
    input: Tensor, low: int = 0, high: Any = None, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers from ``[low, high)`` with ``input``'s shape and dtype: ``randint_like(x, high)`` or ``(x, lo, hi)``."""
    shape, dtype = _like(input, dtype)
    low, high = (0, low) if high is None else (low, high)
    return randint(low, high, shape, dtype=dtype, device=device, requires_grad=requires_grad)
