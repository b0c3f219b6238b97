"""torch's ``torch.autograd.function``: ``Function`` (to subclass), ``FunctionCtx``, ``once_differentiable``.

The Function every op of tinyattn is built on, with ``apply``, ``Context`` and ``Node``, is the core's
(``core/function.py``); the ``Function`` here is torch's, built on it (``custom_function.py``).
"""

from .core.checks import broadcast_shapes, broadcasts_to, normalize_dim, normalize_dims
from .core.function import AccumulateGrad, Context, LeafNode, Node
from .core.ops.shared import cast, on_tensors, unbroadcast
from .custom_function import Function, FunctionCtx, once_differentiable

__all__ = [
    "AccumulateGrad", "Context", "Function", "FunctionCtx", "LeafNode", "Node", "broadcast_shapes", "broadcasts_to",
    "cast", "normalize_dim", "normalize_dims", "on_tensors", "once_differentiable", "unbroadcast",
]
