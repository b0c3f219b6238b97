"""tinyattn.autograd: tensors, the ops, the backward engine, and gradcheck.

Layers, each importing only those below it: ``function`` (Function, Node, the
shared helpers) < ``ops`` (Functions on arrays) < ``tensor`` (Tensor, which runs
them) < ``engine`` (backward) < ``gradcheck`` and the explainer's ``trace``.
"""

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
from .function import Context, Function, LeafNode, Node, unbroadcast
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .tensor import Tensor, cat, chunk, split, stack, where

__all__ = [
    "Context",
    "Function",
    "GradcheckError",
    "LeafNode",
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
