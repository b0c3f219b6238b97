"""tinyattn: multi-head attention and every gradient through it, in readable NumPy.

    import tinyattn as ta
    x = ta.randn(3, 5, 16, requires_grad=True)
"""

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
