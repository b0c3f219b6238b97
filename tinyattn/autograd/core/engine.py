"""The backward pass: the chain rule, applied node by node from the output to the leaves.

Two steps, each a function below:

1. ``topological_order``: order the nodes behind the output so that each comes before every node that
   produced one of its inputs (an explicit stack, no recursion, so a chain of 10,000 ops is fine).
2. ``backward``: visit them in that order. A node's output gradient is complete once every node that
   used its output has been visited, which that order guarantees. Its ``backward`` turns that gradient into
   one gradient per input, and each is added to the running total of the node it flows into (an input used
   twice gets the sum of both paths' gradients: the multivariable chain rule).

Leaves are nodes too (``LeafNode``, with no inputs): their gradient flows no further, into the leaf's ``.grad``.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from . import checks, grad_mode
from .function import Node, TensorBase

_INPUTS_DONE = object()  # (a marker on topological_order's stack)


def topological_order(roots: Iterable[Node]) -> list[Node]:
    """The nodes behind ``roots``, output first: each before every node that produced one of its inputs."""
    order: list[Node] = []
    visited: set[Node | None] = {None}  # (None: the edge of an input that takes no gradient, never visited)
    stack: list[Any] = list(roots)
    while stack:
        node = stack.pop()
        if node is _INPUTS_DONE:
            # everything behind the node below the marker is in order: the node itself comes after it
            order.append(stack.pop())
        elif node not in visited:
            visited.add(node)
            stack.append(node)
            stack.append(_INPUTS_DONE)
            stack.extend(node.edges)
    order.reverse()
    return order


def start_gradient(tensor: Any, gradient: Any) -> np.ndarray:
    """The gradient a backward pass starts from at ``tensor``: ``gradient``, or 1 for a one-element ``tensor``
    (dL/dL = 1), in ``tensor``'s dtype."""
    if gradient is None:
        checks.start_gradient(tensor.array, None)
        return np.ones_like(tensor.array)
    if isinstance(gradient, TensorBase):
        gradient = gradient.array
    gradient = np.asarray(gradient, dtype=tensor.dtype)
    checks.start_gradient(tensor.array, gradient)
    return gradient


def accumulate(tensor: Any, grad: np.ndarray) -> None:
    """Add ``grad`` to ``tensor.grad`` (which starts as a copy of the first gradient to arrive)."""
    if tensor._grad is None:
        tensor._grad = type(tensor)._make(np.array(grad))  # (a tensor of the leaf's own class)
    else:
        tensor._grad.array += grad


def backward(tensor: Any, gradient: Any = None) -> None:
    """Add ``d tensor / d leaf`` (times ``gradient``) to the ``.grad`` of every leaf behind ``tensor``."""
    root = tensor.gradient_edge()
    if root is None:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    grads = {root: start_gradient(tensor, gradient)}  # each node's gradient so far: dL/d(its output)
    for node in topological_order([root]):
        grad_output = grads.pop(node, None)
        if grad_output is None:  # no path from the output to this node carries a gradient
            continue
        if node.retained is not None:  # a leaf: the gradient is complete, and kept in its .grad
            leaf = node.retained()
            if leaf is not None:
                accumulate(leaf, grad_output)
            continue
        # one step of the chain rule: the op's backward, from its output's gradient to its inputs'
        grad_inputs = node.backward(grad_output)
        grad_mode.note_backward(node, grad_output, grad_inputs)
        for edge, grad_input in zip(node.edges, grad_inputs):
            if edge is None or grad_input is None:  # an input that takes no gradient
                continue
            if edge in grads:
                grads[edge] = grads[edge] + grad_input  # a second path to the same node: the gradients add up
            else:
                grads[edge] = grad_input
