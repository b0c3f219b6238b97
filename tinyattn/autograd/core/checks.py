"""The rules that guard the lesson, each written once and raising its own message.

The files of the lesson call these by name (``checks.gradients_fit(node, grads)``) instead of spelling a
check out in the middle of a formula. Each function either returns quietly or raises a ``RuntimeError``,
``ValueError``, ``TypeError`` or ``IndexError`` whose message names the op, the argument and the shapes.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np


def gradients_fit(op: str, grads: Any, input_meta: tuple[Any, ...]) -> tuple[Any, ...]:
    """``grads`` as a tuple of one gradient per input of ``op``, each of its input's shape and dtype (or None).

    ``input_meta[i]`` is input ``i``'s ``(shape, dtype)``, None for an input that takes no gradient (whatever
    the backward returned for it is dropped). A one-input op may return its gradient bare, without the tuple.
    """
    if type(grads) is not tuple:
        grads = (grads,)
    if len(grads) != len(input_meta):
        raise RuntimeError(f"{op}.backward returned {len(grads)} gradients for {len(input_meta)} inputs")
    for position, grad in enumerate(grads):
        if grad is not None:
            gradient_fits(op, position, grad, input_meta[position])
    return grads


def gradient_fits(op: str, position: int, grad: Any, meta: tuple[Any, Any] | None) -> None:
    """Refuse a gradient that does not fit input ``position`` of ``op``, whose (shape, dtype) is ``meta``
    (None: the input takes no gradient, and what was returned for it is dropped)."""
    if meta is None:
        return
    shape = getattr(grad, "shape", None)
    dtype = getattr(grad, "dtype", None)
    if shape == meta[0] and dtype == meta[1]:
        return
    if shape is None or dtype is None:
        got = f"a {type(grad).__name__}"
    else:
        got = f"a gradient of shape {shape} and dtype {dtype}"
    raise RuntimeError(f"{op}.backward returned {got} for input {position}, which has shape {meta[0]} "
                       f"and dtype {meta[1]}")


def can_require_grad(dtype: np.dtype) -> None:
    """Only a floating point value has a derivative (an integer or a bool cannot be moved a little)."""
    if dtype.kind != "f":
        raise RuntimeError(f"only floating point tensors can require gradients (got dtype {dtype})")


def can_stop_requiring_grad(grad_fn: Any) -> None:
    """Only a leaf may stop requiring grad: a tensor an op made is part of its graph (``detach()`` cuts a copy out)."""
    if grad_fn is not None:
        raise RuntimeError("requires_grad can only be turned off on a leaf; use detach()")


def assigned_grad(tensor: Any, value: Any, tensor_type: Any) -> None:
    """``tensor.grad = value``: None, or a tensor of ``tensor``'s own shape and dtype."""
    if value is None:
        return
    if not isinstance(value, tensor_type):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(value).__name__}")
    if value.shape != tensor.shape or value.dtype != tensor.dtype:
        raise RuntimeError(f"assigned grad has shape {value.shape} and dtype {value.dtype}; the tensor has shape "
                           f"{tensor.shape} and dtype {tensor.dtype}")


def start_gradient(output: np.ndarray, gradient: np.ndarray | None) -> None:
    """The gradient a backward pass starts from at ``output``: none for one element (it is 1), else one of its shape."""
    shape = output.shape
    if gradient is None:
        if output.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; "
                f"this output has shape {shape}, so pass gradient=... of that shape"
            )
        return
    if gradient.shape != shape:
        raise ValueError(f"backward: gradient has shape {gradient.shape}, expected the output's shape {shape}")


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast rule, with an error that names the op and the shapes."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"{op}: shapes {listed} cannot be broadcast together") from None


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True if an array of ``shape`` broadcasts to exactly ``target`` (as a mask or ``expand`` needs)."""
    try:
        return tuple(np.broadcast_shapes(shape, target)) == tuple(target)
    except ValueError:
        return False


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """Turn a possibly negative ``dim`` into an index in ``[0, ndim)``, or raise."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    size = max(ndim, 1)  # (a 0-d tensor accepts dim 0 and -1, as torch does)
    if not -size <= dim < size:
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected {-size}..{size - 1})"
        )
    return int(dim) % size


def normalize_dims(op: str, dim: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative axes; ``None`` means every axis.

    A 0-d tensor accepts ``dim`` 0 or -1, as torch does, and has no axis to reduce: ``()``.
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dims: tuple[Any, ...] = (dim,)
    else:
        dims = tuple(dim)
    out = tuple(sorted({normalize_dim(op, d, ndim) for d in dims}))
    if len(out) != len(dims):
        raise ValueError(f"{op}: dim {tuple(dims)} repeats an axis")
    if ndim == 0:
        return ()
    return out
