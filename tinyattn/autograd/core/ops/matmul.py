"""Matrix product with NumPy's ``@`` rules: 1-D, 2-D, and batched with broadcast batch dims.

Homework: the ``# BEGIN TASK`` / ``# END TASK`` comments mark the lines
``python -m tinyattn.homework`` can blank for students; its guide: ``python -m tinyattn.homework guide``.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..function import Context, Function
from .shared import cast, on_tensors, unbroadcast


class MatMul(Function):
    """``C = A @ B``;  ``dA = dC @ B^T``,  ``dB = A^T @ dC``;  jvp ``tC = tA @ B + A @ tB`` (the product rule).

    Shapes: ``A (..., n, k) @ B (..., k, m) -> C (..., n, m)``, the ``...`` broadcast.
    A 1-D ``A`` acts as a row ``(1, k)`` and a 1-D ``B`` as a column ``(k, 1)``;
    the added axis is dropped from ``C``. Backward works on those 2-D views and
    then unbroadcasts the batch dims, so the same two formulas cover every case.
    """

    formula = "{out} = {0} @ {1}"
    grad_formulas = ("d{0} = d{out} @ {1}ᵀ", "d{1} = {0}ᵀ @ d{out}")
    multilinear = True  # (jvp, the product rule: tA @ B + A @ tB)

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.ndim == 0 or b.ndim == 0:
            raise _matmul_error(a, b)
        try:
            out = a @ b
        except ValueError:
            raise _matmul_error(a, b) from None
        ctx.save_for_backward(a, b)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        a, b = ctx.saved_tensors
        if a.ndim == 1 or b.ndim == 1:  # a vector: the formulas below, on it as a row (1, k) or a column (k, 1)
            return _vector_backward(ctx, a, b, grad_output)
        da = db = None
        # BEGIN TASK matmul_backward
        if ctx.needs_input_grad[0]:
            da = grad_output @ b.swapaxes(-1, -2)  # (..., n, m) @ (..., m, k) -> (..., n, k)
            da = unbroadcast(da, a.shape)
        if ctx.needs_input_grad[1]:
            if b.ndim == 2 and a.ndim > 2:
                # B is shared by the whole batch: sum over the batch inside one matmul,
                # (batch*n, k)^T @ (batch*n, m), instead of batch matmuls summed after
                k, m = b.shape
                db = a.reshape(-1, k).T @ grad_output.reshape(-1, m)  # (k, m)
            else:
                db = a.swapaxes(-1, -2) @ grad_output  # (..., k, n) @ (..., n, m) -> (..., k, m)
            db = unbroadcast(db, b.shape)
        # END TASK
        return da, db


def _vector_backward(ctx: Context, a: Any, b: Any, grad_output: Any) -> tuple[Any, Any]:
    """MatMul's backward where ``a`` or ``b`` is 1-D: its formulas on ``a`` as a row ``(1, k)`` and ``b`` as a
    column ``(k, 1)`` (the axis forward dropped from the result put back in ``dC``), then the axis dropped again."""
    matrices = Context()
    matrices.needs_input_grad = ctx.needs_input_grad
    matrices.save_for_backward(a[None, :] if a.ndim == 1 else a, b[:, None] if b.ndim == 1 else b)
    if a.ndim == 1:  # restore n = 1
        grad_output = grad_output[..., None, :] if b.ndim > 1 else grad_output[None]
    if b.ndim == 1:  # restore m = 1
        grad_output = grad_output[..., None]
    da, db = MatMul.backward(matrices, grad_output)
    return (None if da is None else da.reshape(a.shape)), (None if db is None else db.reshape(b.shape))


def _linear_error(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> Exception:
    """Why ``linear`` is refused: shapes that do not fit, or more than one dtype (torch does not promote)."""
    if x.ndim == 0 or w.ndim != 2 or x.shape[-1] != w.shape[1]:
        return ValueError(
            f"linear: input of shape {x.shape} does not fit weight of shape {w.shape} "
            f"({x.shape[-1] if x.ndim else None} != {w.shape[1] if w.ndim == 2 else None})"
        )
    if b is not None and b.shape != (w.shape[0],):
        return ValueError(f"linear: bias of shape {b.shape} does not fit weight of shape {w.shape}")
    dtypes = ", ".join(str(a.dtype) for a in (x, w, b) if a is not None)
    return RuntimeError(f"linear: input, weight and bias must share one dtype, got {dtypes}")


def _matmul_error(a: np.ndarray, b: np.ndarray) -> Exception:
    """Why ``a @ b`` is refused: two dtypes (torch does not promote), a 0-d operand, or shapes that do not fit."""
    if a.dtype != b.dtype:
        return RuntimeError(f"matmul: operands have different dtypes {a.dtype} and {b.dtype}; "
                            "cast one with .to(), as torch requires")
    if a.ndim == 0 or b.ndim == 0:
        return ValueError(f"matmul: both operands need at least 1 dim, got shapes {a.shape} and {b.shape}")
    k_b = b.shape[0 if b.ndim == 1 else -2]
    if a.shape[-1] != k_b:
        return ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned ({a.shape[-1]} != {k_b})")
    listed = f"{tuple(a.shape[:-2])} and {tuple(b.shape[:-2])}"
    return ValueError(f"matmul (batch dims): shapes {listed} cannot be broadcast together")


class LinearFn(Function):
    """``Y = X W^T + b``;  ``dX = dY W``,  ``dW = dY^T X``,  ``db = sum(dY)`` over all but the last dim;
    jvp ``tY = tX W^T + X tW^T + tb``.

    Shapes: ``X (..., in)``, ``W (out, in)``, ``b (out,)`` -> ``Y (..., out)``.
    The same result as ``x @ w.T + b`` built from MatMul, Transpose and Add;
    one op instead of three, as every layer calls it.
    """

    formula = "{out} = {0} {1}ᵀ + {2}"
    grad_formulas = (
        "d{0} = d{out} {1}",
        "d{1} = (d{out})ᵀ {0}  (summed over batch and positions)",
        "d{2} = Σ d{out}  (over batch and positions)",
    )

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        if x.ndim == 0 or w.ndim != 2 or x.shape[-1] != w.shape[1] or x.dtype != w.dtype or (
                b is not None and (b.shape != (w.shape[0],) or b.dtype != w.dtype)):
            raise _linear_error(x, w, b)
        ctx.save_for_backward(x, w)
        # BEGIN TASK linear_forward
        y = x @ w.T  # (..., in) @ (in, out) -> (..., out)
        if b is not None:
            y += b
        # END TASK
        return y

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, ...]:
        x, w = ctx.saved_tensors
        out_features, in_features = w.shape
        dx = grad_output @ w if ctx.needs_input_grad[0] else None  # (..., out) @ (out, in) -> (..., in)
        rows = grad_output.reshape(-1, out_features)  # (N, out): every batch element and position, one row each
        dw = rows.T @ x.reshape(-1, in_features) if ctx.needs_input_grad[1] else None  # (out, N) @ (N, in) -> (out, in)
        db = rows.sum(axis=0) if ctx.needs_input_grad[2] else None  # (out,)
        return dx, dw, db

    @staticmethod
    def jvp(tangents: tuple[Any, ...], inputs: tuple[Any, ...], out: np.ndarray) -> Any:
        (tx, tw, *tb), (x, w, *_) = tangents, inputs
        ty = tx @ w.T + x @ tw.T
        if tb and tb[0] is not None:  # (a bias, if given)
            ty = ty + tb[0]
        return ty


def _parse_einsum(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, int]:
    """Split ``"bij,bjk->bik"`` into input and output subscripts, an ellipsis spelled out as spare letters.

    Every operand's ``...`` becomes the same ``width`` letters, aligned on the right (as broadcasting is).
    """
    equation = equation.replace(" ", "")
    inputs_part, arrow, output = equation.partition("->")
    inputs = inputs_part.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} has {len(inputs)} operands, got {len(shapes)} tensors")
    spare = [c for c in string.ascii_letters if c not in equation]
    width = max((len(s) - len(sub.replace("...", "")) for sub, s in zip(inputs, shapes) if "..." in sub), default=0)
    dots = "".join(spare[:width])
    letters = []
    for sub, shape in zip(inputs, shapes):
        explicit = sub.replace("...", "")
        fits = len(explicit) <= len(shape) if "..." in sub else len(sub) == len(shape)
        if explicit and not explicit.isalpha() or not fits:
            raise ValueError(f"einsum: subscripts {sub!r} do not fit an operand of shape {shape}")
        if len(set(explicit)) != len(explicit):
            raise NotImplementedError(f"einsum: a repeated index within one operand ({sub!r}, a diagonal) is not "
                                      "supported")
        letters.append(sub.replace("...", dots[width - (len(shape) - len(explicit)):]))
    if not arrow:  # implicit output: the ellipsis, then the letters used once, in alphabetical order
        counts = "".join(inputs).replace("...", "")
        output = "..." + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    return letters, output.replace("...", dots), width


class Einsum(Function):
    """``out = einsum(equation, *xs)``;  ``dx_i = einsum(dout and every other x_j -> x_i's subscripts)``;
    jvp ``tout = Σ_i einsum(equation, the xs with tx_i in x_i's place)`` (it is linear in each operand).

    Each operand's gradient is the same sum with the output's gradient in its place: what
    ``out`` multiplied ``x_i`` by, summed the way ``x_i``'s indices were spread. An index only
    ``x_i`` has (summed away) is copied back along its dim; broadcast ``...`` dims are summed.
    """

    formula = "{out} = einsum(equation, ...)"
    grad_formulas = ("d{i} = einsum(d{out} with the other operands -> {i}'s subscripts)",)
    multilinear = True  # (jvp, the product rule: one input's tangent at a time)

    @staticmethod
    def forward(ctx: Context, *xs: np.ndarray, equation: str) -> np.ndarray:
        xs = tuple(np.asarray(x) for x in xs)
        if len({x.dtype for x in xs}) > 1:
            raise RuntimeError(f"einsum: operands have different dtypes {tuple(str(x.dtype) for x in xs)}")
        letters, output, width = _parse_einsum(equation, [x.shape for x in xs])
        sizes: dict[str, int] = {}
        for sub, x in zip(letters, xs):
            for c, n in zip(sub, x.shape):
                if sizes.get(c, 1) not in (1, n) and n != 1:
                    raise ValueError(f"einsum: index {c!r} has sizes {sizes[c]} and {n} in {equation!r}")
                sizes[c] = max(sizes.get(c, 1), n)
        ctx.shapes, ctx.letters, ctx.output = [x.shape for x in xs], letters, output
        ctx.full_shapes = [tuple(sizes[c] for c in sub) for sub in letters]
        ctx.save_for_backward(*xs)
        return np.einsum(",".join(letters) + "->" + output, *_broadcast(xs, ctx.full_shapes))

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray | None, ...]:
        full = _broadcast(ctx.saved_tensors, ctx.full_shapes)  # every operand at the indices' full sizes
        grads: list[np.ndarray | None] = []
        for i, (sub, x) in enumerate(zip(ctx.letters, full)):
            if not ctx.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [ctx.output] + [s for j, s in enumerate(ctx.letters) if j != i]
            arrays = [grad_output] + [a for j, a in enumerate(full) if j != i]
            kept = "".join(c for c in sub if c in "".join(others))
            grad_input = _einsum(",".join(others) + "->" + kept, *arrays)
            grad_input = grad_input.reshape(tuple(n if c in kept else 1 for c, n in zip(sub, x.shape)))
            (grad_input,) = _broadcast((grad_input,), [x.shape])  # an index only this operand had: copied along it
            grads.append(cast(unbroadcast(grad_input, ctx.shapes[i]).reshape(ctx.shapes[i]), x.dtype))
        return tuple(grads)


def _broadcast(xs: tuple[Any, ...], shapes: list[tuple[int, ...]]) -> tuple[Any, ...]:
    """Each operand broadcast to its shape (``np.broadcast_to``, or ``expand`` for a Tensor)."""
    return tuple(x.expand(s) if on_tensors(x) else np.broadcast_to(x, s) for x, s in zip(xs, shapes))


def _einsum(equation: str, *xs: Any) -> Any:
    """``np.einsum`` on arrays; the op ``Einsum`` when a Tensor is among them (a backward building a graph)."""
    return Einsum.apply(*xs, equation=equation) if on_tensors(*xs) else np.einsum(equation, *xs)
