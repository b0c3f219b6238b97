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
Both take several outputs, as torch does (each with its own gradient; the walk
starts from all of them at once), and when only some tensors' gradients are
asked for (``grad``, ``backward(inputs=...)``), only the nodes those gradients
flow through run.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterable, Iterator, Sequence

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


def topological_order(roots: Iterable[Node], wanted: dict[Node, Any] | None = None) -> list[Node]:
    """The nodes behind ``roots``, each before every node that produced one of its inputs. With ``wanted``,
    only the nodes a wanted node's gradient flows through (as torch, which runs no other)."""
    order: list[Node] = []
    visited: set[Node | None] = {None}  # (None: the edge of an input that takes no gradient, never visited)
    stack: list[Any] = [*roots]  # nodes to visit; _INPUTS_DONE above a node: everything behind it is in order
    while stack:
        node = stack.pop()
        if node is _INPUTS_DONE:
            order.append(stack.pop())
        elif node not in visited:
            visited.add(node)
            stack += (node, _INPUTS_DONE)
            stack += node.edges  # (an edge already visited is skipped when popped)
    return order[::-1] if wanted is None else _leading_to(wanted, order)  # output first


def _leading_to(wanted: dict[Node, Any], order: list[Node]) -> list[Node]:
    """The nodes of ``order`` (leaves first) that are wanted or lead to one that is, output first."""
    leading: set[Node] = set()
    for node in order:  # (each after every node behind it, so its edges are decided already)
        if node in wanted or any(edge in leading for edge in node.edges):
            leading.add(node)
    return [node for node in reversed(order) if node in leading]


def propagate(
    grads: dict[Node, Any], retain_graph: bool | None, wanted: dict[Node, Any] | None, create_graph: bool
) -> Iterator[tuple[Node, Any]]:
    """Run every node's backward behind the outputs, from the outputs to the leaves.

    ``grads`` holds each output's node and the gradient of that output. Yields each node whose
    gradient is wanted, with its complete output gradient, before its backward runs: the nodes
    in ``wanted`` (and only the nodes that lead to them run), or (by default) those whose tensor
    keeps ``.grad``.
    With ``create_graph`` the gradients are Tensors and each backward is recorded as ops
    (higher_order.py), so that they can be differentiated in turn.
    """
    recorder = grad_mode._recorder  # (the explainer's trace(), if it is watching)
    record = backward_graph if create_graph else None  # (each backward on Tensors, recorded as ops)
    for node in topological_order(grads, wanted):
        grad_output = grads.pop(node, None)  # (grads: node -> dL/d(its output), summed over uses)
        if grad_output is None:  # every path from the output to this node carried a None gradient
            continue
        if is_wanted(node, wanted):
            yield node, grad_output
        if not node.edges:  # a leaf: its gradient flows no further, and its node serves the leaf's next graph
            continue
        if node.released:  # (its saved arrays freed by an earlier backward)
            raise _released_error(node)
        grad_inputs = node.backward(grad_output, record)
        if recorder is not None:
            recorder.backward(node, grad_output, grad_inputs)
        for edge, grad_input in zip(node.edges, grad_inputs):
            if grad_input is not None and edge is not None:  # (an input that takes no gradient has no edge)
                grads[edge] = grads[edge] + grad_input if edge in grads else grad_input
        if not keeps_graph(retain_graph, create_graph):
            node.release()


def is_wanted(node: Node, wanted: dict[Node, Any] | None) -> bool:
    """Is ``node``'s gradient asked for: one of ``wanted``, or, by default, a node whose tensor keeps ``.grad``?"""
    if wanted is not None:
        return node in wanted
    return node.retained is not None


def keeps_graph(retain_graph: bool | None, create_graph: bool) -> bool:
    """Does the graph outlive this backward pass? ``retain_graph``, which defaults to ``create_graph`` (as torch)."""
    if retain_graph is None:
        return create_graph
    return retain_graph


def root_gradient(root: Tensor, gradient: Any, create_graph: bool) -> Any:
    """The gradient a backward pass starts from at ``root``: ``gradient`` (None for a one-element ``root``: ones),
    checked and in ``root``'s dtype. An array; with ``create_graph``, a Tensor: ``gradient`` itself if it requires
    grad (the gradients are then functions of it too, as in torch)."""
    if not root._requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    if gradient is None:
        if root.array.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; "
                f"this output has shape {root.shape}, so pass gradient=... of that shape"
            )
        g = np.ones_like(root.array)
    else:
        g = np.asarray(gradient.array if isinstance(gradient, Tensor) else gradient, dtype=root.dtype)
        if g.shape != root.shape:
            raise ValueError(f"backward: gradient has shape {g.shape}, expected the output's shape {root.shape}")
    if create_graph:  # (a backward recorded as ops starts from a Tensor)
        return gradient.to(root.dtype) if isinstance(gradient, Tensor) and gradient.requires_grad else Tensor._make(g)
    return g


def _roots(op: str, outputs: Any, gradients: Any, create_graph: bool) -> dict[Node, Any]:
    """torch's ``outputs`` and their ``grad_outputs``, each a tensor or a sequence: each output's node and its
    gradient (None for a one-element output: ones), summed where two outputs share a node."""
    if isinstance(outputs, Tensor):
        outputs, gradients = (outputs,), (gradients,)
    elif not isinstance(outputs, (tuple, list)):
        raise TypeError(f"{op}: outputs must be a Tensor or a sequence of Tensors, got {type(outputs).__name__}")
    elif gradients is None:
        gradients = (None,) * len(outputs)
    elif isinstance(gradients, (Tensor, np.ndarray)):  # (one gradient: the first output's, as torch reads it)
        gradients = (gradients,)
    elif not isinstance(gradients, (tuple, list)):
        raise TypeError(f"{op}: the outputs' gradients must be a Tensor, None or a sequence, got "
                        f"{type(gradients).__name__}")
    if len(gradients) != len(outputs):
        raise RuntimeError(f"{op}: got {len(outputs)} tensors and {len(gradients)} gradients")
    roots: dict[Node, Any] = {}
    for i, (output, gradient) in enumerate(zip(outputs, gradients)):
        if not isinstance(output, Tensor):
            raise TypeError(f"{op}: outputs must be Tensors, got {type(output).__name__} at position {i}")
        if not output.requires_grad:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does not have a grad_fn")
        g = root_gradient(output, gradient, create_graph)
        node = output.gradient_edge()
        roots[node] = roots[node] + g if node in roots else g  # type: ignore[index]
    return roots


def _by_node(op: str, inputs: Any) -> tuple[tuple[Tensor, ...], dict[Node, list[int]]]:
    """torch's ``inputs`` (a tensor or a sequence) as a tuple, and the node each one's gradient flows into -> the
    positions of the inputs it serves."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    positions: dict[Node, list[int]] = {}
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: inputs must be Tensors, got {type(t).__name__} at position {i}")
        if not t.requires_grad:
            raise RuntimeError(f"{op}: input {i} (shape {t.shape}) does not require grad")
        positions.setdefault(t.gradient_edge(), []).append(i)  # type: ignore[arg-type]
    return inputs, positions


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None,
) -> None:
    """``torch.autograd.backward``: add each output's weighted derivatives to each leaf's ``.grad``.

    ``tensors`` is one output or a sequence, ``grad_tensors`` the gradient of each (None for a one-element
    output: ones); the derivatives of several outputs are summed. With ``inputs``, only those tensors' ``.grad``
    receive them, leaves or not. ``grad_variables`` is torch's old name for ``grad_tensors``.
    """
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    roots = _roots("backward", tensors, grad_tensors, create_graph)
    run_backward(roots, retain_graph, create_graph, None if inputs is None else wanted_inputs(inputs))


def wanted_inputs(inputs: Any) -> dict[Node, Tensor]:
    """``backward(inputs=...)``: the node each input's gradient flows into -> that input, whose ``.grad`` it fills
    (once, if the input is listed twice)."""
    inputs, positions = _by_node("backward", inputs.values() if type(inputs) is dict else inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    return {node: inputs[at[0]] for node, at in positions.items()}


def run_backward(
    roots: dict[Node, Any], retain_graph: bool | None, create_graph: bool, wanted: dict[Node, Tensor] | None
) -> None:
    """Add the gradients reaching each leaf (and ``retain_grad()`` tensor) to its ``.grad``; with ``wanted``
    (``backward(inputs=...)``), those reaching each of its tensors instead. ``roots``: each output's node and
    the gradient the pass starts from there.

    With ``create_graph=True`` each ``.grad`` is a Tensor with a graph of its own (it can be differentiated:
    a gradient penalty, a second derivative), and ``retain_graph`` defaults to True, as in torch.
    """
    for node, grad_output in propagate(roots, retain_graph, wanted, create_graph):
        target = node.retained() if wanted is None else wanted[node]  # type: ignore[misc]  # (yielded: it retains)
        if target is not None:
            if target._grad is None:  # (with create_graph, the gradient itself, graph and all)
                target._grad = grad_output if create_graph else Tensor._make(np.array(grad_output))  # (else a copy)
            elif create_graph:
                target._grad = target._grad + grad_output  # (out of place, so that the sum is recorded too)
            else:
                target._grad.array += grad_output  # (in place, as torch accumulates)


def grad(
    outputs: Tensor | Sequence[Tensor],
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

    torch's arguments: ``outputs`` a tensor or a sequence, ``grad_outputs`` likewise (the gradient of
    each output, None for a one-element one: ones); several outputs' derivatives are summed.
    A non-leaf input's gradient is the total reaching the op that made it. An input the output
    does not depend on is an error, unless ``allow_unused`` (then its gradient is None, or zeros
    with ``materialize_grads``). Each result is a Tensor with its own memory; with
    ``create_graph=True``, one with a graph (differentiate it again for a second derivative).
    """
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True (vmap over grad_outputs) is not implemented; "
                                  "call grad once per row of grad_outputs, with retain_graph=True")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if materialize_grads and not allow_unused:
        raise ValueError("grad: materialize_grads=True needs allow_unused to be True or None")
    inputs, positions = _by_node("grad", inputs)  # (only_inputs: torch ignores it too)
    result: list[Tensor | None] = [None] * len(inputs)
    roots = _roots("grad", outputs, grad_outputs, create_graph)
    for node, g in propagate(roots, retain_graph, positions, create_graph):
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
