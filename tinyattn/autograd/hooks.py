"""Tensor hooks: a function of yours that sees, and may replace, a tensor's gradient as backward computes it.

``h = x.register_hook(fn)``: during every later backward pass, ``fn(grad)`` runs on ``x``'s gradient once it is
complete; if it returns a tensor, that is ``x``'s gradient from then on (what flows on to the ops before ``x``,
and what a leaf's ``.grad`` receives). ``h.remove()`` takes it off. As torch.

**How it attaches.** A tensor's gradient is the gradient of the node it flows into (its ``grad_fn``, or a
leaf's node), and a hook is kept on that node, in ``node.tensor_hooks``. torch's backward pass
(``backprop.py``) takes each node's gradient out of its table once it is complete, and there, before anything
reads it, runs the node's hooks on it (``run``).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from .core.function import TensorBase
from .core.ops.shared import cast

_ids = itertools.count()


class RemovableHandle:
    """What registering a hook returns: ``remove()`` takes the hook off (also on leaving a ``with`` block)."""

    def __init__(self, hooks: dict[int, Any]) -> None:
        self.id = next(_ids)
        self._hooks: dict[int, Any] | None = hooks

    def remove(self) -> None:
        """Take the hook off; a second call does nothing."""
        if self._hooks is not None and self.id in self._hooks:
            del self._hooks[self.id]
        self._hooks = None

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def register(tensor: Any, hook: Callable[[Any], Any]) -> RemovableHandle:
    """``tensor.register_hook(hook)``: keep ``hook`` on the node ``tensor``'s gradient flows into."""
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable, got {type(hook).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = tensor.gradient_edge()
    if not node.tensor_hooks:
        node.tensor_hooks = {}  # (the node's own table: the class's is an empty one, shared)
        node.hooked_class = type(tensor)  # (the class of tensor a hook is shown the gradient as)
    handle = RemovableHandle(node.tensor_hooks)
    node.tensor_hooks[handle.id] = hook
    return handle


def run(node: Any, grad: Any) -> Any:
    """The node's hooks, in the order they were registered, on its complete gradient ``grad``: the gradient
    they leave (each may replace it)."""
    for hook in list(node.tensor_hooks.values()):
        grad = _hooked(hook, grad, node.hooked_class)
    return grad


def _hooked(hook: Callable[[Any], Any], grad: Any, tensor_class: Any) -> Any:
    """``hook`` on ``grad`` (an array, or a Tensor when the pass records: create_graph): the gradient it returns,
    fitted to ``grad``, or ``grad`` itself when it returns None."""
    on_arrays = isinstance(grad, np.ndarray)
    seen = tensor_class._make(grad) if on_arrays else grad
    result = hook(seen)
    if result is None:
        return grad
    if not isinstance(result, TensorBase):
        raise TypeError(f"hook {getattr(hook, '__name__', hook)!r} returned a {type(result).__name__}: a hook "
                        "returns a Tensor or None")
    if result.shape != seen.shape:
        raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the size of value: it returned "
                           f"a gradient of shape {tuple(result.shape)} for one of shape {tuple(seen.shape)}")
    if on_arrays:
        return np.asarray(result.array, dtype=grad.dtype)
    return cast(result, grad.dtype)
