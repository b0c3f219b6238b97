"""tinyattn: multi-head attention and every gradient through it, in readable NumPy.

    import tinyattn as ta
    x = ta.randn(3, 5, 16, requires_grad=True)
"""

import numpy as _np

if int(_np.__version__.split(".")[0]) < 2:
    # NumPy 1.x promotes a 0-d float32 array with a Python number to float64 (value-based
    # casting): `1 - out * out` in a backward would silently change dtype. NumPy 2 follows
    # NEP 50, as torch does: a Python number never widens a tensor.
    raise ImportError(f"tinyattn needs NumPy >= 2.0 (found {_np.__version__}): pip install 'numpy>=2'")

from .autograd import (
    Tensor,
    arange,
    bool_,
    cat,
    chunk,
    enable_grad,
    float32,
    float64,
    int64,
    is_grad_enabled,
    manual_seed,
    no_grad,
    ones,
    rand,
    randn,
    split,
    stack,
    tensor,
    where,
    zeros,
)

__version__ = "0.1.0"

__all__ = [
    "Tensor",
    "arange",
    "bool_",
    "cat",
    "chunk",
    "enable_grad",
    "float32",
    "float64",
    "int64",
    "is_grad_enabled",
    "manual_seed",
    "no_grad",
    "ones",
    "rand",
    "randn",
    "split",
    "stack",
    "tensor",
    "where",
    "zeros",
]
