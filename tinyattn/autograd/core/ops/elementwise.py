"""Elementwise ops. Binary ops broadcast like NumPy; backward undoes it with ``unbroadcast``.

For ``out = f(a, b)`` with upstream gradient ``dout = dL/dout`` (``grad_output`` in the code) each backward returns
``dL/da = unbroadcast(dout * df/da)`` and ``dL/db = unbroadcast(dout * df/db)``.

Operands of two dtypes compute in the promoted one (``_operands``), but what forward saves for backward
is each operand as it was given, as torch saves its inputs: NumPy promotes again in backward, and when a
gradient is differentiated in turn the saved operand is the input itself, so the second derivative reaches it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes  # dtypes.DEFAULT_FLOAT: the default float dtype, read at each call (set_default_dtype)
from ..checks import broadcast_shapes, broadcasts_to
from ..dtypes import promote, result_type
from ..function import Context, Function
from .shared import on_tensors, unbroadcast


def _meta(x: Any) -> tuple[tuple[int, ...], Any]:
    """Shape and dtype of an operand (a Python scalar has shape () and no dtype)."""
    return (x.shape, x.dtype) if isinstance(x, np.ndarray) else ((), None)


def _operands(ctx: Context, op: str, a: Any, b: Any, floating: bool = False) -> tuple[Any, Any]:
    """Check that ``a`` and ``b`` broadcast, note their shapes and dtypes (each gradient goes back in
    its input's), and return them in the dtype the op computes in: torch's ``result_type``, at
    least the default float if ``floating`` (true division)."""
    ctx.a_meta, ctx.b_meta = _meta(a), _meta(b)
    if type(b) is float and type(a) is np.ndarray and a.dtype.kind == "f":  # the common x * 0.5: nothing to check
        return a, a.dtype.type(b)
    if ctx.a_meta[0] != ctx.b_meta[0]:
        broadcast_shapes(op, ctx.a_meta[0], ctx.b_meta[0])  # raises naming both shapes
    dtype = result_type(a, b)
    if floating and dtype.kind != "f":
        dtype = dtypes.DEFAULT_FLOAT
    return promote(dtype, a), promote(dtype, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    """``np.where(cond, a, b)``, or the op ``Where`` if ``a`` or ``b`` is a Tensor (a backward building a graph)."""
    if on_tensors(a, b):
        return Where.apply(cond, a, b)
    return np.where(cond, a, b)


def _floating(x: np.ndarray) -> np.ndarray:
    """An integer or bool input of ``exp``, ``log``... computes in the default float (float32), as in torch."""
    return x if x.dtype.kind == "f" else x.astype(dtypes.DEFAULT_FLOAT)


class Add(Function):
    """``out = a + b``;  ``da = dout``, ``db = dout`` (each unbroadcast);  jvp ``tout = ta + tb``."""

    formula = "{out} = {0} + {1}"
    grad_formulas = ("d{0} = d{out}", "d{1} = d{out}")

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        a, b = _operands(ctx, "add", a, b)
        return a + b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        return unbroadcast(grad_output, *ctx.a_meta), unbroadcast(grad_output, *ctx.b_meta)

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        ta, tb = tangents
        return ta + tb


class Sub(Function):
    """``out = a - b``;  ``da = dout``, ``db = -dout``;  jvp ``tout = ta - tb``."""

    formula = "{out} = {0} − {1}"
    grad_formulas = ("d{0} = d{out}", "d{1} = −d{out}")

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        a, b = _operands(ctx, "sub", a, b)
        return a - b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        return unbroadcast(grad_output, *ctx.a_meta), unbroadcast(-grad_output, *ctx.b_meta)

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        ta, tb = tangents
        return ta - tb


class Mul(Function):
    """``out = a * b``;  ``da = dout * b``, ``db = dout * a``;  jvp ``tout = ta * b + a * tb``."""

    formula = "{out} = {0} ⊙ {1}"
    grad_formulas = ("d{0} = d{out} ⊙ {1}", "d{1} = d{out} ⊙ {0}")

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        # keep each operand (as given: see the module's docstring) only if the *other* one needs a gradient
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        a, b = _operands(ctx, "mul", a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        da = unbroadcast(grad_output * b, *ctx.a_meta) if ctx.needs_input_grad[0] else None
        db = unbroadcast(grad_output * a, *ctx.b_meta) if ctx.needs_input_grad[1] else None
        return da, db

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        (ta, tb), (a, b) = tangents, inputs
        return ta * b + a * tb


class Div(Function):
    """``out = a / b``;  ``da = dout / b``, ``db = -dout * a / b**2``;  jvp ``tout = (ta - out * tb) / b``."""

    formula = "{out} = {0} / {1}"
    grad_formulas = ("d{0} = d{out} / {1}", "d{1} = −d{out} ⊙ {0} / {1}²")

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        a, b = _operands(ctx, "div", a, b, floating=True)
        return a / b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        da = unbroadcast(grad_output / b, *ctx.a_meta) if ctx.needs_input_grad[0] else None
        db = unbroadcast(-grad_output * a / (b * b), *ctx.b_meta) if ctx.needs_input_grad[1] else None
        return da, db

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        (ta, tb), (_, b) = tangents, inputs
        return (ta - out * tb) / b


class Pow(Function):
    """``out = a ** b``;  ``da = dout * b * a**(b-1)``, ``db = dout * out * log(a)``;
    jvp ``tout = ta * b * a**(b-1) + tb * out * log(a)``.

    As in torch, ``da`` is 0 where ``b = 0`` (``x ** 0`` is constant, even at ``x = 0``) and ``db``
    is 0 where ``a = 0`` and ``b >= 0`` (the limit of ``out * log(a)``), never ``0 * inf = NaN``.
    """

    formula = "{out} = {0} ^ {1}"
    grad_formulas = ("d{0} = d{out} ⊙ {1} ⊙ {0}^({1} − 1)", "d{1} = d{out} ⊙ {out} ⊙ log({0})")
    saved_output = 2  # (saved: a, b, out)

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        out = np.power(*_operands(ctx, "pow", a, b))
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        a, b, out = ctx.saved_tensors
        da = db = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_input_grad[0]:
                da = unbroadcast(grad_output * where(b == 0, 0.0, b * np.power(a, b - 1)), *ctx.a_meta)
            if ctx.needs_input_grad[1]:
                db = unbroadcast(grad_output * where((a == 0) & (b >= 0), 0.0, out * np.log(a)), *ctx.b_meta)
        return da, db

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        (ta, tb), (a, b) = tangents, inputs
        with np.errstate(divide="ignore", invalid="ignore"):
            da = np.where(b == 0, 0.0, b * np.power(a, b - 1))  # (the same zeros as backward's)
            # (and 0 where the exponent has no tangent: a constant exponent of a negative base has a NaN log(a))
            db = np.where((a == 0) & (b >= 0) | (tb == 0), 0.0, out * np.log(a))
        return ta * da + tb * db


class Neg(Function):
    """``out = -x``;  ``dx = -dout``;  jvp ``tout = -tx``, the op itself (linear)."""

    formula = "{out} = −{0}"
    grad_formulas = ("d{0} = −d{out}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return -x

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (-grad_output,)


class Exp(Function):
    """``out = exp(x)``;  ``dx = dout * out``;  jvp ``tout = tx * out``."""

    formula = "{out} = exp({0})"
    grad_formulas = ("d{0} = d{out} ⊙ {out}",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        out = np.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (out,) = ctx.saved_tensors
        return (grad_output * out,)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,) = tangents
        return tx * out


class Log(Function):
    """``out = log(x)``;  ``dx = dout / x``;  jvp ``tout = tx / x``."""

    formula = "{out} = log({0})"
    grad_formulas = ("d{0} = d{out} / {0}",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        ctx.save_for_backward(x)
        return np.log(x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (grad_output / x,)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx / x


class Log1p(Function):
    """``out = log(1 + x)``, exact for tiny ``x``;  ``dx = dout / (1 + x)``;  jvp ``tout = tx / (1 + x)``."""

    formula = "{out} = log(1 + {0})"
    grad_formulas = ("d{0} = d{out} / (1 + {0})",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        ctx.save_for_backward(x)
        return np.log1p(x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (grad_output / (1 + x),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx / (1 + x)


class Expm1(Function):
    """``out = exp(x) - 1``, exact for tiny ``x``;  ``dx = dout * (out + 1)``;  jvp ``tout = tx * (out + 1)``."""

    formula = "{out} = exp({0}) − 1"
    grad_formulas = ("d{0} = d{out} ⊙ ({out} + 1)",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        out = np.expm1(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (out,) = ctx.saved_tensors
        return (grad_output * (out + 1),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,) = tangents
        return tx * (out + 1)


class Sqrt(Function):
    """``out = sqrt(x)``;  ``dx = dout / (2 * out)``;  jvp ``tout = tx / (2 * out)``."""

    formula = "{out} = sqrt({0})"
    grad_formulas = ("d{0} = d{out} / (2 {out})",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        out = np.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (out,) = ctx.saved_tensors
        return (grad_output / (2 * out),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,) = tangents
        return tx / (2 * out)


class Tanh(Function):
    """``out = tanh(x)``;  ``dx = dout * (1 - out**2)``;  jvp ``tout = tx * (1 - out * out)``."""

    formula = "{out} = tanh({0})"
    grad_formulas = ("d{0} = d{out} ⊙ (1 − {out}²)",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        out = np.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (out,) = ctx.saved_tensors
        return (grad_output * (1 - out * out),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,) = tangents
        return tx * (1 - out * out)


class ReLUFn(Function):
    """``out = max(x, 0)``;  ``dx = dout * (x > 0)``;  jvp ``tout = tx * (x > 0)``."""

    formula = "{out} = max({0}, 0)"
    grad_formulas = ("d{0} = d{out} ⊙ [{0} > 0]",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(x > 0)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (positive,) = ctx.saved_tensors
        return (grad_output * positive,)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx * (x > 0)


class Sigmoid(Function):
    """``out = 1 / (1 + exp(-x))``;  ``dx = dout * out * (1 - out)``;  jvp ``tout = tx * out * (1 - out)``."""

    formula = "{out} = σ({0})"
    grad_formulas = ("d{0} = d{out} ⊙ {out} ⊙ (1 − {out})",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        # exp of a non-positive number only, so neither branch overflows
        e = np.exp(-np.abs(x))
        out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (out,) = ctx.saved_tensors
        return (grad_output * out * (1 - out),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,) = tangents
        return tx * out * (1 - out)


class Abs(Function):
    """``out = |x|``;  ``dx = dout * sign(x)`` (0 at x = 0, as torch);  jvp ``tout = tx * sign(x)``."""

    formula = "{out} = |{0}|"
    grad_formulas = ("d{0} = d{out} ⊙ sign({0})",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (grad_output * np.sign(x),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx * np.sign(x)


class Cast(Function):
    """``out = x.astype(dtype)``;  ``dx = dout.astype(x.dtype)``;  jvp: the op itself (linear)."""

    formula = "{out} = {0} (new dtype)"
    grad_formulas = ("d{0} = d{out} (cast back)",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, dtype: np.dtype) -> np.ndarray:
        ctx.in_dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (grad_output.astype(ctx.in_dtype),)


def _bool_mask(op: str, mask: Any) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"{op}: mask must be a bool tensor, got dtype {mask.dtype}")
    return mask


class MaskedFill(Function):
    """``out = where(mask, value, x)``;  ``dx = where(mask, 0, dout)``;  jvp ``tout = where(mask, 0, tx)``."""

    formula = "{out} = masked_fill({0}, mask, value)"
    grad_formulas = ("d{0} = d{out} with the masked entries set to 0", "")

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, mask: Any, *, value: float) -> np.ndarray:
        mask = _bool_mask("masked_fill", mask)
        if not broadcasts_to(mask.shape, x.shape):
            raise ValueError(
                f"masked_fill: mask of shape {mask.shape} does not broadcast to the "
                f"tensor's shape {x.shape}"
            )
        ctx.save_for_backward(mask)
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray, None]:
        (mask,) = ctx.saved_tensors
        return where(mask, 0.0, grad_output), None  # (a Python 0.0 keeps grad_output's dtype)

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray, *, value: float) -> Any:
        (tx, _), (_, mask) = tangents, inputs
        return np.where(mask, 0.0, tx)


class Where(Function):
    """``out = where(cond, a, b)``;  ``da = where(cond, dout, 0)``, ``db = where(cond, 0, dout)``;
    jvp ``tout = where(cond, ta, tb)``."""

    formula = "{out} = where(cond, {1}, {2})"
    grad_formulas = ("", "d{1} = d{out} where cond, else 0", "d{2} = d{out} where not cond, else 0")

    @staticmethod
    def forward(ctx: Context, cond: Any, a: Any, b: Any) -> np.ndarray:
        cond = _bool_mask("where", cond)
        a, b = _operands(ctx, "where", a, b)
        broadcast_shapes("where", cond.shape, ctx.a_meta[0], ctx.b_meta[0])
        ctx.save_for_backward(cond)
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[None, Any, Any]:
        (cond,) = ctx.saved_tensors
        da = unbroadcast(where(cond, grad_output, 0.0), *ctx.a_meta) if ctx.needs_input_grad[1] else None
        db = unbroadcast(where(cond, 0.0, grad_output), *ctx.b_meta) if ctx.needs_input_grad[2] else None
        return None, da, db

    @staticmethod
    def jvp(tangents: tuple[Any, Any, Any], inputs: tuple[Any, Any, Any], out: np.ndarray) -> Any:
        (_, ta, tb), (cond, _, _) = tangents, inputs
        return np.where(cond, ta, tb)


_erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf; math.erf is exact to double precision


class Erf(Function):
    """``out = erf(x) = 2/√π ∫₀ˣ exp(-t²) dt``;  ``dx = dout * 2/√π * exp(-x²)``;
    jvp ``tout = tx * 2/√π * exp(-x²)``."""

    formula = "{out} = erf({0})"
    grad_formulas = ("d{0} = d{out} ⊙ 2/√π exp(−{0}²)",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        ctx.save_for_backward(x)
        return _erf(x).astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (grad_output * (2 / math.sqrt(math.pi)) * np.exp(-(x * x)),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx * (2 / math.sqrt(math.pi)) * np.exp(-(x * x))


class GELUFn(Function):
    """``out = x * Phi(x)``, ``Phi`` the standard normal CDF;  ``dx = dout * (Phi(x) + x * phi(x))``;
    jvp ``tout = tx * (Phi(x) + x * phi(x))``.

    With ``approximate="tanh"``: ``Phi(x) ~ (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``.
    """

    formula = "{out} = {0} ⊙ Φ({0})"
    grad_formulas = ("d{0} = d{out} ⊙ (Φ({0}) + {0} ⊙ φ({0}))",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, approximate: str = "none") -> np.ndarray:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        cdf, dcdf = _gelu_parts(x, approximate)
        ctx.save_for_backward(x, cdf, dcdf)
        return x * cdf

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        x, cdf, dcdf = ctx.saved_tensors
        if on_tensors(x):  # a backward recorded as ops: Φ and φ again, as ops on x
            cdf, dcdf = _gelu_parts(x, ctx.kwargs.get("approximate", "none"))
        return (grad_output * (cdf + x * dcdf),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, approximate: str = "none") -> Any:
        (tx,), (x,) = tangents, inputs
        cdf, dcdf = _gelu_parts(x, approximate)
        return tx * (cdf + x * dcdf)


def _gelu_parts(x: Any, approximate: str) -> tuple[Any, Any]:
    """GELU's ``Φ(x)`` and its slope ``Φ'(x)`` (exact: the normal density φ), on an array or a Tensor."""
    if approximate == "none":
        cdf = 0.5 * (1.0 + (Erf.apply(x / math.sqrt(2.0)) if on_tensors(x)
                            else _erf(x / math.sqrt(2.0)).astype(x.dtype)))
        return cdf, np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # φ(x)
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x * x * x))  # (x³ as a product: NumPy's ** takes a general power)
    return 0.5 * (1 + t), 0.5 * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


class Sin(Function):
    """``out = sin(x)``;  ``dx = dout * cos(x)``;  jvp ``tout = tx * cos(x)``."""

    formula = "{out} = sin({0})"
    grad_formulas = ("d{0} = d{out} ⊙ cos({0})",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        ctx.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (grad_output * np.cos(x),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return tx * np.cos(x)


class Cos(Function):
    """``out = cos(x)``;  ``dx = -dout * sin(x)``;  jvp ``tout = -tx * sin(x)``."""

    formula = "{out} = cos({0})"
    grad_formulas = ("d{0} = −d{out} ⊙ sin({0})",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        x = _floating(x)
        ctx.save_for_backward(x)
        return np.cos(x)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (x,) = ctx.saved_tensors
        return (-grad_output * np.sin(x),)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray) -> Any:
        (tx,), (x,) = tangents, inputs
        return -tx * np.sin(x)


class Clamp(Function):
    """``out = min(max(x, lo), hi)``;  ``dx = dout * [lo <= x <= hi]`` (ends included, as torch);
    jvp ``tout = tx * [lo <= x <= hi]``."""

    formula = "{out} = clamp({0}, min, max)"
    grad_formulas = ("d{0} = d{out} ⊙ [min ≤ {0} ≤ max]",)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, min: Any = None, max: Any = None) -> np.ndarray:
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must not be None")
        bounds = [b for b in (min, max) if b is not None]
        dtype = result_type(x, *bounds)
        x = promote(dtype, x)
        inside = np.ones(x.shape, dtype=bool)
        if min is not None:
            inside &= x >= min
        if max is not None:
            inside &= x <= max
        ctx.save_for_backward(inside)
        out = x if min is None else np.maximum(x, promote(dtype, min))
        return (out if max is None else np.minimum(out, promote(dtype, max))).astype(dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        (inside,) = ctx.saved_tensors
        return (grad_output * inside,)

    @staticmethod
    def jvp(tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, *, min: Any = None, max: Any = None) -> Any:
        (tx,), (x,) = tangents, inputs
        inside = np.ones(np.shape(x), dtype=bool)
        if min is not None:
            inside &= x >= min
        if max is not None:
            inside &= x <= max
        return tx * inside


class Clone(Function):
    """``out = a copy of x``;  ``dx = dout``;  jvp: the op itself (linear)."""

    formula = "{out} = {0} (a copy)"
    grad_formulas = ("d{0} = d{out}",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        return x.copy()

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        return (grad_output,)


class Copy(Function):
    """``out = src`` broadcast to ``x``'s shape and cast to its dtype (``copy_``, ``fill_``...);
    ``dx = 0`` (its value is overwritten),  ``dsrc = dout`` summed back to ``src``'s shape;  jvp ``tout = tsrc``
    (broadcast)."""

    formula = "{out} = {1} (copied into {0})"
    grad_formulas = ("", "d{1} = d{out} (unbroadcast)")

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, src: Any) -> np.ndarray:
        ctx.src_meta = _meta(src)
        if not broadcasts_to(np.shape(src), x.shape):
            raise RuntimeError(f"copy_: the source of shape {np.shape(src)} does not broadcast to {x.shape}")
        return np.array(np.broadcast_to(src, x.shape), dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[None, Any]:
        return None, unbroadcast(grad_output, *ctx.src_meta) if ctx.needs_input_grad[1] else None

    @staticmethod
    def jvp(tangents: tuple[Any, Any], inputs: tuple[Any, Any], out: np.ndarray) -> Any:
        _, tsrc = tangents
        return np.broadcast_to(tsrc, out.shape)
