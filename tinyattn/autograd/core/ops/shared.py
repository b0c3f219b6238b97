"""What the ops share: ``unbroadcast``, the one place broadcasting is undone, and two helpers for a backward
that runs on tensors as well as on arrays (when a gradient is itself differentiated).

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..function import TensorBase


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` down to ``shape`` (and cast to ``dtype``).

    Forward broadcasting copies an input along new leading axes and along axes
    of size 1, so its gradient is the sum of the upstream gradient over exactly
    those axes.
    """
    if grad.shape == shape and (dtype is None or grad.dtype == dtype):
        return grad  # nothing was broadcast
    # BEGIN TASK unbroadcast
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    # END TASK
    if dtype is not None and grad.dtype != dtype:
        grad = cast(grad, dtype)
    return grad


def on_tensors(*xs: Any) -> bool:
    """True when a backward computes on tensors rather than arrays (a gradient being differentiated in turn)."""
    for x in xs:
        if isinstance(x, TensorBase):
            return True
    return False


def cast(x: Any, dtype: Any) -> Any:
    """``x`` in ``dtype``: ``astype`` for an array, ``to`` for a tensor (a backward recorded as ops)."""
    if isinstance(x, (np.ndarray, np.generic)):  # (an array, or a NumPy scalar)
        return x.astype(dtype, copy=False)
    return x.to(dtype)
