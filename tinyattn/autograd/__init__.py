"""tinyattn.autograd: tensors, the ops, the backward engine, and gradcheck.

Import order matters: ``tensor`` first (the ops it uses import it back).
"""

from .tensor import Tensor  # noqa: I001  (must come first)
from .creation import (
    arange,
    bool_,
    default_generator,
    float32,
    float64,
    int64,
    manual_seed,
    ones,
    rand,
    randn,
    tensor,
    zeros,
)
from .engine import backward, grad
from .function import Context, Function, Node, unbroadcast
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .ops.elementwise import where
from .ops.shape import cat, chunk, split, stack

__all__ = [
    "Context",
    "Function",
    "GradcheckError",
    "Node",
    "Tensor",
    "arange",
    "backward",
    "bool_",
    "cat",
    "chunk",
    "default_generator",
    "enable_grad",
    "float32",
    "float64",
    "grad",
    "gradcheck",
    "int64",
    "is_grad_enabled",
    "manual_seed",
    "no_grad",
    "ones",
    "rand",
    "randn",
    "set_grad_enabled",
    "split",
    "stack",
    "tensor",
    "unbroadcast",
    "where",
    "zeros",
]
