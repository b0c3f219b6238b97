"""Forward mode's state: the open dual level, and each op's tangent while it is open (``forward_ad.py`` is the
API built on it: ``dual_level``, ``make_dual``, ``unpack_dual``).

Inside a dual level a tensor may carry a tangent ``t``: its derivative along one direction. Each op turns its
inputs' tangents into its output's with its ``jvp`` (Jacobian-vector product, ``tout = J t``), stated beside
its ``backward`` in ``core/ops/``. The step is ``with_tangent``, which tinyattn's ``Tensor`` runs at the end of
every ``Function.apply`` (its ``op_result``, ``tensor.py``). When the level closes every tangent given in it
is dropped, as torch drops them; outside a level forward mode costs one test per op.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .core.function import Function, TensorBase

_level: int | None = None  # the open dual level (there is at most one), or None
_carriers: list[weakref.ref] = []  # every tensor (and node) given a tangent in the open level: dropped at its end


def open_level() -> int:
    """Open the dual level (torch's ``enter_dual_level``); nested levels are refused, as torch refuses them."""
    global _level
    if _level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _level = 0
    return _level


def close_level(level: int | None = None) -> None:
    """Close the open dual level and drop every tangent given in it."""
    global _level
    if _level is None or level not in (None, _level):
        raise RuntimeError(f"exit_dual_level: level {level} is not the open dual level ({_level})")
    for ref in _carriers:
        carrier = ref()
        if carrier is not None:
            carrier._fw_tangent = None
    _carriers.clear()
    _level = None


def is_open() -> bool:
    """True inside a dual level."""
    return _level is not None


def current_level() -> int | None:
    """The open dual level, or None."""
    return _level


def carry(carrier: Any, tangent: Any) -> None:
    """Give ``carrier`` (a tensor, or a node: the tangent of the output it saved) ``tangent``, a tensor, until the
    level ends."""
    carrier._fw_tangent = tangent
    _carriers.append(weakref.ref(carrier))


def with_tangent(result: Any, fn: type[Function], inputs: tuple[Any, ...], options: dict[str, Any]) -> Any:
    """``result``, the tensor ``fn`` made from ``inputs``, given its tangent ``fn.jvp(...)`` if an input carries
    one (zeros stand in for an input that carries none)."""
    if _level is None:
        return result
    tangents = [getattr(x, "_fw_tangent", None) for x in inputs]
    if all(t is None for t in tangents) or result.dtype.kind != "f":  # (an integer or bool result has no tangent)
        return result
    primals = tuple(x.array if isinstance(x, TensorBase) else x for x in inputs)
    filled = tuple(zero_tangent(p) if t is None else t.array for p, t in zip(primals, tangents))
    tangent = np.asarray(fn.jvp(filled, primals, result.array, **options))
    if tangent.shape != result.shape:
        raise RuntimeError(f"{fn.__name__}.jvp returned a tangent of shape {tangent.shape} for an output of shape "
                           f"{result.shape}")
    tangent = type(result)._make(tangent.astype(result.dtype, copy=False))
    carry(result, tangent)
    if result._grad_fn is not None:  # a backward that reads this output (create_graph) reads its tangent too
        carry(result._grad_fn, tangent)
    return result


def zero_tangent(primal: Any) -> Any:
    """The tangent of an input that carries none: zeros of its shape (None for an input that is None)."""
    if primal is None:
        return None
    dtype = getattr(primal, "dtype", None)
    if dtype is None or dtype.kind != "f":
        return np.zeros(np.shape(primal))
    return np.zeros(np.shape(primal), dtype)
