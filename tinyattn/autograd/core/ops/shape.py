"""Ops that move data without changing values: reshape, transpose, indexing, cat, ...

Their backward applies the inverse movement to the gradient: reshape it back,
transpose it back, scatter it back to where the elements came from.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..checks import broadcasts_to, normalize_dim
from ..dtypes import promote, result_type
from ..function import Context, Function
from .shared import cast, on_tensors, unbroadcast


class Reshape(Function):
    """``out = x.reshape(shape)``;  ``dx = dout.reshape(x.shape)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.reshape{out_shape}"
    grad_formulas = ("d{0} = d{out}.reshape{shape}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, shape: tuple[int, ...], op: str = "reshape") -> np.ndarray:
        ctx.shape = x.shape
        for n in shape:
            if type(n) is not int and not isinstance(n, np.integer) or n < -1:  # (True is not an int here)
                raise ValueError(f"{op}: invalid shape {tuple(shape)} (sizes are ints >= 0, or one -1 to infer)")
        try:
            return x.reshape(shape)
        except (ValueError, TypeError):
            raise ValueError(
                f"{op}: shape {tuple(shape)} is invalid for input of shape {x.shape} (size {x.size})"
            ) from None

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        # BEGIN TASK shape_backward
        return (grad_output.reshape(ctx.shape),)
        # END TASK


class Transpose(Function):
    """``out = swapaxes(x, dim0, dim1)``;  ``dx = swapaxes(dout, dim0, dim1)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.transpose{dims}"
    grad_formulas = ("d{0} = d{out}.transpose{dims}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim0: int, dim1: int) -> np.ndarray:
        ctx.dims = normalize_dim("transpose", dim0, x.ndim), normalize_dim("transpose", dim1, x.ndim)
        return x.swapaxes(*ctx.dims)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        # BEGIN TASK shape_backward
        return (grad_output.swapaxes(*ctx.dims),)
        # END TASK


class Permute(Function):
    """``out = transpose(x, dims)``;  ``dx = transpose(dout, argsort(dims))``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.permute(p)"
    grad_formulas = ("d{0} = d{out}.permute(p⁻¹)",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dims: Sequence[int]) -> np.ndarray:
        perm = tuple(normalize_dim("permute", d, x.ndim) for d in dims)
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(
                f"permute: dims {tuple(dims)} are not a permutation of the {x.ndim} dims of shape {x.shape}"
            )
        ctx.inverse = tuple(perm.index(i) for i in range(x.ndim))  # inverse[i]: where input dim i went in the output
        return x.transpose(perm)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (grad_output.transpose(ctx.inverse),)


class Unsqueeze(Function):
    """``out = expand_dims(x, dim)``;  ``dx = dout.reshape(x.shape)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.unsqueeze(…)"
    grad_formulas = ("d{0} = d{out}.reshape{shape}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int) -> np.ndarray:
        ctx.shape = x.shape
        return np.expand_dims(x, normalize_dim("unsqueeze", dim, x.ndim + 1))

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (grad_output.reshape(ctx.shape),)


class Squeeze(Function):
    """``out = x`` without size-1 dims;  ``dx = dout.reshape(x.shape)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.squeeze()"
    grad_formulas = ("d{0} = d{out}.reshape{shape}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int | None) -> np.ndarray:
        ctx.shape = x.shape
        if dim is None:
            return np.squeeze(x)
        d = normalize_dim("squeeze", dim, x.ndim)
        return np.squeeze(x, axis=d) if x.ndim and x.shape[d] == 1 else x

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (grad_output.reshape(ctx.shape),)


class Expand(Function):
    """``out = broadcast_to(x, sizes)``;  ``dx = unbroadcast(dout, x.shape)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0}.expand(…)"
    grad_formulas = ("d{0} = d{out} summed over the expanded dims",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, sizes: tuple[int, ...]) -> np.ndarray:
        lead = len(sizes) - x.ndim
        if lead < 0:
            raise ValueError(f"expand: cannot expand shape {x.shape} to fewer dims {tuple(sizes)}")
        target = tuple(x.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
        if not broadcasts_to(x.shape, target):
            raise ValueError(f"expand: cannot expand shape {x.shape} to {tuple(sizes)}")
        ctx.shape = x.shape
        return np.broadcast_to(x, target)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (unbroadcast(grad_output, ctx.shape),)


def _is_basic(index: Any) -> bool:
    """True for indexes of ints, slices, None and Ellipsis only (each element picked once)."""
    for part in index if isinstance(index, tuple) else (index,):
        if not (isinstance(part, (int, np.integer, slice)) or part is None or part is Ellipsis):
            return False
    return True


class GetItem(Function):
    """``out = x[index]``;  ``dx = zeros_like(x)`` with ``dout`` added back at ``index``;  jvp: the op itself (linear).

    Integer-array indexes may pick an element twice, so the scatter uses
    ``np.add.at``, which accumulates repeats instead of overwriting them.
    """

    formula = "{out} = {0}[{index}]"
    grad_formulas = ("d{0}[{index}] += d{out}  (zeros elsewhere)",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, index: Any) -> np.ndarray:
        ctx.index, ctx.shape, ctx.dtype = index, x.shape, x.dtype
        try:
            return np.asarray(x[index])
        except IndexError as err:
            raise IndexError(f"getitem: index {index!r} is invalid for shape {x.shape}: {err}") from None

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        dx = np.zeros(ctx.shape, dtype=ctx.dtype)
        if type(ctx.index) is slice or _is_basic(ctx.index):  # (x[:E], a slice, picks each element once)
            dx[ctx.index] = grad_output
        else:
            np.add.at(dx, ctx.index, grad_output)
        return (dx,)


class Cat(Function):
    """``out = concatenate(xs, dim)``;  ``dx_i = dout`` sliced back to ``x_i``'s part;  jvp ``tout = concatenate(txs,
    dim)``, the op itself on the tangents (linear in each input)."""

    formula = "{out} = cat(inputs)"
    grad_formulas = ("d{i} = the part of d{out} where {i} was placed",)
    linear = True  # (jvp: the op itself, on the tangents)

    @staticmethod
    def forward(ctx: Context, *xs: np.ndarray, dim: int) -> np.ndarray:
        if not xs:
            raise ValueError("cat: expected a non-empty sequence of tensors")
        for i, x in enumerate(xs):
            if x.ndim == 0:
                raise ValueError(f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated; use stack")
        d = normalize_dim("cat", dim, xs[0].ndim)
        for i, x in enumerate(xs):
            if x.ndim != xs[0].ndim or x.shape[:d] + x.shape[d + 1 :] != xs[0].shape[:d] + xs[0].shape[d + 1 :]:
                raise ValueError(
                    f"cat: tensor {i} has shape {x.shape}, which does not match {xs[0].shape} "
                    f"outside dim {dim}"
                )
        ctx.dim, ctx.bounds = d, np.cumsum([0] + [x.shape[d] for x in xs]).tolist()
        return np.concatenate(_promoted(ctx, xs), axis=d)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray, ...]:
        before = (slice(None),) * ctx.dim  # (the dims before the joined one)
        return _in_input_dtypes(ctx, (grad_output[before + (slice(lo, hi),)]
                                      for lo, hi in zip(ctx.bounds, ctx.bounds[1:])))


class Stack(Function):
    """``out = stack(xs, dim)``;  ``dx_i = dout`` indexed at ``i`` along ``dim``;  jvp ``tout = stack(txs, dim)``,
    the op itself on the tangents."""

    formula = "{out} = stack(inputs)"
    grad_formulas = ("d{i} = d{out}[i] along the stacked dim",)
    linear = True  # (jvp: the op itself, on the tangents)

    @staticmethod
    def forward(ctx: Context, *xs: np.ndarray, dim: int) -> np.ndarray:
        if not xs:
            raise ValueError("stack: expected a non-empty sequence of tensors")
        for i, x in enumerate(xs):
            if x.shape != xs[0].shape:
                raise ValueError(f"stack: tensor {i} has shape {x.shape}, expected {xs[0].shape}")
        ctx.dim = normalize_dim("stack", dim, xs[0].ndim + 1)
        return np.stack(_promoted(ctx, xs), axis=ctx.dim)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray, ...]:
        before = (slice(None),) * ctx.dim  # (the dims before the stacked one)
        return _in_input_dtypes(ctx, (grad_output[before + (i,)] for i in range(len(ctx.dtypes))))


def _promoted(ctx: Context, xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Cat's and stack's inputs in one dtype, torch's ``result_type`` of them all; each one's dtype kept on ``ctx``."""
    ctx.dtypes = [x.dtype for x in xs]
    dtype = result_type(*xs)
    return [promote(dtype, x) for x in xs]


def _in_input_dtypes(ctx: Context, pieces: Iterable[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Each gradient piece back in its input's dtype (see ``_promoted``)."""
    return tuple(cast(p, dtype) for p, dtype in zip(pieces, ctx.dtypes))


class Triangle(Function):
    """``out = tril(x, k)`` or ``triu(x, k)``: the last two dims' lower (upper) triangle, zeros elsewhere;
    ``dx = dout`` on the same triangle, 0 elsewhere;  jvp: the op itself (linear)."""

    formula = "{out} = {0} on one triangle, 0 elsewhere"
    grad_formulas = ("d{0} = d{out} on the same triangle, 0 elsewhere",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, upper: bool, diagonal: int) -> np.ndarray:
        if x.ndim < 2:
            raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 dimensions, "
                               f"got shape {x.shape}")
        rows, cols = x.shape[-2:]
        keep = np.triu(np.ones((rows, cols), dtype=bool), diagonal) if upper else np.tril(
            np.ones((rows, cols), dtype=bool), diagonal)
        ctx.save_for_backward(keep)
        return np.where(keep, x, np.zeros((), dtype=x.dtype))

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (keep,) = ctx.saved_tensors
        return (np.where(keep, grad_output, np.zeros((), dtype=grad_output.dtype)),)


def gather_index(op: str, shape: tuple[int, ...], dim: int, index: np.ndarray) -> tuple[np.ndarray, ...]:
    """Full index arrays for ``x[...]`` picking ``x[i0, .., index[i], .., ik]`` at every position ``i`` of ``index``."""
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: expected an int64 index, got dtype {index.dtype}")
    if index.ndim != len(shape):
        raise RuntimeError(f"{op}: index {index.shape} and input {shape} must have the same number of dims")
    if any(n > m for d, (n, m) in enumerate(zip(index.shape, shape)) if d != dim):
        raise RuntimeError(f"{op}: index of shape {index.shape} is larger than input {shape} outside dim {dim}")
    if index.size and (index.min() < 0 or index.max() >= shape[dim]):  # (no negative index, as torch)
        bad = index.min() if index.min() < 0 else index.max()
        raise RuntimeError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {shape[dim]}")
    grid: list[np.ndarray] = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


class Gather(Function):
    """``out[i] = x[i with index[i] at dim]`` (torch's ``gather``);  ``dx[..] += dout`` at those places
    (``np.add.at``: an element picked twice gets both gradients);  jvp: the op itself (linear)."""

    formula = "{out} = gather({0}, dim, index)"
    grad_formulas = ("d{0}[index] += d{out}  (zeros elsewhere)",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dim: int, index: np.ndarray) -> np.ndarray:
        if x.ndim == 0:
            raise RuntimeError("gather: expects a tensor with at least one dim, got a 0-d tensor")
        ctx.where = gather_index("gather", x.shape, normalize_dim("gather", dim, x.ndim), np.asarray(index))
        ctx.shape, ctx.dtype = x.shape, x.dtype
        return x[ctx.where]

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        dx = np.zeros(ctx.shape, dtype=ctx.dtype)
        np.add.at(dx, ctx.where, grad_output)
        return (dx,)


class SetItem(Function):
    """``out = x`` with ``out[index] = value`` (what ``x[index] = value`` records);  jvp ``tout = tx`` with
    ``tout[index] = tvalue``, the op itself on the tangents;
    ``dx = dout`` with the assigned elements set to 0,  ``dvalue = dout[index]`` (summed to value's shape)."""

    formula = "{out} = {0} with {out}[index] = {1}"
    grad_formulas = ("d{0} = d{out} with the assigned elements set to 0", "d{1} = d{out}[index]")
    linear = True  # (jvp: the op itself, on the tangents)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, value: Any, *, index: Any) -> np.ndarray:
        out = x.copy()
        try:
            out[index] = value
        except (IndexError, ValueError) as err:
            raise type(err)(f"setitem: cannot assign a value of shape {np.shape(value)} to index {index!r} of a "
                            f"tensor of shape {x.shape}: {err}") from None
        ctx.index, ctx.value_meta = index, (np.shape(value), getattr(value, "dtype", None))
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        dx = dvalue = None
        if ctx.needs_input_grad[0]:
            dx = grad_output.clone() if on_tensors(grad_output) else grad_output.copy()  # type: ignore[attr-defined]
            dx[ctx.index] = 0
        if ctx.needs_input_grad[1]:
            shape, dtype = ctx.value_meta
            picked = grad_output[ctx.index]
            picked = picked if on_tensors(picked) else np.asarray(picked)  # (an int index picks a NumPy scalar)
            picked = picked.reshape((1,) * (len(shape) - picked.ndim) + picked.shape)  # (value had extra 1s)
            dvalue = unbroadcast(picked, shape, dtype)
        return dx, dvalue
