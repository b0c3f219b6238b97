"""``torch.autograd.functional``: derivatives of a function, rather than of a tensor's history.

Each takes ``func`` (Tensors in, a Tensor or a tuple of Tensors out) and the point ``inputs``
(a Tensor or a tuple of Tensors), and returns results shaped as those were given::

    vjp(func, x, v)   ->  (func(x), vᵀ J)        J = d func / d x
    jvp(func, x, v)   ->  (func(x), J v)
    jacobian(func, x) ->  J                       shape: output's shape + input's shape
    hessian(func, x)  ->  H = d²func / dx²        func returns one element
    vhp(func, x, v)   ->  (func(x), vᵀ H)
    hvp(func, x, v)   ->  (func(x), H v)

All of them are ``grad`` (engine.py) called once or twice: ``jvp`` and ``hvp`` as torch
computes them, by the double-backward trick (``J v`` is the derivative, with respect to
``u``, of ``uᵀ J`` applied to ``v``), ``hessian`` as the Jacobian of the gradient. Results
are detached unless ``create_graph=True``. An input the output does not depend on gets
zeros, or, with ``strict=True``, an error.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core.grad_mode import enable_grad
from .engine import grad
from .tensor import Tensor, stack

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(value: Any, what: str, fn: str) -> tuple[bool, tuple[Tensor, ...]]:
    """``(was it a tuple, the Tensors)``, as torch checks them."""
    if isinstance(value, tuple):
        items = value
        for i, x in enumerate(items):
            if not isinstance(x, Tensor):
                raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the "
                                f"value at index {i} has type {type(x)}.")
        return True, items
    if not isinstance(value, Tensor):
        raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the given "
                        f"{what} has type {type(value)}.")
    return False, (value,)


def _prepared(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """The point to differentiate at: each input as a fresh leaf, or (``create_graph``) a view keeping its history."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _outputs(func: Callable[..., Any], inputs: tuple[Tensor, ...], fn: str, strict: bool) -> tuple[bool, Any]:
    is_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn)
    if strict:
        for i, out in enumerate(outputs):
            if not out.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   "outputs must be computed in a differentiable manner from the input when running "
                                   "in strict mode.")
    return is_tuple, outputs


def _vector(v: Any, like: tuple[Tensor, ...], like_is_tuple: bool, fn: str, of: str) -> tuple[Tensor, ...]:
    """``v`` checked against ``like`` (the outputs for vᵀJ, the inputs for J v); None only for one element."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the {of} a single Tensor with a single element.")
        return (Tensor._make(np.ones(like[0].shape, like[0].dtype)),)
    _, vs = _as_tuple(v, "v", fn)
    if len(vs) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}." if like_is_tuple
                           else "The given v should contain a single Tensor.")
    for i, (x, ref) in enumerate(zip(vs, like)):
        if x.shape != ref.shape:
            entry = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {ref.size()} but got {x.size()}.")
    return vs


def _grads(outputs: tuple[Tensor | None, ...], inputs: tuple[Tensor, ...], weights: tuple[Tensor, ...],
           create_graph: bool) -> tuple[Tensor | None, ...]:
    """``Σ_i weights_i ⋅ d outputs_i / d inputs``, one per input, None where no output depends on it (outputs that
    are None or need no grad are left out, as torch's helper does): one ``grad`` of the outputs kept, each weighted
    by its own ``grad_outputs``."""
    kept = [(out, w) for out, w in zip(outputs, weights) if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return grad([out for out, _ in kept], inputs, [w for _, w in kept], create_graph=create_graph, retain_graph=True,
                allow_unused=True)


# what strict mode says when a result is None (no dependence), or, with create_graph, has no graph: per stage
_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}
_NO_GRAPH = "The {what} of the user-provided function is independent of input {i}. This is not allowed in strict " \
            "mode when create_graph=True."


def _zeros_for_none(grads: tuple[Tensor | None, ...], refs: tuple[Tensor, ...], strict: bool, create_graph: bool,
                    stage: str) -> tuple[Tensor, ...]:
    """Each None gradient as zeros shaped as its ``refs`` entry; strict mode refuses it instead (and, with
    create_graph, refuses a gradient with no graph)."""
    result = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = Tensor._make(np.zeros(ref.shape, ref.dtype))
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_NO_GRAPH.format(what="hessian" if "double" in stage else "jacobian", i=i))
        result.append(g)
    return tuple(result)


def _check_depends(grads: tuple[Tensor | None, ...], what: str, strict: bool) -> None:
    """Strict mode's check of an intermediate gradient (``what``: "grad_inputs", "jacobian"): each one present and
    a function of the inputs."""
    if not strict:
        return
    for i, g in enumerate(grads):
        if g is None:
            raise RuntimeError(_INDEPENDENT["back"].format(i=i))
        if not g.requires_grad:
            if what == "jacobian":
                raise RuntimeError(
                    f"While computing the hessian, found that the jacobian of the user-provided function with respect "
                    f"to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                    "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                    "would be violated by a linear function for example).")
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.")


def _returned(values: tuple[Tensor, ...], is_tuple: bool, create_graph: bool) -> Any:
    values = values if create_graph else tuple(v.detach() for v in values)
    return values if is_tuple else values[0]


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ J)``: the vector-Jacobian product at ``inputs``; ``v`` shaped as the outputs."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        inputs = _prepared(inputs, create_graph)
        out_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        vs = _vector(v, outputs, out_tuple, "vjp", "user-provided function returns")
        result = _zeros_for_none(_grads(outputs, inputs, vs, create_graph), inputs, strict, create_graph, "back")
    return _returned(outputs, out_tuple, create_graph), _returned(result, is_tuple, create_graph)


def _jvp_of(outputs: tuple[Tensor, ...], inputs: tuple[Tensor, ...], vs: tuple[Tensor, ...],
            create_graph: bool, strict: bool) -> tuple[Tensor | None, ...]:
    """``J v`` by the double-backward trick: ``g(u) = uᵀ J`` is linear in ``u``, its derivative along ``v`` ``J v``
    (one per output; None where ``g`` does not depend on ``u``). ``inputs`` require grad."""
    us = tuple(Tensor._make(np.zeros(out.shape, out.dtype)).requires_grad_(True) for out in outputs)
    g = _grads(outputs, inputs, us, True)
    _check_depends(g, "grad_inputs", strict)
    return _grads(g, us, vs, create_graph)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``; ``v`` shaped as the inputs."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    with enable_grad():
        inputs = _prepared(inputs, create_graph)
        vs = _vector(v, inputs, is_tuple, "jvp", "input to the user-provided function is")
        out_tuple, outputs = _outputs(func, inputs, "jvp", strict)
        jv = _jvp_of(outputs, inputs, vs, create_graph, strict)
        result = _zeros_for_none(jv, outputs, strict, create_graph, "back_trick")
    return _returned(outputs, out_tuple, create_graph), _returned(result, out_tuple, create_graph)


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """``d func / d inputs``: for each output and input, a Tensor of shape ``output.shape + input.shape``.

    Computed row by row, one backward per output element (``vectorize`` and ``strategy`` choose how torch
    batches that work; the result is the same).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(f'jacobian: expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        inputs = _prepared(inputs, create_graph)
        out_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        rows: list[tuple[Tensor, ...]] = []
        for i, out in enumerate(outputs):
            per_element = []  # d out.flat[k] / d each input, for each k
            for k in range(out.numel()):
                pick = np.zeros(out.numel(), out.dtype)
                pick[k] = 1
                grads = _grads((out,), inputs, (Tensor._make(pick.reshape(out.shape)),), create_graph)
                for j, g in enumerate(grads):
                    if g is None and strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    if g is not None and strict and create_graph and not g.requires_grad:
                        raise RuntimeError(_NO_GRAPH.format(what="jacobian", i=i))
                per_element.append(_zeros_for_none(grads, inputs, False, create_graph, "back"))
            rows.append(tuple(
                (stack([g[j] for g in per_element]) if per_element else Tensor._make(np.zeros((0,) + x.shape, x.dtype)))
                .reshape(out.shape + x.shape)
                for j, x in enumerate(inputs)))
    result = tuple(_returned(row, is_tuple, create_graph) for row in rows)
    return result if out_tuple else result[0]


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """``d² func / d inputs²`` of a function returning one element: the Jacobian of its gradient.

    For a tuple of inputs, ``result[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``.
    """
    is_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*point: Tensor) -> Any:
        jac = jacobian(lambda *x: _one_element(func(*x), "hessian", strict), point, create_graph=True)
        _check_depends(jac, "jacobian", strict)
        return jac if is_tuple else jac[0]

    return jacobian(gradient, inputs if is_tuple else inputs[0], create_graph=create_graph, strict=strict,
                    vectorize=vectorize, strategy=outer_jacobian_strategy)


def _one_element(out: Any, fn: str, strict: bool) -> Tensor:
    """``func``'s result, which must be one Tensor of one element (made 0-d), checked as torch checks it."""
    is_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", fn)
    if strict and not outputs[0].requires_grad:
        raise RuntimeError("Output 0 of the user-provided function does not require gradients. The outputs must be "
                           "computed in a differentiable manner from the input when running in strict mode.")
    if is_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    return out.reshape(())


def _gradient_at(func: Callable[..., Any], inputs: tuple[Tensor, ...], is_tuple: bool, v: Any, fn: str,
                 strict: bool) -> tuple[Tensor, tuple[Tensor, ...], tuple[Tensor | None, ...]]:
    """What ``vhp`` and ``hvp`` start from (in grad mode): ``v`` checked, ``func``'s one element, and its gradient
    with a graph of its own (None for an input it does not depend on)."""
    vs = _vector(v, inputs, is_tuple, fn, "input to the user-provided function is")
    out = _one_element(func(*inputs), fn, strict)
    jac = _grads((out,), inputs, (Tensor._make(np.ones((), out.dtype)),), True)
    _check_depends(jac, "jacobian", strict)
    return out, vs, jac


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ H)``, ``H`` the Hessian of a function returning one element; ``v`` shaped as the inputs."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
    with enable_grad():
        inputs = _prepared(inputs, create_graph)
        out, vs, jac = _gradient_at(func, inputs, is_tuple, v, "vhp", strict)
        result = _zeros_for_none(_grads(jac, inputs, vs, create_graph), inputs, strict, create_graph, "double_back")
    return _returned((out,), False, create_graph), _returned(result, is_tuple, create_graph)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)``, as torch: the derivative of the gradient along ``v`` (double backward)."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    with enable_grad():
        inputs = _prepared(inputs, create_graph)
        out, vs, jac = _gradient_at(func, inputs, is_tuple, v, "hvp", strict)
        us = tuple(Tensor._make(np.zeros(x.shape, x.dtype)).requires_grad_(True) for x in inputs)
        hv = _grads(_grads(jac, inputs, us, True), us, vs, create_graph)  # (the double-backward trick, as jvp)
        result = _zeros_for_none(hv, inputs, strict, create_graph, "double_back_trick")
    return _returned((out,), False, create_graph), _returned(result, is_tuple, create_graph)
