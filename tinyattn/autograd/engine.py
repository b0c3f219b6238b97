"""The backward pass: walk the graph from the output to the leaves, applying each op's backward.

1. Collect the nodes behind the output in topological order (an explicit stack,
   no recursion, so a chain of 10,000 ops is fine).
2. Visit them output-first. A node's output gradient is complete once every
   node that used its output has been visited, which topological order
   guarantees. Its ``backward`` turns that gradient into one gradient per
   input; each is added to the running total of the node (or leaf) it came from.
3. Leaves receive their total in ``.grad`` (added to what was there).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .function import Node
from .tensor import Tensor

# Called as hook(node, grad_output, input_grads) after each backward (the explainer uses it).
BackwardHook = Callable[[Node, np.ndarray, Sequence[Any]], None]


def _released_error(node: Node) -> RuntimeError:
    return RuntimeError(
        f"Trying to backward through the graph a second time (at {node.name}): its saved arrays "
        "were freed after the first backward. Pass retain_graph=True to the first backward() "
        "if you need to backward twice."
    )


def topological_order(root: Node) -> list[Node]:
    """The nodes behind ``root``, each before every node that produced one of its inputs."""
    order: list[Node] = []
    visited: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        if node.released:
            raise _released_error(node)
        visited.add(id(node))
        stack.append((node, True))
        for edge in node.edges:
            if type(edge) is Node and id(edge) not in visited:
                stack.append((edge, False))
    order.reverse()  # output first
    return order


def _check_gradient(node: Node, position: int, grad: Any) -> np.ndarray:
    """The engine's guard: each gradient must match its input's shape and dtype."""
    shape, dtype = node.input_meta[position]
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad)
    if grad.shape != shape or grad.dtype != dtype:
        raise RuntimeError(
            f"{node.name}.backward returned a gradient of shape {grad.shape} and dtype {grad.dtype} "
            f"for input {position}, which has shape {shape} and dtype {dtype}"
        )
    return grad


def run_backward(
    root: Tensor,
    grad_root: np.ndarray,
    *,
    retain_graph: bool = False,
    accumulate: bool = True,
    capture: Sequence[Tensor] = (),
    hook: BackwardHook | None = None,
) -> list[np.ndarray | None]:
    """Backpropagate ``grad_root`` from ``root``; return the gradients of the ``capture`` tensors.

    With ``accumulate`` (``Tensor.backward``), leaves and ``retain_grad()``
    tensors get their gradient added to ``.grad``; without it (``grad()``), no
    ``.grad`` is touched and only ``capture``'s gradients are returned.
    """
    wanted = {id(t) for t in capture}
    captured: dict[int, np.ndarray] = {}
    leaf_grads: dict[int, tuple[Tensor, np.ndarray]] = {}

    def reach_leaf(leaf: Tensor, g: np.ndarray) -> None:
        key = id(leaf)
        leaf_grads[key] = (leaf, leaf_grads[key][1] + g if key in leaf_grads else g)

    if root._grad_fn is None:  # backward() on a leaf itself
        reach_leaf(root, grad_root)
        order: list[Node] = []
    else:
        order = topological_order(root._grad_fn)
    grads: dict[int, np.ndarray] = {id(root._grad_fn): grad_root}
    for node in order:
        g = grads.pop(id(node), None)
        if g is None:
            continue
        out = node.output()  # the tensor this node made, if anyone still holds it
        if out is not None:
            if id(out) in wanted:
                captured[id(out)] = g
            if accumulate and out._retains_grad:
                out.grad = g.copy() if out.grad is None else out.grad + g
        input_grads = node.fn.backward(node.ctx, g)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        if len(input_grads) != len(node.edges):
            raise RuntimeError(
                f"{node.name}.backward returned {len(input_grads)} gradients for {len(node.edges)} inputs"
            )
        if hook is not None:
            hook(node, g, input_grads)
        for position, (edge, ig) in enumerate(zip(node.edges, input_grads)):
            if edge is None or ig is None:
                continue
            ig = _check_gradient(node, position, ig)
            if type(edge) is Node:
                key = id(edge)
                grads[key] = grads[key] + ig if key in grads else ig
            else:
                reach_leaf(edge, ig)
        if not retain_graph:
            node.release()
    for key, (leaf, g) in leaf_grads.items():
        if key in wanted:
            captured[key] = g
        if accumulate:
            leaf.grad = g.copy() if leaf.grad is None else leaf.grad + g
    return [captured.get(id(t)) for t in capture]


def _root_gradient(root: Tensor, gradient: Any) -> np.ndarray:
    if not root.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; "
                f"this output has shape {root.shape}, so pass gradient=... of that shape"
            )
        return np.ones_like(root.data)
    g = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=root.dtype)
    if g.shape != root.shape:
        raise ValueError(f"backward: gradient has shape {g.shape}, expected the output's shape {root.shape}")
    return g


def backward(root: Tensor, gradient: Any = None, *, retain_graph: bool = False) -> None:
    """``root.backward(gradient)``: accumulate ``gradient``-weighted derivatives into ``.grad``."""
    run_backward(root, _root_gradient(root, gradient), retain_graph=retain_graph)


def grad(
    output: Tensor, inputs: Tensor | Sequence[Tensor], grad_output: Any = None, *, retain_graph: bool = False
) -> tuple[np.ndarray | None, ...]:
    """Return ``d output / d input`` (weighted by ``grad_output``) for each input; ``.grad`` untouched.

    A non-leaf input's gradient is the total reaching the op that made it.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    result = run_backward(
        output, _root_gradient(output, grad_output), retain_graph=retain_graph, accumulate=False, capture=inputs
    )
    return tuple(result)
