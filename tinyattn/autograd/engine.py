"""The backward pass: walk the graph from the output to the leaves, applying each op's backward.

1. Collect the tensors behind the output in topological order (an explicit
   stack, no recursion, so a chain of 10,000 ops is fine).
2. Visit them output-first. A tensor's gradient is complete once every op that
   used it has been visited, which topological order guarantees. Hand that
   gradient to the op that produced the tensor; it returns one gradient per
   input, which is added to that input's running total.
3. Leaves receive their total in ``.grad`` (added to what was there).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .function import Node
from .tensor import Tensor

# Called as hook(node, output_tensor, grad_output, input_grads) after each backward (the explainer uses it).
BackwardHook = Callable[[Node, Tensor, np.ndarray, Sequence[Any]], None]


def topological_order(root: Tensor) -> list[Tensor]:
    """Tensors that ``root`` depends on (requiring grad), each after all tensors it feeds."""
    order: list[Tensor] = []
    visited: set[int] = set()
    stack: list[tuple[Tensor, bool]] = [(root, False)]
    while stack:
        t, children_done = stack.pop()
        if children_done:
            order.append(t)
            continue
        if id(t) in visited:
            continue
        visited.add(id(t))
        stack.append((t, True))
        node = t._grad_fn
        if node is None:
            continue
        if node.released:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (at {node.name}): its saved "
                "arrays were freed after the first backward. Pass retain_graph=True to the first "
                "backward() if you need to backward twice."
            )
        for inp in node.inputs:
            if inp is not None and inp.requires_grad and id(inp) not in visited:
                stack.append((inp, False))
    order.reverse()  # output first
    return order


def _check_gradient(node: Node, position: int, inp: Tensor, grad: Any) -> np.ndarray:
    """The engine's guard: each gradient must match its input's shape and dtype."""
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad)
    if grad.shape != inp.shape or grad.dtype != inp.dtype:
        raise RuntimeError(
            f"{node.name}.backward returned a gradient of shape {grad.shape} and dtype {grad.dtype} "
            f"for input {position}, which has shape {inp.shape} and dtype {inp.dtype}"
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
    """Backpropagate ``grad_root`` from ``root``; return the gradients of ``capture``.

    With ``accumulate`` (``Tensor.backward``), leaves and ``retain_grad()``
    tensors get their gradient added to ``.grad``; without it (``grad()``), no
    ``.grad`` is touched and only ``capture``'s gradients are returned.
    """
    order = topological_order(root)
    wanted = {id(t) for t in capture}
    captured: dict[int, np.ndarray] = {}
    grads: dict[int, np.ndarray] = {id(root): grad_root}
    for t in order:
        g = grads.pop(id(t), None)
        if g is None:
            continue
        if id(t) in wanted:
            captured[id(t)] = g
        if accumulate and (t._grad_fn is None or t._retains_grad):
            t.grad = g.copy() if t.grad is None else t.grad + g
        node = t._grad_fn
        if node is None:
            continue
        input_grads = node.fn.backward(node.ctx, g)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        if len(input_grads) != len(node.inputs):
            raise RuntimeError(
                f"{node.name}.backward returned {len(input_grads)} gradients for {len(node.inputs)} inputs"
            )
        if hook is not None:
            hook(node, t, g, input_grads)
        for position, (inp, ig) in enumerate(zip(node.inputs, input_grads)):
            if inp is None or not inp.requires_grad or ig is None:
                continue
            ig = _check_gradient(node, position, inp, ig)
            grads[id(inp)] = grads[id(inp)] + ig if id(inp) in grads else ig
        if not retain_graph:
            node.release()
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
    """Return ``d output / d input`` (weighted by ``grad_output``) for each input; ``.grad`` untouched."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    result = run_backward(
        output, _root_gradient(output, grad_output), retain_graph=retain_graph, accumulate=False, capture=inputs
    )
    return tuple(result)
