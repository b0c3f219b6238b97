"""``gradcheck``: compare the analytic gradient with central finite differences.

For ``L = sum_i sum(func(*inputs)[i] * R_i)`` with fixed random ``R_i`` (drawn
from gradcheck's own RNG), every element ``x_j`` of every input that requires
grad is checked::

    analytic:   dL/dx_j  from backward()
    numerical:  (L(x_j + eps) - L(x_j - eps)) / (2 eps)
    pass if:    |analytic - numerical| <= atol + rtol * |numerical|

A random ``R`` (rather than ``L = sum(out)``) matters: the sum of a softmax is
always 1, so its gradient is zero and any backward would pass.

``With ``check_forward_ad=True`` forward mode is checked too: the tangent of ``L`` for the tangent ``e_j``
(one at ``x_j``, zeros elsewhere) is ``dL/dx_j`` again, a column of the Jacobian at a time (``forward_ad``),
compared with the same numbers.

``gradgradcheck`` checks second derivatives the same way: it runs ``gradcheck`` on the
function ``(inputs, R) -> dL/dinputs``, the gradient computed with ``create_graph=True``, so
finite differences of the gradient are compared with a backward through the backward.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from . import forward_ad
from .core.grad_mode import enable_grad, no_grad
from .engine import grad
from .tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytic and numerical gradients disagree."""


def _outputs(result: Any) -> list[Tensor]:
    results = result if isinstance(result, (tuple, list)) else (result,)
    return [r for r in results if isinstance(r, Tensor) and r.dtype.kind == "f"]


def _weighted_sum(outputs: Sequence[Tensor], weights: Sequence[np.ndarray]) -> float:
    return float(sum(np.sum(o.array * w) for o, w in zip(outputs, weights)))  # w is float64: so is the sum


def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check ``func``'s derivatives against finite differences for every input that requires grad.

    ``check_backward_ad`` (the default) checks backward; ``check_forward_ad`` checks forward mode. torch's other
    options (``nondet_tol``, ``check_undefined_grad``, ``check_batched_grad``, ``fast_mode``...) are accepted; the
    check is always the full, element by element one.
    Returns True; on a mismatch raises ``GradcheckError`` naming the input
    position and its three worst elements with both values (or returns False when
    ``raise_exception=False``). ``func`` may return one tensor or a tuple of them.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    checked = [(i, t) for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad")
    for i, t in checked:
        if t.dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} is {t.dtype}, not float64; finite differences will be inaccurate",
                stacklevel=2,
            )
    rng = np.random.default_rng(seed)  # gradcheck's own RNG: global state is left alone
    outputs = _outputs(func(*inputs))
    if not outputs:
        raise ValueError("gradcheck: func returned no floating-point tensor")
    weights = [rng.standard_normal(o.shape) for o in outputs]

    # analytic: one backward of L = sum_i sum(out_i * R_i) through every output at once
    analytic = [np.zeros(t.shape) for _, t in checked]
    terms = [(o * w).sum() for o, w in zip(outputs, weights) if o.requires_grad]
    if terms and check_backward_ad:
        loss = terms[0]
        for term in terms[1:]:
            loss = loss + term
        for acc, g in zip(analytic, grad(loss, [t for _, t in checked], allow_unused=True)):
            if g is not None:
                acc += g

    for (position, t), a in zip(checked, analytic):
        numerical = np.zeros(t.shape)
        flat = t.array.reshape(-1)  # a view: writing it perturbs t
        if not np.shares_memory(flat, t.array):
            raise ValueError(f"gradcheck: input {position} must be contiguous")
        with no_grad():
            for j in range(flat.size):
                original = flat[j]
                flat[j] = original + eps
                plus = _weighted_sum(_outputs(func(*inputs)), weights)
                flat[j] = original - eps
                minus = _weighted_sum(_outputs(func(*inputs)), weights)
                flat[j] = original
                numerical.flat[j] = (plus - minus) / (2 * eps)
        checks = [("backward()", a)] if check_backward_ad else []
        if check_forward_ad:
            checks.append(("forward mode", _forward_mode_column_sums(func, inputs, position, weights)))
        for how, analytic_values in checks:
            excess = np.abs(analytic_values - numerical) - (atol + rtol * np.abs(numerical))
            if np.any(excess > 0) or not np.all(np.isfinite(analytic_values)):
                message = _mismatch_message(getattr(func, "__name__", repr(func)), position, t.shape,
                                            analytic_values, numerical, excess, atol, rtol, how)
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _forward_mode_column_sums(func: Callable[..., Any], inputs: tuple[Any, ...], position: int,
                              weights: Sequence[np.ndarray]) -> np.ndarray:
    """``dL/dx_j`` for every element ``j`` of input ``position``, by forward mode: the tangent of
    ``L = sum_i sum(out_i ⊙ R_i)`` when ``x`` carries the tangent ``e_j``."""
    x = inputs[position]
    values = np.zeros(x.shape)
    for j in range(x.numel()):
        direction = np.zeros(x.shape, x.dtype)
        direction.flat[j] = 1
        with forward_ad.dual_level(), no_grad():
            dual = forward_ad.make_dual(x, Tensor._make(direction))
            outputs = _outputs(func(*inputs[:position], dual, *inputs[position + 1:]))
            for o, w in zip(outputs, weights):
                tangent = forward_ad.unpack_dual(o).tangent
                if tangent is not None:
                    values.flat[j] += float(np.sum(tangent.array * w))
    return values


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
) -> bool:
    """Check ``func``'s second derivatives: ``gradcheck`` of its gradient, as torch's ``gradgradcheck``.

    The gradient is ``dL/dx`` for ``L = sum_i sum(func(*inputs)[i] * R_i)``, taken with
    ``create_graph=True``; ``R_i`` are ``grad_outputs`` (random, requiring grad, if not given),
    and the gradient is checked with respect to both the inputs and ``R``.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    positions = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not positions:
        raise ValueError("gradgradcheck: no input requires grad")
    if grad_outputs is None:
        rng = np.random.default_rng(seed + 1)  # (not gradcheck's own R for the outer check)
        grad_outputs = [Tensor._make(rng.standard_normal(o.shape).astype(o.dtype), requires_grad=True)
                        for o in _outputs(func(*inputs))]
    weights = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)

    def gradient(*args: Any) -> tuple[Tensor | None, ...]:
        xs, rs = args[: len(inputs)], args[len(inputs):]
        with enable_grad():  # (gradcheck evaluates it under no_grad; this derivative needs its graph)
            loss = sum((o * r).sum() for o, r in zip(_outputs(func(*xs)), rs))
            return grad(loss, [xs[i] for i in positions], create_graph=True, materialize_grads=True)

    gradient.__name__ = f"the gradient of {getattr(func, '__name__', repr(func))}"
    return gradcheck(gradient, (*inputs, *weights), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, seed=seed)


def _mismatch_message(
    name: str, position: int, shape: tuple[int, ...], analytic: np.ndarray, numerical: np.ndarray,
    excess: np.ndarray, atol: float, rtol: float, how: str = "backward()",
) -> str:
    """Name the input and its three worst elements, and say what the two numbers are."""
    order = np.argsort(-np.where(np.isfinite(excess), excess, np.inf), axis=None, kind="stable")[:3]
    lines = [
        f"gradcheck: {name}: gradient mismatch for input {position} (shape {shape}).",
        "  Both numbers are dL/dx for L = sum(output ⊙ R), R a fixed random tensor: 'analytic' from",
        f"  {how}, 'numerical' from central finite differences (L(x + eps) - L(x - eps)) / (2 eps).",
        f"  Worst elements (allowed: |analytic - numerical| <= {atol} + {rtol} * |numerical|):",
    ]
    for flat in order:
        index = tuple(int(k) for k in np.unravel_index(int(flat), shape))
        if not excess.flat[flat] > 0 and np.isfinite(analytic.flat[flat]):
            break
        lines.append(f"    at {index}: analytic {analytic[index]:.6g} vs numerical {numerical[index]:.6g}")
    return "\n".join(lines)
