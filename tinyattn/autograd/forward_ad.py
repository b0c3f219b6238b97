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

**How it attaches.** The last step of the core's ``Function.apply`` is the result class's ``op_result``;
tinyattn's ``Tensor`` gives it the result's tangent there (``tangents.with_tangent``): the op's ``jvp`` on the
inputs' tangents (zeros for an input that has none). When the level closes every tangent made inside is
dropped, as torch drops them. One level at a time, as torch (nested levels are refused).

A tangent is a Tensor without a graph of its own: ``jvp`` runs on arrays. Forward over reverse works (the
Hessian-vector product: a backward with ``create_graph=True`` inside a level, whose recorded ops carry the
tangents); reverse over forward (a gradient of a tangent) does not: a tangent never requires grad.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import tangents
from .core.ops.shape import Reshape
from .tensor import Tensor, view_op

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the value and its tangent (None if it has none)."""

    primal: Any
    tangent: Any


def enter_dual_level() -> int:
    """Open a dual level (torch's): from now until ``exit_dual_level``, ops carry tangents. Returns the level."""
    return tangents.open_level()


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open dual level: every tangent made in the level is dropped."""
    tangents.close_level(level)


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
    if not tangents.is_open():
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
        tangents.carry(dual, tangent)
    else:
        tangents.carry(dual, Tensor._make(np.asarray(tangent.array, dtype=tensor.dtype)))
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
    if level is not None and level != tangents.current_level():
        raise RuntimeError(f"{op}: level {level} is not the open dual level ({tangents.current_level()})")
