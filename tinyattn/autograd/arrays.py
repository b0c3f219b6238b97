"""What tinyattn's tensors are made from: data converted to arrays with torch's default dtypes, sizes read as torch
reads them, and the random generator behind ``randn``, initialisation and dropout.

The factories (``creation.py``) and the tensor's own methods (``x.new_zeros``, ``x.uniform_``) both build on these.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import dtypes
from .core.dtypes import as_dtype
from .core.function import TensorBase
from .devices import check_device

ArrayLike = Any

_generator = np.random.default_rng()
_initial_seed: int | None = None


def to_array(data: ArrayLike, dtype: Any = None) -> np.ndarray:
    """Convert ``data`` to an ndarray with torch's default dtypes.

    Python floats (and lists of them) become the default float (float32), Python ints int64, bools
    bool; a NumPy array keeps its dtype (float64 stays float64). Strings,
    objects and complex numbers raise ``TypeError``.
    """
    if isinstance(data, TensorBase):
        data = data.array
    from_numpy = isinstance(data, (np.ndarray, np.generic))
    try:
        arr = np.array(data, dtype=dtype)
    except (ValueError, TypeError) as err:
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__}: {err}") from None
    if arr.dtype.kind not in "fiub":
        raise TypeError(
            f"tensor: unsupported data type {arr.dtype} (from {type(data).__name__}); "
            "expected numbers or booleans"
        )
    if dtype is None and not from_numpy:
        if arr.dtype.kind == "f":
            arr = arr.astype(dtypes.DEFAULT_FLOAT)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
    return arr


def _fresh_seed() -> int:
    """A seed from the operating system's entropy, in ``[0, 2**63)``."""
    return int(np.random.SeedSequence().entropy % 2**63)  # type: ignore[operator]


class Generator:
    """A source of random numbers of its own (torch's ``Generator``), for ``generator=``."""

    def __init__(self, device: Any = "cpu") -> None:
        check_device("Generator", device)
        self.manual_seed(_fresh_seed())

    def manual_seed(self, seed: int) -> Generator:
        """Restart the generator from ``seed``; returns the generator."""
        self._initial = int(seed)
        self.rng = np.random.default_rng(self._initial)
        return self

    def initial_seed(self) -> int:
        """The seed the generator started from."""
        return self._initial

    def seed(self) -> int:
        """Reseed from fresh entropy; returns the new seed."""
        return self.manual_seed(_fresh_seed()).initial_seed()


def manual_seed(seed: int) -> Generator:
    """Reseed the generator behind ``randn``, ``rand``, initialisation and dropout; returns it, as torch."""
    global _generator, _initial_seed
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _generator, _initial_seed = np.random.default_rng(int(seed)), int(seed)
    g = Generator.__new__(Generator)
    g._initial, g.rng = int(seed), _generator
    return g


def initial_seed() -> int:
    """The seed given to the last ``manual_seed`` (a fresh random one before any)."""
    global _initial_seed
    if _initial_seed is None:
        manual_seed(_fresh_seed())
    return _initial_seed  # type: ignore[return-value]


def seed() -> int:
    """Reseed the default generator from fresh entropy; returns the seed."""
    return manual_seed(_fresh_seed()).initial_seed()


def default_generator() -> np.random.Generator:
    """The NumPy generator that ``manual_seed`` controls (what initialisation and dropout draw from)."""
    return _generator


def _rng(op: str, generator: Any) -> np.random.Generator:
    if generator is None:
        return _generator
    if isinstance(generator, Generator):
        return generator.rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"{op}: generator must be a tinyattn Generator, got {type(generator).__name__}")


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


def _size_given(op: str, size: tuple[Any, ...], keyword: dict[str, Any]) -> tuple[Any, ...]:
    """The sizes, given spread (``zeros(2, 3)``) or as torch's ``size=`` keyword (``empty(size=(2, 3))``)."""
    if not keyword:
        return size
    if set(keyword) != {"size"} or size:
        extra = sorted(set(keyword) - {"size"})
        raise TypeError(f"{op}() got an unexpected keyword argument {extra[0]!r}" if extra else
                        f"{op}(): the size is given twice, spread and as size=")
    return (keyword["size"],)


def float_dtype(dtype: Any, device: Any = None) -> np.dtype:
    """``dtype`` as a NumPy float dtype (None: the default, float32); other kinds raise ``TypeError``.

    A module's ``device=`` is checked here too: the CPU (or None) only, as ``check_device``."""
    check_device("device", device)
    dtype = as_dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a floating type, got {dtype}")
    return dtype


def multinomial_indices(weights: Any, num_samples: int, replacement: bool, generator: Any) -> np.ndarray:
    """Indices drawn from each row's categorical distribution, with weights ``weights`` (need not sum to 1)."""
    weights = np.asarray(weights.array if isinstance(weights, TensorBase) else weights, dtype=np.float64)
    if weights.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {weights.shape}")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    rows = weights.reshape(-1, weights.shape[-1])
    if np.any(rows.sum(axis=1) <= 0):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and np.any((rows > 0).sum(axis=1) < num_samples):
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = _rng("multinomial", generator)
    out = np.stack([rng.choice(len(p), size=num_samples, replace=replacement, p=p / p.sum()) for p in rows])
    return out.reshape(weights.shape[:-1] + (num_samples,)).astype(np.int64)
