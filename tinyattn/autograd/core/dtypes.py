"""torch's dtype names, each a NumPy dtype: ``ta.float32`` is ``np.float32``, ``ta.long`` is ``np.int64``.

A tensor's ``.dtype`` is a ``np.dtype``, and it compares equal to these names
(``x.dtype == ta.float32``). ``set_default_dtype`` changes what a Python float
becomes (``ta.tensor(1.0)``, ``ta.zeros(2)``, the modules' weights, int/float
promotion). NumPy has no ``bfloat16``: the name exists so that code choosing a
dtype can mention it, and using it raises ``TypeError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULT_FLOAT = np.dtype(np.float32)  # torch's default dtype: what int with float, or a float scalar alone, gives


def _category(dtype: np.dtype) -> int:
    return {"b": 0, "i": 1, "u": 1, "f": 2}[dtype.kind]


def result_type(*operands: Any) -> np.dtype:
    """torch's type promotion: the dtype an op on ``operands`` computes in.

    The highest category (bool < integer < floating) among all operands wins. Within
    it, the dtype comes from the first of these groups that holds an operand of that
    category: arrays with dimensions (promoted among themselves, float32 with float64
    gives float64), then 0-d arrays, then Python and NumPy scalars, which give the
    default dtype of their category (``bool``, ``int64``, ``float32``). So a scalar never
    promotes a float32 tensor (``x / np.sqrt(d_k)`` stays float32), and an int tensor with
    a float scalar gives float32, as in torch.
    """
    tiers: list[list[np.dtype]] = [[], [], []]  # with dims, 0-d, scalars
    for x in operands:
        if isinstance(x, np.ndarray):
            tiers[0 if x.ndim else 1].append(x.dtype)
        elif isinstance(x, (bool, np.bool_)):
            tiers[2].append(np.dtype(np.bool_))
        elif isinstance(x, (int, np.integer)):
            tiers[2].append(np.dtype(np.int64))
        elif isinstance(x, (float, np.floating)):
            tiers[2].append(DEFAULT_FLOAT)
        else:
            raise TypeError(f"unsupported operand of type {type(x).__name__}")
    highest = max(_category(d) for tier in tiers for d in tier)
    for tier in tiers:
        same = [d for d in tier if _category(d) == highest]
        if same:
            return np.result_type(*same)
    raise ValueError("result_type: no operands")


def promote(dtype: np.dtype, x: Any) -> Any:
    """``x`` as ``dtype``: an array cast (no copy if it already is), a scalar made a NumPy scalar."""
    if isinstance(x, np.ndarray):
        return x.astype(dtype, copy=False)
    return dtype.type(x)


float32 = np.float32
float64 = np.float64
float16 = np.float16
int64 = np.int64
int32 = np.int32
int16 = np.int16
int8 = np.int8
uint8 = np.uint8
bool_ = np.bool_
# torch's other spellings of the same dtypes (``float``, ``int``, ``bool`` are bound as
# ``ta.float``... by the package namespace: here they would shadow Python's builtins)
double = np.float64
half = np.float16
long = np.int64
short = np.int16

inf = float("inf")
nan = float("nan")
pi = float(np.pi)
e = float(np.e)


class UnsupportedDtype:
    """A torch dtype NumPy lacks (``bfloat16``, complex): naming it works, making a tensor of it raises."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    def __repr__(self) -> str:
        return f"tinyattn.{self.name}"

    @property
    def dtype(self) -> np.dtype:
        """What ``np.dtype(...)`` asks for: refused, with the reason."""
        raise TypeError(f"dtype {self.name} is not supported: {self.why}")


bfloat16 = UnsupportedDtype("bfloat16", "NumPy has no bfloat16 (use float32, or float16)")
complex64 = UnsupportedDtype("complex64", "tinyattn has no complex tensors")
complex128 = UnsupportedDtype("complex128", "tinyattn has no complex tensors")


def as_dtype(dtype: Any) -> np.dtype:
    """``dtype`` (a name above, a NumPy dtype, or None for the default float) as a ``np.dtype``."""
    if dtype is None:
        return DEFAULT_FLOAT
    if isinstance(dtype, UnsupportedDtype):  # (NumPy 2.0 hides the reason its .dtype gives; say it here)
        raise TypeError(f"dtype {dtype.name} is not supported: {dtype.why}")
    try:
        result = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"dtype: {err}") from None
    if result.kind not in "fiub":
        raise TypeError(f"dtype {result} is not supported (numbers and booleans only)")
    return result


def get_default_dtype() -> np.dtype:
    """The dtype Python floats become (float32 unless ``set_default_dtype`` changed it), as torch."""
    return DEFAULT_FLOAT


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (float32, float64 or float16) the dtype Python floats become, as torch."""
    dtype = as_dtype(d)
    if dtype.kind != "f":
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the default type, got {dtype}")
    global DEFAULT_FLOAT
    DEFAULT_FLOAT = dtype


def finfo(type: Any = None) -> np.finfo:
    """Machine limits of a float dtype (``eps``, ``max``, ``min``, ``tiny``); None: the default dtype."""
    dtype = as_dtype(type)
    if dtype.kind != "f":
        raise TypeError(f"finfo: expected a floating-point dtype, got {dtype} (use iinfo)")
    return np.finfo(dtype)


def iinfo(type: Any) -> np.iinfo:
    """Limits of an integer dtype (``max``, ``min``, ``bits``)."""
    dtype = as_dtype(type)
    if dtype.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, got {dtype} (use finfo)")
    return np.iinfo(dtype)


def is_floating_point(input: Any) -> bool:
    """True if ``input`` (a tensor) has a floating-point dtype."""
    return bool(np.dtype(input.dtype).kind == "f")
