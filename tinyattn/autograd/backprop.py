"""torch's backward pass: the core's chain-rule loop (``core/engine.py``), with what torch adds at each node.

The loop is the core's: visit the nodes output first (``topological_order``), take each node's complete
gradient, run its backward, add each input's gradient to the node it flows into. At each node torch adds:

* **hooks**: a tensor's hooks (``x.register_hook(fn)``, kept on the node its gradient flows into) run on the
  gradient once it is complete, and may replace it (``hooks.py``);
* **create_graph**: the node's backward runs as recorded ops (``record``: ``higher_order.backward_graph``), so
  that the gradients are tensors with a graph of their own, to differentiate again;
* **freeing**: unless the graph is kept (``retain_graph``), the node drops what forward saved once its backward
  ran; a second backward through it is refused (``graph.py``).

``gradients`` runs the pass for chosen tensors only (``grad(outputs, inputs)``, ``backward(inputs=...)``), as
torch runs it: only the nodes those gradients flow through.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from . import hooks
from .core import grad_mode
from .core.engine import topological_order
from .core.function import Node
from .graph import GraphNode

Record = Callable[[Any, Any], tuple[Any, ...]]


def backpropagate(
    grads: dict[Node, Any], order: list[Node], record: Record | None = None, free: bool = False
) -> Iterator[tuple[Node, Any]]:
    """Run the backward of every node of ``order``, from the outputs to the leaves.

    ``grads`` starts with each output's node and the gradient of that output, and collects the gradient of
    every other node's output as the walk reaches it. Yields each node with its complete output gradient (its
    hooks run), before its backward runs. ``record``: run each backward as recorded ops (create_graph);
    ``free``: release each node once its backward ran.
    """
    for node in order:
        grad_output = grads.pop(node, None)
        if grad_output is None:  # no path from the outputs to this node carries a gradient
            continue
        if getattr(node, "tensor_hooks", None):  # (a node of the core's own class has no hooks)
            grad_output = hooks.run(node, grad_output)
        yield node, grad_output
        if not node.edges:  # a leaf: its gradient flows no further
            continue
        if record is not None and isinstance(node, GraphNode):
            grad_inputs = node.backward(grad_output, record)
        else:
            grad_inputs = node.backward(grad_output)
        grad_mode.note_backward(node, grad_output, grad_inputs)
        if free and isinstance(node, GraphNode):
            node.release()
        for edge, grad_input in zip(node.edges, grad_inputs):
            if edge is None or grad_input is None:  # an input that takes no gradient
                continue
            if edge in grads:
                grads[edge] = grads[edge] + grad_input
            else:
                grads[edge] = grad_input


def leading_to(wanted: dict[Node, Any], order: list[Node]) -> list[Node]:
    """The nodes of ``order`` (output first) that are wanted or lead to one that is, output first."""
    leading: set[Node] = set()
    for node in reversed(order):  # (leaves first: each after every node behind it, so its edges are decided)
        if node in wanted:
            leading.add(node)
            continue
        for edge in node.edges:
            if edge in leading:
                leading.add(node)
                break
    return [node for node in order if node in leading]


def gradients(
    roots: dict[Node, Any], wanted: dict[Node, Any], record: Record | None = None, free: bool = False
) -> Iterator[tuple[Node, Any]]:
    """Each node of ``wanted`` that a gradient reaches from ``roots`` (node -> its output's gradient), with that
    gradient; only the nodes that lead to a wanted one run."""
    order = leading_to(wanted, topological_order(roots))
    for node, grad in backpropagate(roots, order, record, free):
        if node in wanted:
            yield node, grad
