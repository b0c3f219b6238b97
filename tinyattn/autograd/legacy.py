"""The names of torch before 0.4, which programs still use: ``FloatTensor`` and its kin, and ``Variable``.

``torch.FloatTensor([1, 2])`` makes a float32 tensor and ``isinstance(x, torch.LongTensor)`` asks for
an int64 one; ``x.type(torch.FloatTensor)`` casts. ``Variable(t, requires_grad=True)`` is, as in
torch today, a tensor that shares ``t``'s memory with ``requires_grad`` set; ``isinstance(t, Variable)``
holds for every tensor. ``volatile=`` is gone (a warning says to use ``no_grad``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .tensor import Tensor, legacy_array


class LegacyTensorType(type):
    """A class such as ``FloatTensor``: calling it makes a tensor of its dtype, ``isinstance`` checks the dtype."""

    dtype: np.dtype

    @property
    def legacy_dtype(cls) -> np.dtype:
        """The dtype this class stands for (what ``x.type(FloatTensor)`` casts to)."""
        return cls.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        """``FloatTensor(2, 3)`` (zeros of that shape) or ``FloatTensor(data)``."""
        return Tensor._make(legacy_array(cls.dtype, args, cls.__name__, device))


def _legacy(name: str, dtype: Any) -> LegacyTensorType:
    return LegacyTensorType(name, (), {"dtype": np.dtype(dtype), "__module__": "tinyattn",
                                       "__doc__": f"Tensors of dtype {np.dtype(dtype)} (torch's legacy type)."})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
HalfTensor = _legacy("HalfTensor", np.float16)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
BoolTensor = _legacy("BoolTensor", np.bool_)
LEGACY_TYPES = (FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor,
                BoolTensor)


class _VariableType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Any, requires_grad: bool = False, volatile: Any = None) -> Tensor:
        """A new leaf sharing ``data``'s memory, with ``requires_grad`` set."""
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        out = data.detach()
        out.requires_grad_(requires_grad)
        return out


class Variable(metaclass=_VariableType):
    """``Variable(tensor, requires_grad=False)``: the tensor's data as a new leaf (torch's pre-0.4 wrapper)."""
