"""A backward pass for chosen tensors only (``grad(outputs, inputs)``, ``backward(inputs=...)``), as torch runs it.

The core's pass (``core/engine.py``) runs every node behind the outputs. When only some tensors' gradients
are asked for, torch runs only the nodes those gradients flow through: ``leading_to`` keeps those, and
``gradients`` walks them and yields the wanted nodes' gradients.
"""

from __future__ import annotations

from typing import Any, Iterator

from .core.engine import Step, backpropagate, call_backward, topological_order
from .core.function import Node


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
    roots: dict[Node, Any], wanted: dict[Node, Any], step: Step = call_backward
) -> Iterator[tuple[Node, Any]]:
    """Each node of ``wanted`` that a gradient reaches from ``roots`` (node -> its output's gradient), with that
    gradient; only the nodes that lead to a wanted one run."""
    order = leading_to(wanted, topological_order(roots))
    for node, grad in backpropagate(roots, order, step):
        if node in wanted:
            yield node, grad
