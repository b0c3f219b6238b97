"""The backward pass: the chain rule, applied node by node from the output to the leaves.

``propagate`` is the whole algorithm:

1. Order the nodes behind the output so that each comes before every node that
   produced one of its inputs (an explicit stack, no recursion, so a chain of
   10,000 ops is fine).
2. Visit them in that order. A node's output gradient is complete once every
   node that used its output has been visited, which that order guarantees.
   Its ``backward`` turns that gradient into one gradient per input, and each
   is added to the running total of the node it flows into.

Leaves are nodes too (``LeafNode``, with no inputs): the loop passes their gradient on to
whoever wants it and goes to the next node, leaving the leaf's node whole for its next
graph. ``backward`` and ``grad`` are thin layers over it: the
first stores the gradient reaching each leaf (and ``retain_grad()`` tensor) in
``.grad``, the second returns the gradients reaching the tensors asked for.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from .function import Node
from .grad_mode import active_recorder
from .tensor import Tensor, _unwrap


def _released_error(node: Node) -> RuntimeError:
    return RuntimeError(
        f"Trying to backward through the graph a second time (at {node.name}): its saved arrays "
        "were freed after the first backward. Pass retain_graph=True to the first backward() "
        "if you need to backward twice."
    )


_INPUTS_DONE = object()  # (a marker on topological_order's stack)


def topological_order(root: Node) -> list[Node]:
    """The nodes behind ``root``, each before every node that produced one of its inputs."""
    order: list[Node] = []
    visited: set[Node] = set()
    stack: list[Any] = [root]  # nodes to visit; _INPUTS_DONE above a node: everything behind it is in order
    while stack:
        node = stack.pop()
        if node is _INPUTS_DONE:
            order.append(stack.pop())
        elif node not in visited:
            if node.released:
                raise _released_error(node)
            visited.add(node)
            stack.append(node)
            stack.append(_INPUTS_DONE)
            for edge in node.edges:
                if edge is not None:  # (one already visited is skipped when popped)
                    stack.append(edge)
    order.reverse()  # output first
    return order


def propagate(
    root: Node, grad_root: np.ndarray, retain_graph: bool, wanted: dict[Node, Any] | None = None
) -> Iterator[tuple[Node, np.ndarray]]:
    """Run every node's backward behind ``root``, from the output to the leaves.

    Yields each node whose gradient is wanted, with its complete output gradient, before its
    backward runs: the nodes in ``wanted``, or (by default) those whose tensor keeps ``.grad``.
    """
    grads: dict[Node, np.ndarray] = {root: grad_root}  # node -> dL/d(its output), summed over uses
    recorder = active_recorder()  # (the explainer's trace(), if it is watching)
    for node in topological_order(root):
        grad_output = grads.pop(node, None)
        if grad_output is None:  # every path from the output to this node carried a None gradient
            continue
        if node in wanted if wanted is not None else node.retained is not None:
            yield node, grad_output
        if not node.edges:  # a leaf: its gradient flows no further, and its node serves the leaf's next graph
            continue
        grad_inputs = node.backward(grad_output)
        if recorder is not None:
            recorder.backward(node, grad_output, grad_inputs)
        for edge, grad_input in zip(node.edges, grad_inputs):
            if grad_input is not None:  # (None also where the edge is None)
                grads[edge] = grads[edge] + grad_input if edge in grads else grad_input  # type: ignore[index]
        if not retain_graph:
            node.release()


def _root_gradient(root: Tensor, gradient: Any) -> np.ndarray:
    if not root.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    if gradient is None:
        if root.array.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; "
                f"this output has shape {root.shape}, so pass gradient=... of that shape"
            )
        return np.ones_like(root.array)
    g = np.asarray(_unwrap(gradient), dtype=root.dtype)
    if g.shape != root.shape:
        raise ValueError(f"backward: gradient has shape {g.shape}, expected the output's shape {root.shape}")
    return g


def _one_output(op: str, outputs: Any, grad_outputs: Any) -> tuple[Tensor, Any]:
    """torch takes a sequence of outputs; here one tensor, or a one-element sequence (its gradient likewise)."""
    if isinstance(outputs, (tuple, list)) and len(outputs) == 1:
        outputs = outputs[0]
        grad_outputs = grad_outputs[0] if isinstance(grad_outputs, (tuple, list)) else grad_outputs
    if not isinstance(outputs, Tensor):
        raise TypeError(f"{op}: expects one output Tensor, got {type(outputs).__name__} (sum several into one)")
    return outputs, grad_outputs


def backward(tensors: Tensor, grad_tensors: Any = None, retain_graph: bool = False) -> None:
    """``tensors.backward(grad_tensors)``: add the weighted derivatives to each leaf's ``.grad`` (torch's names)."""
    root, gradient = _one_output("backward", tensors, grad_tensors)
    # (gradient_edge() is None only where the root needs no grad, which _root_gradient refuses)
    for node, grad_output in propagate(root.gradient_edge(), _root_gradient(root, gradient), retain_graph):  # type: ignore[arg-type]
        target = node.retained()  # type: ignore[misc]  # (propagate yields only nodes that retain)
        if target is not None:
            if target._grad is None:
                target._grad = Tensor._make(np.array(grad_output))  # a copy: in-place changes stay in .grad
            else:
                target._grad.array += grad_output  # (in place, as torch accumulates)


def grad(
    outputs: Tensor, inputs: Tensor | Sequence[Tensor], grad_outputs: Any = None, *, retain_graph: bool = False
) -> tuple[Tensor | None, ...]:
    """Return ``d outputs / d input`` (weighted by ``grad_outputs``) for each input; ``.grad`` untouched.

    torch's argument names; ``outputs`` is one tensor (or a one-element sequence, with
    ``grad_outputs`` likewise): sum several outputs into one first.
    A non-leaf input's gradient is the total reaching the op that made it; an
    input the output does not depend on gets None. Each result is a Tensor with its own memory.
    """
    outputs, grad_outputs = _one_output("grad", outputs, grad_outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    positions: dict[Node, list[int]] = {}  # the node each input's gradient flows into -> where it goes
    for i, t in enumerate(inputs):
        edge = t.gradient_edge()
        if edge is not None:
            positions.setdefault(edge, []).append(i)
    result: list[Tensor | None] = [None] * len(inputs)
    root_gradient = _root_gradient(outputs, grad_outputs)
    for node, g in propagate(outputs.gradient_edge(), root_gradient, retain_graph, positions):  # type: ignore[arg-type]
        for i in positions[node]:
            result[i] = Tensor._make(np.array(g))  # its own copy, a Tensor as in torch
    return tuple(result)
