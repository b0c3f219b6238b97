"""Tensor hooks: a function of yours that sees, and may replace, a tensor's gradient as backward computes it.

``h = x.register_hook(fn)``: during every later backward pass, ``fn(grad)`` runs on ``x``'s gradient once it is
complete; if it returns a tensor, that is ``x``'s gradient from then on (what flows on to the ops before ``x``,
and what a leaf's ``.grad`` receives). ``h.remove()`` takes it off. As torch.

**How it attaches.** A tensor's gradient is the gradient of the node it flows into (its ``grad_fn``, or a
leaf's node), and a hook is kept on that node. The backward pass (``core/engine.py``) keeps each node's running
total in a table and takes it out, complete, with ``grads.pop(node)`` before anything reads it. While some hook
is registered, the table torch's ``backward`` and ``grad`` hand the pass is a ``HookedGradients``, whose ``pop``
runs the node's hooks on the gradient on its way out. With no hook registered, the pass gets a plain dict:
hooks cost nothing on the way of a backward that has none.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

import numpy as np

from .core import registry

_registered = 0  # how many hooks are registered and not yet removed, on any tensor
_ids = itertools.count()


class RemovableHandle:
    """What registering a hook returns: ``remove()`` takes the hook off (also on leaving a ``with`` block)."""

    def __init__(self, hooks: dict[int, Any], live: set[int] | None = None) -> None:
        self.id = next(_ids)
        self._hooks: dict[int, Any] | None = hooks
        self._live = live  # a tensor hook's: the ids of its node's hooks that count in _registered

    def remove(self) -> None:
        """Take the hook off; a second call does nothing."""
        global _registered
        if self._hooks is not None and self.id in self._hooks:
            del self._hooks[self.id]
        if self._live is not None and self.id in self._live:
            self._live.discard(self.id)
            _registered -= 1
        self._hooks = None

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def register(tensor: Any, hook: Callable[[Any], Any]) -> RemovableHandle:
    """``tensor.register_hook(hook)``: keep ``hook`` on the node ``tensor``'s gradient flows into."""
    global _registered
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable, got {type(hook).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = tensor.gradient_edge()
    if getattr(node, "tensor_hooks", None) is None:
        node.tensor_hooks = {}
        node.live_hooks = set()
        # a graph freed: its hooks no longer count (the finalizer holds only their ids, so the node can go)
        weakref.finalize(node, _forget, node.live_hooks)
    handle = RemovableHandle(node.tensor_hooks, node.live_hooks)
    node.tensor_hooks[handle.id] = hook
    node.live_hooks.add(handle.id)
    _registered += 1
    return handle


def _forget(live: set[int]) -> None:
    """A node with hooks is gone: its hooks, unless removed already, no longer count."""
    global _registered
    _registered -= len(live)
    live.clear()


def gradient_table(grads: dict[Any, Any]) -> dict[Any, Any]:
    """The table of gradients a backward pass starts from: ``grads`` itself, or, while hooks are registered, a
    ``HookedGradients`` holding them."""
    if _registered == 0:
        return grads
    return HookedGradients(grads)


class HookedGradients(dict):
    """A node -> gradient table whose ``pop`` runs the node's hooks on the gradient it hands out."""

    def pop(self, node: Any, *default: Any) -> Any:
        """The node's gradient, taken out of the table, after the node's hooks ran on it."""
        grad = super().pop(node, *default)
        hooks = getattr(node, "tensor_hooks", None)
        if grad is None or not hooks:
            return grad
        for hook in list(hooks.values()):
            grad = _hooked(hook, grad)
        return grad


def _hooked(hook: Callable[[Any], Any], grad: Any) -> Any:
    """``hook`` on ``grad`` (an array, or a Tensor when the pass records: create_graph): the gradient it returns,
    fitted to ``grad``, or ``grad`` itself when it returns None."""
    on_arrays = isinstance(grad, np.ndarray)
    seen = registry.Tensor._make(grad) if on_arrays else grad
    result = hook(seen)
    if result is None:
        return grad
    if not isinstance(result, registry.TensorBase):
        raise TypeError(f"hook {getattr(hook, '__name__', hook)!r} returned a {type(result).__name__}: a hook "
                        "returns a Tensor or None")
    if result.shape != seen.shape:
        raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the size of value: it returned "
                           f"a gradient of shape {tuple(result.shape)} for one of shape {tuple(seen.shape)}")
    if on_arrays:
        return np.asarray(result.array, dtype=grad.dtype)
    return result if result.dtype == grad.dtype else result.to(grad.dtype)
