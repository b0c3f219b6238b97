"""The node torch's features need, built on the core's ``Node``: versions, freeing, and a recorded backward.

The core's node (``core/function.py``) holds the op, its context and its edges, and its ``backward`` is the
op's formula. torch adds three things, each here:

* **The version check.** An op that saved an input's array must refuse its backward once that tensor was
  changed in place (``x.mul_(2)``, an optimizer step): the saved array no longer holds the forward's value.
  A node notes each such input with its version (torch's version counter) and compares before backward.
* **Freeing.** After a backward pass (unless ``retain_graph``) a node drops what forward saved; a second
  backward through it is refused, as torch refuses it.
* **A recorded backward.** With ``create_graph=True`` the backward pass hands ``backward`` a ``record`` function
  (``higher_order.backward_graph``) that runs the op's backward as recorded ops instead. A fused op (one with
  a ``composed`` twin) keeps its inputs for that: its derivative is taken through the twin, recomputed.

Both also keep the hooks registered on the tensor whose gradient flows into them (``hooks.py``).
tinyattn's ``Tensor`` names ``GraphNode`` and ``GraphLeaf`` as its ``node_class`` and ``leaf_class``
(``tensor.py``), so every op on its tensors records one.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .core import checks
from .core.function import Context, Function, LeafNode, Node


class GraphNode(Node):
    """A recorded op, with torch's version check, freeing and recorded backward (see the module's docstring)."""

    released = False  # True once a backward pass freed what forward saved
    inputs: tuple[Any, ...] = ()  # a fused op's inputs, for its composed twin
    saved_versions: Sequence[tuple[Any, int]] = ()  # (input tensor, its version) for each input forward saved
    tensor_hooks: dict[int, Any] | None = None  # the hooks of the tensor whose gradient this is (hooks.py)
    hooked_class: Any = None

    def __init__(self, fn: type[Function], ctx: Context, inputs: tuple[Any, ...]) -> None:
        super().__init__(fn, ctx, inputs)
        if fn.composed is not None:
            self.inputs = inputs
        if ctx.saved_tensors:
            self.saved_versions = saved_versions(ctx.saved_tensors, inputs)

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """torch's view of the edges: ``((node, 0), ...)``, one per input (``(None, 0)`` for one without a gradient)."""
        return tuple((edge, 0) for edge in self.edges)

    def backward(self, grad_output: Any, record: Any = None) -> tuple[Any, ...]:
        """The op's backward, once what forward saved is known unchanged; ``record`` (with create_graph:
        ``higher_order.backward_graph``) runs it as recorded ops instead."""
        if self.released:
            raise released_error(self)
        for tensor, version in self.saved_versions:
            if tensor._version != version:
                raise modified_error(self, tensor, version)
        if record is None:
            return super().backward(grad_output)
        return checks.gradients_fit(self.name, record(self, grad_output), self.input_meta)

    def release(self) -> None:
        """Free what only backward reads: what forward saved, the inputs it kept and their (shape, dtype).

        The edges stay, as torch's ``next_functions`` do.
        """
        self.ctx = None
        self.released = True
        self.saved_versions = ()
        self.inputs = ()
        self.input_meta = ()

    def output_changed(self, array: np.ndarray) -> None:
        """An in-place op overwrote this node's output ``array``: if backward reads it (forward saved it), refuse."""
        if self.ctx is not None and any(s is array for s in self.ctx.saved_tensors):
            self.saved_versions = (*self.saved_versions, (OverwrittenOutput(array.shape, self.name), 0))


class GraphLeaf(LeafNode):
    """A leaf's node, as torch shows it: no inputs, so no ``next_functions``."""

    next_functions: tuple[tuple[Node | None, int], ...] = ()
    tensor_hooks: dict[int, Any] | None = None  # the leaf's hooks (hooks.py)
    hooked_class: Any = None


class OverwrittenOutput:
    """Stands, in ``saved_versions``, for a node's output that an in-place op changed after forward saved it."""

    _version = 1

    def __init__(self, shape: tuple[int, ...], op: str) -> None:
        self.shape = shape
        self.op = op


def saved_versions(saved: tuple[Any, ...], inputs: tuple[Any, ...]) -> tuple[tuple[Any, int], ...]:
    """``(tensor, version)`` for each input whose very array forward saved: torch's saved-variable check (and,
    for a backward recorded as ops, the inputs it computes on, history and all). A tensor of the core's own
    class has no version counter (nothing changes it in place) and is not among them."""
    versions = []
    for x in inputs:
        if hasattr(x, "_version"):
            for s in saved:
                if s is x.array:
                    versions.append((x, x._version))
                    break
    return tuple(versions)


def released_error(node: Node) -> RuntimeError:
    """torch's message for a second backward through a graph the first one freed."""
    return RuntimeError(
        f"Trying to backward through the graph a second time (at {node.name}): its saved arrays "
        "were freed after the first backward. Pass retain_graph=True to the first backward() "
        "if you need to backward twice."
    )


def modified_error(node: Node, tensor: Any, version: int) -> RuntimeError:
    """torch's message for a saved value changed in place between forward and backward."""
    if isinstance(tensor, OverwrittenOutput):
        what = f"the output of {tensor.op}"
    else:
        what = type(tensor).__name__
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{what} of shape {tuple(tensor.shape)}] is at version "
        f"{tensor._version}; expected version {version} instead ({node.name}.backward needs its value "
        "from the forward pass: an optimizer step or an in-place op ran between forward and backward)"
    )

