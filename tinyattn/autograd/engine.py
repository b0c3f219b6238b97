"""torch's ``backward`` and ``grad``, with all their arguments, over the core's backward pass.

The chain rule itself is ``core/engine.py``: order the nodes, run each one's backward, add up the gradients.
torch's loop (``backprop.py``) is that loop with its additions at each node (``create_graph``, freeing); torch's
calls add, around it:

* several outputs at once, each with its own gradient (``grad_tensors``, ``grad_outputs``);
* gradients of chosen tensors only (``grad(outputs, inputs)``, ``backward(inputs=...)``: ``backprop.gradients``);
* ``retain_graph``: unless it is set, each node frees what forward saved once its backward ran;
* ``create_graph``: each backward runs as recorded ops (``higher_order.py``), so that the gradients are
  tensors with a graph of their own, to differentiate again.
"""

from __future__ import annotations

import typing
import warnings
from typing import Any, Sequence

import numpy as np

from . import higher_order
from .backprop import backpropagate, gradients
from .core.engine import accumulate, start_gradient, topological_order
from .core.function import Node, TensorBase
from .core.ops.shared import cast

# tinyattn's Tensor (tensor.py), which imports this file: named here for the reader, checked as Any
TensorLike = Any


def keeps_graph(retain_graph: bool | None, create_graph: bool) -> bool:
    """Does the graph outlive this backward pass? ``retain_graph``, which defaults to ``create_graph`` (as torch)."""
    if retain_graph is None:
        return create_graph
    return retain_graph


def root_gradient(root: TensorLike, gradient: Any, create_graph: bool) -> Any:
    """The gradient a backward pass starts from at ``root``: ``gradient`` (None for a one-element ``root``: ones),
    checked and in ``root``'s dtype. An array; with ``create_graph``, a Tensor: ``gradient`` itself if it requires
    grad (the gradients are then functions of it too, as in torch)."""
    if not root._requires_grad:
        raise RuntimeError("backward: the tensor does not require grad and has no grad_fn")
    g = start_gradient(root, gradient)
    if not create_graph:
        return g
    # a backward recorded as ops starts from a Tensor: the gradient itself, if it requires grad (the gradients
    # are then functions of it too, as in torch)
    if isinstance(gradient, TensorBase) and gradient.requires_grad:
        return cast(gradient, root.dtype)
    return type(root)._make(g)


def _roots(op: str, outputs: Any, gradients: Any, create_graph: bool) -> dict[Node, Any]:
    """torch's ``outputs`` and their ``grad_outputs``, each a tensor or a sequence: each output's node and its
    gradient (None for a one-element output: ones), summed where two outputs share a node."""
    if isinstance(outputs, TensorBase):
        outputs, gradients = (outputs,), (gradients,)
    elif not isinstance(outputs, (tuple, list)):
        raise TypeError(f"{op}: outputs must be a Tensor or a sequence of Tensors, got {type(outputs).__name__}")
    elif gradients is None:
        gradients = (None,) * len(outputs)
    elif isinstance(gradients, (TensorBase, np.ndarray)):  # (one: the first output's, as torch reads it)
        gradients = (gradients,)
    elif not isinstance(gradients, (tuple, list)):
        raise TypeError(f"{op}: the outputs' gradients must be a Tensor, None or a sequence, got "
                        f"{type(gradients).__name__}")
    if len(gradients) != len(outputs):
        raise RuntimeError(f"{op}: got {len(outputs)} tensors and {len(gradients)} gradients")
    roots: dict[Node, Any] = {}
    for i, (output, gradient) in enumerate(zip(outputs, gradients)):
        if not isinstance(output, TensorBase):
            raise TypeError(f"{op}: outputs must be Tensors, got {type(output).__name__} at position {i}")
        if not output.requires_grad:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does not have a grad_fn")
        g = root_gradient(output, gradient, create_graph)
        node = typing.cast(Node, output.gradient_edge())  # (it requires grad: it has a node)
        roots[node] = roots[node] + g if node in roots else g
    return roots


def _by_node(op: str, inputs: Any) -> tuple[tuple[TensorLike, ...], dict[Node, list[int]]]:
    """torch's ``inputs`` (a tensor or a sequence) as a tuple, and the node each one's gradient flows into -> the
    positions of the inputs it serves."""
    inputs = (inputs,) if isinstance(inputs, TensorBase) else tuple(inputs)
    positions: dict[Node, list[int]] = {}
    for i, t in enumerate(inputs):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{op}: inputs must be Tensors, got {type(t).__name__} at position {i}")
        if not t.requires_grad:
            raise RuntimeError(f"{op}: input {i} (shape {t.shape}) does not require grad")
        positions.setdefault(typing.cast(Node, t.gradient_edge()), []).append(i)  # (it requires grad: it has a node)
    return inputs, positions


def backward(
    tensors: TensorLike | Sequence[TensorLike],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: TensorLike | Sequence[TensorLike] | dict[str, TensorLike] | None = None,
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


def wanted_inputs(inputs: Any) -> dict[Node, TensorLike]:
    """``backward(inputs=...)``: the node each input's gradient flows into -> that input, whose ``.grad`` it fills
    (once, if the input is listed twice)."""
    inputs, positions = _by_node("backward", inputs.values() if type(inputs) is dict else inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    return {node: inputs[at[0]] for node, at in positions.items()}


def run_backward(
    roots: dict[Node, Any], retain_graph: bool | None, create_graph: bool, wanted: dict[Node, TensorLike] | None
) -> None:
    """Add the gradients reaching each leaf (and ``retain_grad()`` tensor) to its ``.grad``; with ``wanted``
    (``backward(inputs=...)``), those reaching each of its tensors instead. ``roots``: each output's node and
    the gradient the pass starts from there.

    With ``create_graph=True`` each ``.grad`` is a Tensor with a graph of its own (it can be differentiated:
    a gradient penalty, a second derivative), and ``retain_graph`` defaults to True, as in torch.
    """
    record = higher_order.backward_graph if create_graph else None
    free = not keeps_graph(retain_graph, create_graph)
    if wanted is None:  # every node that keeps a tensor's .grad: a leaf's, or a retain_grad() tensor's
        passes = backpropagate(roots, topological_order(roots), record, free)
    else:
        passes = gradients(roots, wanted, record, free)
    for node, grad_output in passes:
        target: TensorLike | None
        if wanted is not None:
            target = wanted[node]
        elif node.retained is not None:
            target = node.retained()
        else:
            continue
        if target is None:  # (a leaf gone since its node was made)
            continue
        if not create_graph:
            accumulate(target, grad_output)
        elif target._grad is None:  # the gradient itself, graph and all
            target._grad = grad_output
        else:
            target._grad = target._grad + grad_output  # (out of place, so that the sum is recorded too)


def grad(
    outputs: TensorLike | Sequence[TensorLike],
    inputs: TensorLike | Sequence[TensorLike],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[TensorLike | None, ...]:
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
    result: list[TensorLike | None] = [None] * len(inputs)
    roots = _roots("grad", outputs, grad_outputs, create_graph)
    record = higher_order.backward_graph if create_graph else None
    for node, g in gradients(roots, positions, record, not keeps_graph(retain_graph, create_graph)):
        for i in positions[node]:
            result[i] = g if create_graph else type(inputs[i])._make(np.array(g))  # its own copy, as in torch
    for i, r in enumerate(result):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} (shape {inputs[i].shape}) was not used in the graph of the output; "
                "pass allow_unused=True if that is intended (its gradient is then None)"
            )
        if r is None and materialize_grads:
            result[i] = type(inputs[i])._make(np.zeros(inputs[i].shape, inputs[i].dtype))
    return tuple(result)
