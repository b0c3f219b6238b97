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

from . import grad_mode
from .function import Node
from .higher_order import backward_graph
from .tensor import Tensor


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
    visited: set[Node | None] = {None}  # (None: the edge of an input that takes no gradient, never visited)
    stack: list[Any] = [root]  # nodes to visit; _INPUTS_DONE above a node: everything behind it is in order
    while stack:
        node = stack.pop()
        if node is _INPUTS_DONE:
            order.append(stack.pop())
        elif node not in visited:
            if node.released:
                raise _released_error(node)
            visited.add(node)
            stack += (node, _INPUTS_DONE)
            stack += node.edges  # (an edge already visited is skipped when popped)
    return order[::-1]  # output first


def propagate(
    root: Node, grad_root: Any, retain_graph: bool | None, wanted: dict[Node, Any] | None, create_graph: bool
) -> Iterator[tuple[Node, Any]]:
    """Run every node's backward behind ``root``, from the output to the leaves.

    Yields each node whose gradient is wanted, with its complete output gradient, before its
    backward runs: the nodes in ``wanted``, or (by default) those whose tensor keeps ``.grad``.
    With ``create_graph`` the gradients are Tensors and each backward is recorded as ops
    (higher_order.py), so that they can be differentiated in turn.
    """
    grads: dict[Node, Any] = {root: grad_root}  # node -> dL/d(its output), summed over uses
    recorder = grad_mode._recorder  # (the explainer's trace(), if it is watching)
    record = backward_graph if create_graph else None  # (each backward on Tensors, recorded as ops)
    for node in topological_order(root):
        grad_output = grads.pop(node, None)
        if grad_output is None:  # every path from the output to this node carried a None gradient
            continue
        if node in wanted if wanted is not None else node.retained is not None:
            yield node, grad_output
        if not node.edges:  # a leaf: its gradient flows no further, and its node serves the leaf's next graph
            continue
        grad_inputs = node.backward(grad_output, record)
        if recorder is not None:
            recorder.backward(node, grad_output, grad_inputs)
        for edge, grad_input in zip(node.edges, grad_inputs):
            if grad_input is not None and edge is not None:  # (an input that takes no gradient has no edge)
                grads[edge] = grads[edge] + grad_input if edge in grads else grad_input
        if not (create_graph if retain_graph is None else retain_graph):  # (None: as create_graph, as torch)
            node.release()


def _root_gradient(root: Tensor, gradient: Any) -> np.ndarray:
    if not root._requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    if gradient is None:
        if root.array.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; "
                f"this output has shape {root.shape}, so pass gradient=... of that shape"
            )
        return np.ones_like(root.array)
    g = np.asarray(gradient.array if isinstance(gradient, Tensor) else gradient, dtype=root.dtype)
    if g.shape != root.shape:
        raise ValueError(f"backward: gradient has shape {g.shape}, expected the output's shape {root.shape}")
    return g


def _graph_root(root: Tensor, gradient: Any) -> Tensor:
    """The root gradient of a backward recorded as ops: a Tensor that requires grad stays itself (the gradients
    are then functions of it too, as in torch), checked as any other."""
    g = _root_gradient(root, gradient)
    if isinstance(gradient, Tensor) and gradient.requires_grad:
        return gradient.to(root.dtype)  # (itself, in the output's dtype already)
    return Tensor._make(g)


def _one_output(op: str, outputs: Any, grad_outputs: Any) -> tuple[Tensor, Any]:
    """torch takes a sequence of outputs; here one tensor, or a one-element sequence (its gradient likewise)."""
    if isinstance(outputs, (tuple, list)) and len(outputs) == 1:
        outputs = outputs[0]
        grad_outputs = grad_outputs[0] if isinstance(grad_outputs, (tuple, list)) else grad_outputs
    if not isinstance(outputs, Tensor):
        raise TypeError(f"{op}: expects one output Tensor, got {type(outputs).__name__} (sum several into one)")
    return outputs, grad_outputs


def backward(
    tensors: Tensor, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False
) -> None:
    """``torch.autograd.backward``: ``tensors.backward(grad_tensors)``, for one tensor or a one-element sequence."""
    root, gradient = _one_output("backward", tensors, grad_tensors)
    run_backward(root, gradient, retain_graph, create_graph)


def run_backward(root: Tensor, gradient: Any, retain_graph: bool | None, create_graph: bool) -> None:
    """``root.backward(gradient)``: add the weighted derivatives to each leaf's ``.grad`` (``Tensor.backward``).

    With ``create_graph=True`` each ``.grad`` is a Tensor with a graph of its own (it can be differentiated:
    a gradient penalty, a second derivative), and ``retain_graph`` defaults to True, as in torch.
    """
    # (gradient_edge() is None only where the root needs no grad, which _root_gradient refuses)
    grad_root = _graph_root(root, gradient) if create_graph else _root_gradient(root, gradient)
    for node, grad_output in propagate(root.gradient_edge(), grad_root, retain_graph, None, create_graph):  # type: ignore[arg-type]
        target = node.retained()  # type: ignore[misc]  # (propagate yields only nodes that retain)
        if target is not None:
            if target._grad is None:  # (with create_graph, the gradient itself, graph and all)
                target._grad = grad_output if create_graph else Tensor._make(np.array(grad_output))  # (else a copy)
            elif create_graph:
                target._grad = target._grad + grad_output  # (out of place, so that the sum is recorded too)
            else:
                target._grad.array += grad_output  # (in place, as torch accumulates)


def grad(
    outputs: Tensor,
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Return ``d outputs / d input`` (weighted by ``grad_outputs``) for each input; ``.grad`` untouched.

    torch's arguments; ``outputs`` is one tensor (or a one-element sequence, with
    ``grad_outputs`` likewise): sum several outputs into one first.
    A non-leaf input's gradient is the total reaching the op that made it. An input the output
    does not depend on is an error, unless ``allow_unused`` (then its gradient is None, or zeros
    with ``materialize_grads``). Each result is a Tensor with its own memory; with
    ``create_graph=True``, one with a graph (differentiate it again for a second derivative).
    """
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True (vmap over grad_outputs) is not implemented; "
                                  "call grad once per row of grad_outputs, with retain_graph=True")
    outputs, grad_outputs = _one_output("grad", outputs, grad_outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)  # (only_inputs: torch ignores it too)
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if materialize_grads and not allow_unused:
        raise ValueError("grad: materialize_grads=True needs allow_unused to be True or None")
    positions: dict[Node, list[int]] = {}  # the node each input's gradient flows into -> where it goes
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(t).__name__} at position {i}")
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {t.shape}) does not require grad")
        positions.setdefault(t.gradient_edge(), []).append(i)  # type: ignore[arg-type]
    result: list[Tensor | None] = [None] * len(inputs)
    root_gradient = _graph_root(outputs, grad_outputs) if create_graph else _root_gradient(outputs, grad_outputs)
    for node, g in propagate(outputs.gradient_edge(), root_gradient, retain_graph, positions, create_graph):  # type: ignore[arg-type]
        for i in positions[node]:
            result[i] = g if create_graph else Tensor._make(np.array(g))  # its own copy, a Tensor as in torch
    for i, r in enumerate(result):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} (shape {inputs[i].shape}) was not used in the graph of the output; "
                "pass allow_unused=True if that is intended (its gradient is then None)"
            )
        if r is None and materialize_grads:
            result[i] = Tensor._make(np.zeros(inputs[i].shape, inputs[i].dtype))
    return tuple(result)
