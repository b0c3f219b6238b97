"""Elementwise ops. Binary ops broadcast like NumPy; backward undoes it with ``unbroadcast``.

A one-input op (``exp``, ``tanh``, ``gelu``...) is built on ``Elementwise``: it writes ``f`` and its derivative
``f'`` once, and its backward (``dx = dout ⊙ f'``) and forward-mode tangent (``tout = tx ⊙ f'``) follow from them.

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
    linear = True  # (jvp: the op on the tangents, ta + tb)

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        a, b = _operands(ctx, "add", a, b)
        return a + b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        return unbroadcast(grad_output, *ctx.a_meta), unbroadcast(grad_output, *ctx.b_meta)


class Sub(Function):
    """``out = a - b``;  ``da = dout``, ``db = -dout``;  jvp ``tout = ta - tb``."""

    formula = "{out} = {0} − {1}"
    grad_formulas = ("d{0} = d{out}", "d{1} = −d{out}")
    linear = True  # (jvp: ta − tb)

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> np.ndarray:
        a, b = _operands(ctx, "sub", a, b)
        return a - b

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[Any, Any]:
        return unbroadcast(grad_output, *ctx.a_meta), unbroadcast(-grad_output, *ctx.b_meta)


class Mul(Function):
    """``out = a * b``;  ``da = dout * b``, ``db = dout * a``;  jvp ``tout = ta * b + a * tb``."""

    formula = "{out} = {0} ⊙ {1}"
    grad_formulas = ("d{0} = d{out} ⊙ {1}", "d{1} = d{out} ⊙ {0}")
    multilinear = True  # (jvp, the product rule: ta ⊙ b + a ⊙ tb)

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


class Elementwise(Function):
    """An op of one input applied to each element, ``out = f(x)``, with its derivative ``f'`` stated once.

    A subclass writes two functions: ``function(x)``, and ``derivative(v)``, the slope ``f'`` written in the
    input ``x`` or, when the class says ``saved_output = 0``, in the output ``out`` (the slope of ``exp`` is its
    own output). The chain rule gives the rest, here, for every such op:

    * forward: ``out = f(x)``, saving what ``derivative`` reads;
    * backward: ``dx = dout ⊙ f'``;
    * forward mode: ``tout = tx ⊙ f'`` (the Jacobian is diagonal, so it is the same product);
    * a second derivative: the backward, run on tensors (``autograd/higher_order.py``): ``derivative`` is
      written in operations that arrays and tensors share.

    Options (``approximate=``, ``min=``) reach both functions as keywords. An op that names itself
    (``name = "exp"``) is also a method of tinyattn's tensors and a function of tinyattn, made from the op
    (``named_ops``): adding one is this file and its test.
    """

    floating = True  # an integer or bool input computes in the default float (float32), as in torch
    name: str | None = None  # torch's name of the op, if it is a plain method (x.exp()) and function (ta.exp(x))

    @staticmethod
    def function(x: Any) -> Any:
        """``f(x)``, on an array."""
        raise NotImplementedError

    @staticmethod
    def derivative(v: Any) -> Any:
        """``f'``: the slope at each element, from ``x`` (or from ``out``, if ``saved_output = 0``)."""
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, x: np.ndarray, **options: Any) -> np.ndarray:
        if cls.floating:
            x = _floating(x)
        out = cls.function(x, **options)
        if cls.saved_output == 0:
            ctx.save_for_backward(out)
        else:
            ctx.save_for_backward(x)
        return out

    @classmethod
    def backward(cls, ctx: Context, grad_output: np.ndarray) -> tuple[Any]:
        (v,) = ctx.saved_tensors  # x, or out
        return (grad_output * cls.derivative(v, **ctx.kwargs),)  # dx = dout ⊙ f'

    @classmethod
    def jvp(cls, tangents: tuple[Any], inputs: tuple[Any], out: np.ndarray, **options: Any) -> Any:
        (tx,), (x,) = tangents, inputs
        if cls.saved_output == 0:
            v = out
        elif cls.floating:
            v = _floating(x)
        else:
            v = x
        return tx * cls.derivative(v, **options)  # tout = tx ⊙ f'


class Exp(Elementwise):
    """``out = exp(x)``;  ``f' = exp(x) = out``, so ``dx = dout ⊙ out``."""

    name = "exp"  # torch's name: x.exp(), tinyattn.exp(x)
    formula = "{out} = exp({0})"
    grad_formulas = ("d{0} = d{out} ⊙ {out}",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def function(x: Any) -> Any:
        return np.exp(x)

    @staticmethod
    def derivative(out: Any) -> Any:
        return out


class Log(Elementwise):
    """``out = log(x)``;  ``f' = 1 / x``."""

    name = "log"  # torch's name: x.log(), tinyattn.log(x)
    formula = "{out} = log({0})"
    grad_formulas = ("d{0} = d{out} / {0}",)

    @staticmethod
    def function(x: Any) -> Any:
        return np.log(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return 1 / x


class Log1p(Elementwise):
    """``out = log(1 + x)``, exact for tiny ``x``;  ``f' = 1 / (1 + x)``."""

    name = "log1p"  # torch's name: x.log1p(), tinyattn.log1p(x)
    formula = "{out} = log(1 + {0})"
    grad_formulas = ("d{0} = d{out} / (1 + {0})",)

    @staticmethod
    def function(x: Any) -> Any:
        return np.log1p(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return 1 / (1 + x)


class Expm1(Elementwise):
    """``out = exp(x) - 1``, exact for tiny ``x``;  ``f' = exp(x) = out + 1``."""

    name = "expm1"  # torch's name: x.expm1(), tinyattn.expm1(x)
    formula = "{out} = exp({0}) − 1"
    grad_formulas = ("d{0} = d{out} ⊙ ({out} + 1)",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def function(x: Any) -> Any:
        return np.expm1(x)

    @staticmethod
    def derivative(out: Any) -> Any:
        return out + 1


class Sqrt(Elementwise):
    """``out = sqrt(x)``;  ``f' = 1 / (2 sqrt(x)) = 1 / (2 out)``."""

    name = "sqrt"  # torch's name: x.sqrt(), tinyattn.sqrt(x)
    formula = "{out} = sqrt({0})"
    grad_formulas = ("d{0} = d{out} / (2 {out})",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def function(x: Any) -> Any:
        return np.sqrt(x)

    @staticmethod
    def derivative(out: Any) -> Any:
        return 1 / (2 * out)


class Tanh(Elementwise):
    """``out = tanh(x)``;  ``f' = 1 - tanh(x)² = 1 - out²``."""

    name = "tanh"  # torch's name: x.tanh(), tinyattn.tanh(x)
    formula = "{out} = tanh({0})"
    grad_formulas = ("d{0} = d{out} ⊙ (1 − {out}²)",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def function(x: Any) -> Any:
        return np.tanh(x)

    @staticmethod
    def derivative(out: Any) -> Any:
        return 1 - out * out


class ReLUFn(Elementwise):
    """``out = max(x, 0)``;  ``f' = [x > 0] = [out > 0]`` (0 at x = 0, as torch)."""

    name = "relu"  # torch's name: x.relu(), tinyattn.relu(x)
    formula = "{out} = max({0}, 0)"
    grad_formulas = ("d{0} = d{out} ⊙ [{0} > 0]",)
    saved_output = 0  # (saved: out)
    floating = False  # (an integer input stays an integer)

    @staticmethod
    def function(x: Any) -> Any:
        return np.maximum(x, 0)

    @staticmethod
    def derivative(out: Any) -> Any:
        return out > 0


class Sigmoid(Elementwise):
    """``out = 1 / (1 + exp(-x))``;  ``f' = σ(x) (1 - σ(x)) = out (1 - out)``."""

    name = "sigmoid"  # torch's name: x.sigmoid(), tinyattn.sigmoid(x)
    formula = "{out} = σ({0})"
    grad_formulas = ("d{0} = d{out} ⊙ {out} ⊙ (1 − {out})",)
    saved_output = 0  # (saved: out)

    @staticmethod
    def function(x: Any) -> Any:
        e = np.exp(-np.abs(x))  # exp of a non-positive number only, so neither branch overflows
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    @staticmethod
    def derivative(out: Any) -> Any:
        return out * (1 - out)


class Abs(Elementwise):
    """``out = |x|``;  ``f' = sign(x)`` (0 at x = 0, as torch)."""

    name = "abs"  # torch's name: x.abs(), tinyattn.abs(x)
    formula = "{out} = |{0}|"
    grad_formulas = ("d{0} = d{out} ⊙ sign({0})",)
    floating = False  # (an integer input stays an integer)

    @staticmethod
    def function(x: Any) -> Any:
        return np.abs(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return np.sign(x)


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
    symmetric = True  # (a diagonal Jacobian: jvp = the backward on the tangent, where(mask, 0, tx))
    constant_inputs = (1,)  # (the mask)

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


class Where(Function):
    """``out = where(cond, a, b)``;  ``da = where(cond, dout, 0)``, ``db = where(cond, 0, dout)``;
    jvp ``tout = where(cond, ta, tb)``."""

    formula = "{out} = where(cond, {1}, {2})"
    grad_formulas = ("", "d{1} = d{out} where cond, else 0", "d{2} = d{out} where not cond, else 0")
    linear = True  # (in a and b together: jvp = where(cond, ta, tb))
    constant_inputs = (0,)  # (the condition)

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


_erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf; math.erf is exact to double precision


class Erf(Elementwise):
    """``out = erf(x) = 2/√π ∫₀ˣ exp(-t²) dt``;  ``f' = 2/√π exp(-x²)``."""

    name = "erf"  # torch's name: x.erf(), tinyattn.erf(x)
    formula = "{out} = erf({0})"
    grad_formulas = ("d{0} = d{out} ⊙ 2/√π exp(−{0}²)",)

    @staticmethod
    def function(x: Any) -> Any:
        return _erf(x).astype(x.dtype)

    @staticmethod
    def derivative(x: Any) -> Any:
        return (2 / math.sqrt(math.pi)) * np.exp(-(x * x))


class GELUFn(Elementwise):
    """``out = x Φ(x)``, ``Φ`` the standard normal CDF;  ``f' = Φ(x) + x φ(x)``, ``φ`` its density.

    With ``approximate="tanh"``: ``Φ(x) ≈ (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2``, and ``φ`` its slope.
    """

    formula = "{out} = {0} ⊙ Φ({0})"
    grad_formulas = ("d{0} = d{out} ⊙ (Φ({0}) + {0} ⊙ φ({0}))",)
    floating = False  # (torch's gelu takes floating inputs only)

    @staticmethod
    def function(x: Any, approximate: str = "none") -> Any:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        cdf, _ = _gelu_parts(x, approximate)
        return x * cdf

    @staticmethod
    def derivative(x: Any, approximate: str = "none") -> Any:
        cdf, slope = _gelu_parts(x, approximate)
        return cdf + x * slope


def _gelu_parts(x: Any, approximate: str) -> tuple[Any, Any]:
    """GELU's ``Φ(x)`` and its slope ``Φ'(x)`` (exact: the normal density φ), on an array or a Tensor."""
    if approximate == "none":
        cdf = 0.5 * (1.0 + (Erf.apply(x / math.sqrt(2.0)) if on_tensors(x)
                            else _erf(x / math.sqrt(2.0)).astype(x.dtype)))
        return cdf, np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # φ(x)
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x * x * x))  # (x³ as a product: NumPy's ** takes a general power)
    return 0.5 * (1 + t), 0.5 * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


class Sin(Elementwise):
    """``out = sin(x)``;  ``f' = cos(x)``."""

    name = "sin"  # torch's name: x.sin(), tinyattn.sin(x)
    formula = "{out} = sin({0})"
    grad_formulas = ("d{0} = d{out} ⊙ cos({0})",)

    @staticmethod
    def function(x: Any) -> Any:
        return np.sin(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return np.cos(x)


class Cos(Elementwise):
    """``out = cos(x)``;  ``f' = -sin(x)``."""

    name = "cos"  # torch's name: x.cos(), tinyattn.cos(x)
    formula = "{out} = cos({0})"
    grad_formulas = ("d{0} = −d{out} ⊙ sin({0})",)

    @staticmethod
    def function(x: Any) -> Any:
        return np.cos(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return -np.sin(x)


class Sinh(Elementwise):
    """``out = sinh(x) = (exp(x) - exp(-x)) / 2``;  ``f' = cosh(x)``."""

    name = "sinh"  # torch's name: x.sinh(), tinyattn.sinh(x)
    formula = "{out} = sinh({0})"
    grad_formulas = ("d{0} = d{out} ⊙ cosh({0})",)

    @staticmethod
    def function(x: Any) -> Any:
        return np.sinh(x)

    @staticmethod
    def derivative(x: Any) -> Any:
        return (np.exp(x) + np.exp(-x)) / 2  # cosh(x), in ops a tensor has too (for a second derivative)


class Clamp(Elementwise):
    """``out = min(max(x, lo), hi)``;  ``f' = [lo <= x <= hi]`` (ends included, as torch)."""

    formula = "{out} = clamp({0}, min, max)"
    grad_formulas = ("d{0} = d{out} ⊙ [min ≤ {0} ≤ max]",)
    floating = False  # (an integer input stays an integer, unless a bound is a float)

    @staticmethod
    def function(x: Any, min: Any = None, max: Any = None) -> Any:
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must not be None")
        bounds = [b for b in (min, max) if b is not None]
        dtype = result_type(x, *bounds)
        out = promote(dtype, x)
        if min is not None:
            out = np.maximum(out, promote(dtype, min))
        if max is not None:
            out = np.minimum(out, promote(dtype, max))
        return out.astype(dtype, copy=False)

    @staticmethod
    def derivative(x: Any, min: Any = None, max: Any = None) -> Any:
        inside = np.ones(np.shape(x), dtype=bool)
        if min is not None:
            inside = inside & (x >= min)
        if max is not None:
            inside = inside & (x <= max)
        return inside


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
    linear = True  # (jvp: tsrc, broadcast)

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, src: Any) -> np.ndarray:
        ctx.src_meta = _meta(src)
        if not broadcasts_to(np.shape(src), x.shape):
            raise RuntimeError(f"copy_: the source of shape {np.shape(src)} does not broadcast to {x.shape}")
        return np.array(np.broadcast_to(src, x.shape), dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[None, Any]:
        return None, unbroadcast(grad_output, *ctx.src_meta) if ctx.needs_input_grad[1] else None


def named_ops() -> list[tuple[str, type[Elementwise]]]:
    """``(name, op)`` for every elementwise op of this file that names itself (``name = "exp"``): each is a method
    of tinyattn's tensors and a function of tinyattn (``autograd/tensor.py``, ``autograd/namespace.py``)."""
    return [(op.name, op) for op in Elementwise.__subclasses__() if op.name is not None]
