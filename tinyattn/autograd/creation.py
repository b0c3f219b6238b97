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

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .core import dtypes, registry
from .core.dtypes import as_dtype, bool_, float32, float64, int64  # noqa: F401  (re-exported)
from .devices import check_device

if TYPE_CHECKING:
    from .tensor import Tensor

ArrayLike = Any

_generator = np.random.default_rng()
_initial_seed: int | None = None


def to_array(data: ArrayLike, dtype: Any = None) -> np.ndarray:
    """Convert ``data`` to an ndarray with torch's default dtypes.

    Python floats (and lists of them) become the default float (float32), Python ints int64, bools
    bool; a NumPy array keeps its dtype (float64 stays float64). Strings,
    objects and complex numbers raise ``TypeError``.
    """
    if isinstance(data, registry.TensorBase):
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


def _new(op: str, data: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    check_device(op, device)
    t = registry.Tensor._make(data)
    t.requires_grad = requires_grad  # (refused for int and bool dtypes, as torch)
    return t


def tensor(
    data: ArrayLike, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (Python floats become the default float dtype, ints int64)."""
    check_device("tensor", device)
    t = registry.Tensor._make(to_array(data, None if dtype is None else as_dtype(dtype)))
    t.requires_grad = requires_grad  # (refused for int and bool dtypes, as torch)
    return t


def as_tensor(data: ArrayLike, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory with a NumPy array or tensor of the same dtype (else a copy)."""
    check_device("as_tensor", device)
    if isinstance(data, registry.TensorBase):
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
    return registry.Tensor._make(ndarray)


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
    fill_value = fill_value.item() if isinstance(fill_value, registry.TensorBase) else fill_value
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
        if isinstance(value, registry.TensorBase) and value.requires_grad:
            raise NotImplementedError(f"normal: no gradient to {name} here; pass {name}.detach()")
    m, s = (v.array if isinstance(v, registry.TensorBase) else v for v in (mean, std))
    if np.any(np.asarray(s) < 0):
        raise RuntimeError("normal: std must be >= 0")
    shape = _size("normal", (size,)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    dtype = next((v.dtype for v in (mean, std) if isinstance(v, registry.TensorBase)), dtypes.DEFAULT_FLOAT)
    if dtype.kind != "f":
        raise TypeError(f"normal: expected floating-point mean and std, got {dtype}")
    return registry.Tensor._make(_rng("normal", generator).normal(m, s, shape).astype(dtype))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """Indices drawn from each row's categorical distribution, with weights ``input`` (need not sum to 1)."""
    weights = np.asarray(input.array if isinstance(input, registry.TensorBase) else input, dtype=np.float64)
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
    return registry.Tensor._make(out.reshape(weights.shape[:-1] + (num_samples,)).astype(np.int64))


# -- like another tensor ------------------------------------------------------------


def _like(input: Tensor, dtype: Any) -> tuple[tuple[int, ...], Any]:
    if not isinstance(input, registry.TensorBase):
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
