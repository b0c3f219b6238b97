"""Forward-mode AD: a tangent travels forward beside each value, op by op (torch's ``autograd.forward_ad``).

Backward (reverse mode) starts from an output's gradient and gives ``vᵀ J``, a row of the Jacobian's worth
of information per pass: cheap when there are few outputs (a loss). Forward mode starts from an input's
*tangent* ``t`` and gives ``J t``, a column per pass: cheap when there are few inputs. Each op turns its
inputs' tangents into its output's tangent with its ``jvp`` (Jacobian-vector product), stated beside its
``backward`` in ``core/ops/``::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)    # x carries the tangent t
        y = f(x)                                     # each op: its value, then tout = J_op t
        jvp = forward_ad.unpack_dual(y).tangent      # J_f t

**How it attaches.** The core's ``Function.apply`` knows nothing of tangents. While a dual level is open,
this module puts ``_apply_with_tangents`` in its place: the op's own ``apply``, then, if an input carries a
tangent, the op's ``jvp`` on the inputs' tangents (zeros for an input that has none). When the level closes
the core's ``apply`` is back and every tangent made inside is dropped, as torch drops them; outside a level
forward mode costs nothing. One level at a time, as torch (nested levels are refused).

A tangent is a Tensor without a graph of its own: ``jvp`` runs on arrays. Forward over reverse works (the
Hessian-vector product: a backward with ``create_graph=True`` inside a level, whose recorded ops carry the
tangents); reverse over forward (a gradient of a tangent) does not: a tangent never requires grad.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import numpy as np

from .core import registry
from .core.function import Function
from .core.ops.shape import Reshape
from .tensor import Tensor, view_op

_core_apply = Function.__dict__["apply"].__func__  # the core's apply, which a level replaces while open
_level: int | None = None  # the open dual level (there is at most one), or None
_carriers: list[weakref.ref] = []  # every tensor (and node) given a tangent in the open level: dropped at its end

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the value and its tangent (None if it has none)."""

    primal: Any
    tangent: Any


def enter_dual_level() -> int:
    """Open a dual level (torch's): from now until ``exit_dual_level``, ops carry tangents. Returns the level."""
    global _level
    if _level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _level = 0
    Function.apply = classmethod(_apply_with_tangents)  # type: ignore[method-assign, assignment]
    return _level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open dual level: the core's ``apply`` is back, and every tangent made in the level is dropped."""
    global _level
    if _level is None or level not in (None, _level):
        raise RuntimeError(f"exit_dual_level: level {level} is not the open dual level ({_level})")
    Function.apply = classmethod(_core_apply)  # type: ignore[method-assign, assignment]
    for ref in _carriers:
        carrier = ref()
        if carrier is not None:
            carrier._fw_tangent = None
    _carriers.clear()
    _level = None


class dual_level:
    """``with forward_ad.dual_level():`` a block in which tensors carry tangents; they are dropped at its end."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc_info: object) -> None:
        exit_dual_level()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent``: its forward-mode derivative, ``dtensor/dt`` along ``t``.

    ``tensor`` keeps its history: a dual tensor made from one that requires grad passes its gradient back."""
    _check_level("make_dual", level)
    if _level is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual: expected two Tensors, got {type(tensor).__name__} and {type(tangent).__name__}")
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not t.is_floating_point():
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {t.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    dual = view_op(Reshape, tensor, shape=tensor.shape)  # (a view: the same memory and history)
    if tangent.dtype == tensor.dtype:  # the tangent itself, as torch keeps it
        dual._fw_tangent = tangent
        _carriers.append(weakref.ref(dual))
    else:
        _carry(dual, np.asarray(tangent.array, dtype=tensor.dtype))
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: ``tensor``'s value as a view without the tangent, and its tangent (None if none)."""
    _check_level("unpack_dual", level)
    tangent = getattr(tensor, "_fw_tangent", None)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = view_op(Reshape, tensor, shape=tensor.shape)
    primal._fw_tangent = None
    return UnpackedDualTensor(primal, tangent)


def _check_level(op: str, level: int | None) -> None:
    if level is not None and level != _level:
        raise RuntimeError(f"{op}: level {level} is not the open dual level ({_level})")


def _carry(carrier: Any, tangent: np.ndarray) -> None:
    """Give ``carrier`` (a tensor, or a node: the tangent of the output it saved) ``tangent``, until the level ends."""
    carrier._fw_tangent = Tensor._make(tangent)
    _carriers.append(weakref.ref(carrier))


def _apply_with_tangents(cls: type[Function], *inputs: Any, **options: Any) -> Any:
    """``cls.apply`` inside a dual level: the op, then its output's tangent from its inputs' (``cls.jvp``)."""
    result = _core_apply(cls, *inputs, **options)
    tangents = [getattr(x, "_fw_tangent", None) for x in inputs]
    if all(t is None for t in tangents) or result.dtype.kind != "f":  # (an integer or bool result has no tangent)
        return result
    primals = tuple(x.array if isinstance(x, registry.TensorBase) else x for x in inputs)
    filled = tuple(_zero_tangent(p) if t is None else t.array for p, t in zip(primals, tangents))
    tangent = np.asarray(cls.jvp(filled, primals, result.array, **options))
    if tangent.shape != result.shape:
        raise RuntimeError(f"{cls.__name__}.jvp returned a tangent of shape {tangent.shape} for an output of shape "
                           f"{result.shape}")
    tangent = tangent.astype(result.dtype, copy=False)
    _carry(result, tangent)
    if result._grad_fn is not None:  # a backward that reads this output (create_graph) reads its tangent too
        _carry(result._grad_fn, tangent)
    return result


def _zero_tangent(primal: Any) -> Any:
    """The tangent of an input that carries none: zeros of its shape (None for an input that is None)."""
    if primal is None:
        return None
    dtype = getattr(primal, "dtype", None)
    if dtype is None or dtype.kind != "f":
        return np.zeros(np.shape(primal))
    return np.zeros(np.shape(primal), dtype)
