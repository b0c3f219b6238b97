"""Ways to make tensors: ``tensor``, ``zeros``, ``ones``, ``arange``, ``randn``, ``rand``.

Random tensors come from one NumPy ``Generator``; ``manual_seed(s)`` replaces
it, which makes every later ``randn``/``rand`` (and the modules' initial
weights, and dropout masks) reproducible.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .tensor import ArrayLike, Tensor

float32 = np.float32
float64 = np.float64
int64 = np.int64
bool_ = np.bool_

_generator = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the generator behind ``randn``, ``rand``, initialisation and dropout."""
    global _generator
    _generator = np.random.default_rng(seed)
    return _generator


def default_generator() -> np.random.Generator:
    """The generator that ``manual_seed`` controls."""
    return _generator


def _size(op: str, shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` alike; as torch, no size at all, a non-int or a negative size is refused."""
    if not shape:
        raise TypeError(f"{op}: the size is missing (a 0-d tensor has size ())")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"{op}: size must be ints, got {shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative size in {shape}")
    return tuple(int(s) for s in shape)


def float_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as a NumPy float dtype (None: float32, torch's default); other kinds raise ``TypeError``."""
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a floating type, got {dtype}")
    return dtype


def tensor(data: ArrayLike, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (floats default to float32)."""
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def zeros(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return Tensor(np.zeros(_size("zeros", shape), dtype=float_dtype(dtype)), requires_grad=requires_grad)


def ones(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return Tensor(np.ones(_size("ones", shape), dtype=float_dtype(dtype)), requires_grad=requires_grad)


def randn(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Samples from the standard normal distribution."""
    data = _generator.standard_normal(_size("randn", shape)).astype(float_dtype(dtype))
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape: int | Sequence[int], dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Samples from the uniform distribution on [0, 1)."""
    data = _generator.random(_size("rand", shape)).astype(float_dtype(dtype))
    return Tensor(data, requires_grad=requires_grad)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None) -> Tensor:
    """``start, start + step, ...`` below ``end`` (ints give int64, floats float32)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: end {end} cannot be reached from start {start} with step {step}")
    if dtype is None:
        all_ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if all_ints else np.float32
    return Tensor(np.arange(start, end, step).astype(dtype))
