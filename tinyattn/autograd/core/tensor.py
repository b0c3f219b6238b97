"""``Tensor``: an ``np.ndarray`` plus what reverse-mode autograd needs.

A tensor holds its value in ``.array``. If it ``requires_grad``, every op applied to it records a node
(``Function.apply``, function.py); ``backward()`` walks those nodes from the output back to the leaves
(engine.py) and stores ``dL/dleaf`` in ``leaf.grad``.

Three attributes carry the graph:

* ``requires_grad``: whether ops on this tensor are recorded;
* ``grad_fn``: the node of the op that made this tensor (None for a leaf, one the user made);
* ``grad``: after ``backward()``, a leaf's ``dL/dself``, a tensor of its own shape.

**Where a method lives.** A method the chapter's multi-head attention calls (``attention.py``: the arithmetic
operators, ``@``, ``reshape``, ``transpose``, ``softmax``, ``sum``...) is here, each one line that applies an op
(``ops/``). Every other method of torch's is in tinyattn's torch-like ``Tensor`` (``autograd/tensor.py``), which
builds on this class; a one-input elementwise op that names itself needs no method at all (``x.sinh()`` is made
from the op there).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from . import checks, engine
from .function import Node, TensorBase
from .ops.elementwise import Add, Div, Mul, Neg, Pow, Sub
from .ops.matmul import MatMul
from .ops.reduction import Mean, Sum
from .ops.shape import Reshape, Transpose
from .ops.softmax import LogSoftmax, Softmax

# The class of ``self``: an operator of a class built on Tensor returns that class (apply makes it: function.py)
T = TypeVar("T", bound="Tensor")


class Tensor(TensorBase):
    """An n-dimensional array that can record the ops applied to it.

    Built on ``TensorBase`` (function.py): what the graph reads of a tensor.

    Attributes:
        array: the value, an ``np.ndarray`` (what the ops compute on).
        grad: ``dL/dself`` after ``backward()`` (for a leaf), a Tensor, else None.
        requires_grad: whether ops on this tensor are recorded.
        name: an optional human label (``"Q"``, ``"scores"``) used by the explainer.
    """

    name: str | None = None

    def __init__(self, array: Any, requires_grad: bool = False) -> None:
        self.array = np.asarray(array)
        self.requires_grad = requires_grad

    # -- the graph -----------------------------------------------------------

    @property
    def grad_fn(self) -> Node | None:
        """The node of the op that made this tensor, or None for a leaf."""
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True if no recorded op made this tensor (the user did, or it does not require grad)."""
        return self._grad_fn is None

    @property
    def grad(self: T) -> T | None:
        """``dL/dself`` after ``backward()`` (a leaf's), else None."""
        return self._grad

    @grad.setter
    def grad(self: T, value: T | None) -> None:
        checks.assigned_grad(self, value, Tensor)
        self._grad = value

    def backward(self, gradient: Any = None) -> None:
        """Add ``d self / d leaf`` (times ``gradient``: 1 by default, for one element) to every leaf's ``.grad``."""
        engine.backward(self, gradient)

    # -- arithmetic: each operator applies an op (ops/elementwise.py, ops/matmul.py) --

    def __add__(self: T, other: Any) -> T:
        return Add.apply(self, other)

    def __radd__(self: T, other: Any) -> T:
        return Add.apply(self, other)  # (2 + x is x + 2: the tensor first, as torch records it)

    def __sub__(self: T, other: Any) -> T:
        return Sub.apply(self, other)

    def __rsub__(self: T, other: Any) -> T:
        return Sub.apply(other, self)

    def __mul__(self: T, other: Any) -> T:
        return Mul.apply(self, other)

    def __rmul__(self: T, other: Any) -> T:
        return Mul.apply(self, other)  # (2 * x is x * 2: the tensor first, as torch records it)

    def __truediv__(self: T, other: Any) -> T:
        return Div.apply(self, other)

    def __rtruediv__(self: T, other: Any) -> T:
        return Div.apply(other, self)

    def __pow__(self: T, other: Any) -> T:
        return Pow.apply(self, other)

    def __rpow__(self: T, other: Any) -> T:
        return Pow.apply(other, self)

    def __neg__(self: T) -> T:
        return Neg.apply(self)

    def __matmul__(self: T, other: Any) -> T:
        return MatMul.apply(self, other)

    # -- what multi-head attention needs besides: each method applies one op (ops/) --------------------------

    def reshape(self: T, *shape: Any) -> T:
        """The same elements in a new shape (one entry may be -1): ``x.reshape(B, L, h, d)``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Reshape.apply(self, shape=shape)

    def transpose(self: T, dim0: int, dim1: int) -> T:
        """Swap two dims: ``k.transpose(-2, -1)`` is ``Kᵀ`` for each head."""
        return Transpose.apply(self, dim0=dim0, dim1=dim1)

    def softmax(self: T, dim: int) -> T:
        """``exp(x) / sum(exp(x), dim)``, computed stably."""
        return Softmax.apply(self, dim=dim)

    def log_softmax(self: T, dim: int) -> T:
        """``x - logsumexp(x, dim)``, computed stably."""
        return LogSoftmax.apply(self, dim=dim)

    def sum(self: T, dim: Any = None, keepdim: bool = False) -> T:
        """Sum over ``dim`` (an int, a tuple, or None for all)."""
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self: T, dim: Any = None, keepdim: bool = False) -> T:
        """Mean over ``dim`` (an int, a tuple, or None for all)."""
        return Mean.apply(self, dim=dim, keepdim=keepdim)
