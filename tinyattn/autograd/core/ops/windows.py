"""``Windows``: every patch a kernel sees, laid out as extra dims (im2col), the op beneath convolution and pooling.

``x (N, C, *spatial)`` becomes ``(N, C, *out, *kernel)``: ``out[n, c, i, j, a, b]`` is
``x[n, c, i*stride + a*dilation, j*stride + b*dilation]`` of the padded input. A convolution is then
one ``einsum`` of the windows with the weights, a max pool the largest element of each window.
The op only copies elements, so its backward adds each window's gradient back onto the places the
window was read from (the places where windows overlap get the sum).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..function import Context, Function


class Windows(Function):
    """``windows[..., i, a] = x_padded[..., i * stride + a * dilation]`` (for each spatial dim);
    ``dx_padded[..., i * stride + a * dilation] += dwindows[..., i, a]``, the padding cut off after;  jvp: the op
    itself (linear)."""

    formula = "{out} = windows({0}, kernel, stride, padding, dilation)"
    grad_formulas = ("d{0}[i*stride + a*dilation] += d{out}[i, a]  (padding removed)",)
    linear = True

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, *, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...], pad_value: Any = 0) -> np.ndarray:
        k = len(kernel)
        padded = np.pad(x, [(0, 0)] * (x.ndim - k) + [(p, p) for p in padding], constant_values=pad_value)
        reach = tuple((kk - 1) * d + 1 for kk, d in zip(kernel, dilation))  # the span one window covers
        if any(r > n for r, n in zip(reach, padded.shape[-k:])):
            raise RuntimeError(f"windows: the kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger than "
                               f"the padded input {tuple(padded.shape[-k:])}")
        spans = sliding_window_view(padded, reach, axis=tuple(range(x.ndim - k, x.ndim)))
        picks: tuple[Any, ...] = (Ellipsis,) + tuple(slice(None, None, s) for s in stride) + tuple(
            slice(None, None, d) for d in dilation)
        ctx.shape, ctx.padded_shape, ctx.dtype = x.shape, padded.shape, x.dtype
        ctx.kernel, ctx.stride, ctx.padding, ctx.dilation = kernel, stride, padding, dilation
        return np.ascontiguousarray(spans[picks])

    @staticmethod
    def backward(ctx: Context, grad_output: np.ndarray) -> tuple[np.ndarray]:
        k = len(ctx.kernel)
        out = grad_output.shape[-2 * k:-k]
        dpadded = np.zeros(ctx.padded_shape, dtype=ctx.dtype)
        for offset in np.ndindex(*ctx.kernel):  # each place in the kernel: one strided slice of the input
            where: tuple[Any, ...] = tuple(slice(a * d, a * d + (n - 1) * s + 1, s)
                                           for a, d, n, s in zip(offset, ctx.dilation, out, ctx.stride))
            dpadded[(Ellipsis,) + where] += grad_output[(Ellipsis,) + (slice(None),) * k + offset]
        crop: tuple[Any, ...] = tuple(slice(p, p + n) for p, n in zip(ctx.padding, ctx.shape[-k:]))
        return (dpadded[(Ellipsis,) + crop],)
