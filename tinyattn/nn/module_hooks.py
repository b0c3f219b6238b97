"""Module hooks, as torch's: code of yours around a module's forward, and on the gradients of its inputs and outputs.

* ``register_forward_pre_hook(fn)``: ``fn(module, args)`` before ``forward``; it may return new args.
* ``register_forward_hook(fn)``: ``fn(module, args, output)`` after it; it may return a new output.
* ``register_full_backward_pre_hook(fn)``: ``fn(module, grad_output)`` once the gradients of the module's
  outputs are known; it may return new ones.
* ``register_full_backward_hook(fn)``: ``fn(module, grad_input, grad_output)`` once the gradients of its
  inputs are; it may return new ones (what flows on to the layers before).

Each returns a handle whose ``remove()`` takes the hook off. ``Module.__call__`` runs ``forward`` alone while a
module has no hook; with one, ``call`` below.

**Backward hooks.** The gradients of all of a module's outputs (and, later, of all its inputs) must reach the
hook together. So while a module has backward hooks, its call packs its outputs into one flat tensor and
hands on slices of it (``_packed``), and the same for its inputs that require grad: each pack's gradient is
then one node's, complete when the pass takes it, and a tensor hook on it (``autograd/hooks.py``) sees them all.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..autograd import hooks
from ..autograd.tensor import Tensor, cat

if TYPE_CHECKING:
    from .module import Module


class ModuleHooks:
    """A module's hooks, each kind in the order they run (handle id -> function, with its options)."""

    def __init__(self) -> None:
        self.forward_pre: dict[int, tuple[Callable[..., Any], bool]] = {}
        self.forward: dict[int, tuple[Callable[..., Any], bool, bool]] = {}
        self.backward_pre: dict[int, Callable[..., Any]] = {}
        self.backward: dict[int, Callable[..., Any]] = {}


def add(module: Module, kind: str, entry: Any, prepend: bool) -> hooks.RemovableHandle:
    """Register ``entry`` among ``module``'s hooks of ``kind``; return its handle."""
    if module._hooks is None:
        object.__setattr__(module, "_hooks", ModuleHooks())
    table: dict[int, Any] = getattr(module._hooks, kind)
    function = entry[0] if isinstance(entry, tuple) else entry
    if not callable(function):
        raise TypeError(f"register_{kind}_hook: expected a callable, got {type(function).__name__}")
    handle = hooks.RemovableHandle(table)
    if prepend:
        others = dict(table)
        table.clear()
        table[handle.id] = entry
        table.update(others)
    else:
        table[handle.id] = entry
    return handle


def call(module: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``module(*args, **kwargs)`` with its hooks: pre-hooks, forward, forward hooks; with backward hooks, the
    inputs and outputs packed so that their gradients reach the hooks together (see the module's docstring)."""
    table = module._hooks
    assert table is not None  # (Module.__call__ comes here only for a module with hooks)
    for function, with_kwargs in list(table.forward_pre.values()):
        if with_kwargs:
            result = function(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        else:
            result = function(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    state = _BackwardState(module) if (table.backward or table.backward_pre) else None
    if state is not None:
        args = state.pack_inputs(args)
    output = module.forward(*args, **kwargs)
    for function, with_kwargs, _ in list(table.forward.values()):
        result = function(module, args, kwargs, output) if with_kwargs else function(module, args, output)
        if result is not None:
            output = result
    if state is not None:
        output = state.pack_outputs(output)
    return output


class _BackwardState:
    """One call's backward hooks: where its inputs and outputs were packed, and the gradients of its outputs once
    they are known."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.input_places: list[int] = []  # positions of the args that require grad
        self.arg_count = 0
        self.grad_output: tuple[Any, ...] | None = None

    def pack_inputs(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        self.arg_count = len(args)
        self.input_places = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not self.input_places:
            return args
        pieces = _packed([args[i] for i in self.input_places], self.on_input_gradient)
        new_args = list(args)
        for i, piece in zip(self.input_places, pieces):
            new_args[i] = piece
        return tuple(new_args)

    def pack_outputs(self, output: Any) -> Any:
        outputs = output if isinstance(output, tuple) else (output,)
        places = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not places:
            return output
        self.output_places, self.output_count = places, len(outputs)
        pieces = _packed([outputs[i] for i in places], self.on_output_gradient)
        new_outputs = list(outputs)
        for i, piece in zip(places, pieces):
            new_outputs[i] = piece
        return tuple(new_outputs) if isinstance(output, tuple) else new_outputs[0]

    def on_output_gradient(self, grads: list[Tensor]) -> list[Tensor] | None:
        """The gradients of the outputs, complete: backward pre-hooks, and full backward hooks if no input takes
        a gradient (then with ``grad_input`` all None, as torch)."""
        grad_output = _spread(grads, self.output_places, self.output_count)
        table = self.module._hooks
        for function in list(table.backward_pre.values()) if table is not None else []:
            result = function(self.module, grad_output)
            if result is not None:
                grad_output = _as_tuple(result, "backward pre-hook", len(grad_output))
        self.grad_output = grad_output
        if not self.input_places:
            self._full_hooks((None,) * self.arg_count)
        return [grad_output[i] for i in self.output_places]

    def on_input_gradient(self, grads: list[Tensor]) -> list[Tensor] | None:
        """The gradients of the inputs, complete: full backward hooks, which may replace them."""
        grad_input = self._full_hooks(_spread(grads, self.input_places, self.arg_count))
        return [grad_input[i] for i in self.input_places]

    def _full_hooks(self, grad_input: tuple[Any, ...]) -> tuple[Any, ...]:
        table = self.module._hooks
        grad_output = self.grad_output if self.grad_output is not None else ()
        for function in list(table.backward.values()) if table is not None else []:
            result = function(self.module, grad_input, grad_output)
            if result is not None:
                grad_input = _as_tuple(result, "backward hook", len(grad_input))
        return grad_input


def _spread(grads: list[Tensor], places: list[int], count: int) -> tuple[Any, ...]:
    """One entry per position, the gradients at ``places`` and None elsewhere (torch's ``grad_input`` layout)."""
    spread: list[Any] = [None] * count
    for i, g in zip(places, grads):
        spread[i] = g
    return tuple(spread)


def _as_tuple(result: Any, what: str, count: int) -> tuple[Any, ...]:
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != count:
        raise RuntimeError(f"{what} returned {len(result)} gradients, expected {count} (one per position)")
    return result


def _note_reached(reached: list[bool], i: int, grad: Tensor) -> None:
    """A slice's hook: its gradient reached it (the flat tensor's hook reads the note)."""
    reached[i] = True


def _packed(tensors: list[Tensor], on_gradient: Callable[[list[Any]], list[Any] | None]) -> list[Tensor]:
    """``tensors``, as slices of one flat tensor whose gradient ``on_gradient`` receives split back into their
    shapes (None for a slice no gradient reached, as torch), and may replace (a list of the same shapes)."""
    dtype = np.result_type(*(t.dtype for t in tensors))
    flat = cat([t.reshape(-1).to(dtype) for t in tensors])
    bounds = np.cumsum([0] + [t.numel() for t in tensors]).tolist()
    slices = [flat[lo:hi].reshape(t.shape).to(t.dtype) for lo, hi, t in zip(bounds, bounds[1:], tensors)]
    reached = [False] * len(slices)  # (each slice's own hook runs before the flat tensor's: the pass goes that way)

    def hook(grad: Tensor) -> Tensor | None:
        pieces = [grad[lo:hi].reshape(t.shape).to(t.dtype) if seen else None
                  for lo, hi, t, seen in zip(bounds, bounds[1:], tensors, reached)]
        reached[:] = [False] * len(slices)
        replaced = on_gradient(pieces)
        if replaced is None:
            return None
        for new, t in zip(replaced, tensors):
            if new is not None and tuple(new.shape) != tuple(t.shape):
                raise RuntimeError(f"a module backward hook returned a gradient of shape {tuple(new.shape)} for a "
                                   f"tensor of shape {tuple(t.shape)}")
        return cat([(new if new is not None else t.new_zeros(t.shape)).reshape(-1).to(dtype)
                    for new, t in zip(replaced, tensors)])

    for i, piece in enumerate(slices):
        hooks.register(piece, functools.partial(_note_reached, reached, i))
    hooks.register(flat, hook)
    return slices
