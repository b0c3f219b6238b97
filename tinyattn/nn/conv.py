"""Convolution and pooling over 1-D and 2-D inputs: ``Conv1d``, ``Conv2d``, ``MaxPool1d``, ``MaxPool2d``,
``AvgPool1d``, ``AvgPool2d`` and their functions (``F.conv2d``, ``F.max_pool2d``...).

All of them start from ``Windows`` (``autograd/core/ops/windows.py``): the input's patches laid out as
extra dims. A convolution is then the sum over channel and kernel of patch times weight (one
``einsum``), a max pool the largest element of each patch (``gather`` at its ``argmax``, so the
gradient goes to that one element, as torch's), an average pool the patch's mean. Shapes, defaults
and parameter names follow torch: ``input (N, C, *spatial)`` or unbatched ``(C, *spatial)``,
``weight (out_channels, in_channels, *kernel_size)``, init U(+-1/sqrt(in_channels * kernel size)).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..autograd import Tensor, cat
from ..autograd.core.ops.windows import Windows
from ..autograd.creation import float_dtype
from ..autograd.tensor import einsum
from . import init
from .module import Module
from .parameter import Parameter


def _tuple(name: str, value: Any, k: int) -> tuple[int, ...]:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * k
    if len(values) != k or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{name} must be an int or a tuple of {k} ints, got {value!r}")
    return tuple(int(v) for v in values)


def _batched(op: str, input: Tensor, k: int) -> tuple[Tensor, bool]:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{op}: Expected {k + 1}D (unbatched) or {k + 2}D (batched) input, but got input of "
                           f"size: {tuple(input.shape)}")
    return (input, True) if input.ndim == k + 2 else (input.unsqueeze(0), False)


def _windows(x: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
             dilation: tuple[int, ...], pad_value: Any = 0) -> Tensor:
    return Windows.apply(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation, pad_value=pad_value)


def _same_padding(op: str, padding: Any, kernel: tuple[int, ...], dilation: tuple[int, ...],
                  stride: tuple[int, ...]) -> tuple[int, ...]:
    if padding == "valid":
        return (0,) * len(kernel)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
        total = [d * (kk - 1) for kk, d in zip(kernel, dilation)]
        if any(t % 2 for t in total):
            raise NotImplementedError(f"{op}: padding='same' with an even kernel needs uneven padding, which "
                                      "tinyattn does not implement")
        return tuple(t // 2 for t in total)
    return _tuple("padding", padding, len(kernel))


def _conv(op: str, k: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Tensor:
    x, batched = _batched(op, input, k)
    if groups != 1:
        raise NotImplementedError(f"{op}: groups={groups} is not implemented in tinyattn (only groups=1)")
    if weight.ndim != k + 2 or weight.shape[1] != x.shape[1]:
        raise RuntimeError(f"{op}: expected weight of shape (out_channels, {x.shape[1]}, *kernel) for input "
                           f"{tuple(input.shape)}, got {tuple(weight.shape)}")
    kernel = tuple(weight.shape[2:])
    stride, dilation = _tuple("stride", stride, k), _tuple("dilation", dilation, k)
    padding = _same_padding(op, padding, kernel, dilation, stride)
    patches = _windows(x, kernel, stride, padding, dilation)  # (N, C, *out, *kernel)
    letters = "hw"[:k] if k == 2 else "h"
    out = einsum(f"nc{letters.upper()}{letters},oc{letters}->no{letters.upper()}", patches, weight)
    if bias is not None:
        out = out + bias.reshape(1, -1, *(1,) * k)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """``out[n, o, i] = bias[o] + sum over c, a of input[n, c, i*stride + a*dilation] * weight[o, c, a]``."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """``out[n, o, i, j] = bias[o] + sum over c, a, b of input[n, c, i*s + a*d, j*s + b*d] * weight[o, c, a, b]``."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, k: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                    padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    """The transpose of a convolution (the map its backward applies to the input's gradient), as a convolution:
    the input spread out ``stride`` apart, padded by ``dilation * (kernel - 1)`` and cropped by ``padding``, then
    convolved with the kernel flipped and its in and out channels swapped."""
    x, batched = _batched(op, input, k)
    if groups != 1:
        raise NotImplementedError(f"{op}: groups={groups} is not implemented in tinyattn (only groups=1)")
    if weight.ndim != k + 2 or weight.shape[0] != x.shape[1]:
        raise RuntimeError(f"{op}: expected weight of shape ({x.shape[1]}, out_channels, *kernel) for input "
                           f"{tuple(input.shape)}, got {tuple(weight.shape)}")
    kernel = tuple(weight.shape[2:])
    stride, padding = _tuple("stride", stride, k), _tuple("padding", padding, k)
    output_padding, dilation = _tuple("output_padding", output_padding, k), _tuple("dilation", dilation, k)
    for extra, s, d in zip(output_padding, stride, dilation):
        if extra >= max(s, d):
            raise ValueError(f"{op}: output padding must be smaller than either stride or dilation, got "
                             f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    size = [(n - 1) * s + 1 + 2 * d * (kk - 1) + e
            for n, s, d, kk, e in zip(x.shape[2:], stride, dilation, kernel, output_padding)]
    spread = Tensor._make(np.zeros(tuple(x.shape[:2]) + tuple(size), dtype=x.dtype))
    places = tuple(slice(d * (kk - 1), d * (kk - 1) + (n - 1) * s + 1, s)
                   for n, s, d, kk in zip(x.shape[2:], stride, dilation, kernel))
    spread[(slice(None), slice(None)) + places] = x  # the input, stride apart, with room for the kernel around it
    spread = spread[(slice(None), slice(None)) + tuple(slice(p, n - p) for p, n in zip(padding, size))]
    flipped = weight.transpose(0, 1).flip(tuple(range(2, k + 2)))
    out = _conv(op, k, spread, flipped, bias, 1, 0, dilation, 1)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 1-D convolution (a "deconvolution"): ``weight (C_in, C_out, k)``."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed 2-D convolution (a "deconvolution", a decoder's upsampling).

    ``weight (C_in, C_out, kH, kW)``; ``H_out = (H - 1) * stride - 2 * padding + dilation * (kH - 1) +
    output_padding + 1``."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def _out_size(n: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    span = n + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= n + padding:  # (torch: the last window must start inside the input)
        out -= 1
    return out


def _pool(op: str, k: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
          ceil_mode: bool, pad_value: Any) -> tuple[Tensor, bool, tuple[int, ...]]:
    x, batched = _batched(op, input, k)
    kernel = _tuple("kernel_size", kernel_size, k)
    stride = kernel if stride is None or stride == [] else _tuple("stride", stride, k)
    padding, dilation = _tuple("padding", padding, k), _tuple("dilation", dilation, k)
    if any(2 * p > kk for p, kk in zip(padding, kernel)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={padding} "
                           f"and kernel_size={kernel}")
    sizes = tuple(_out_size(n, kk, s, p, d, ceil_mode)
                  for n, kk, s, p, d in zip(x.shape[-k:], kernel, stride, padding, dilation))
    extra = tuple(max(0, (o - 1) * s + (kk - 1) * d + 1 - (n + 2 * p))
                  for o, s, kk, d, n, p in zip(sizes, stride, kernel, dilation, x.shape[-k:], padding))
    for axis, more in enumerate(extra, start=x.ndim - k):  # ceil_mode: a last, partial window reads past the end
        if more:
            shape = list(x.shape)
            shape[axis] = more
            x = cat([x, Tensor._make(np.full(shape, pad_value, dtype=x.dtype))], axis)
    patches = _windows(x, kernel, stride, padding, dilation, pad_value)
    flat = patches.reshape(*patches.shape[: x.ndim], -1)  # (N, C, *out, kernel elements)
    return flat, batched, kernel


def _max_pool(op: str, k: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, return_indices: bool) -> Any:
    if return_indices:
        raise NotImplementedError(f"{op}(return_indices=True) is not implemented in tinyattn")
    flat, batched, _ = _pool(op, k, input, kernel_size, stride, padding, dilation, ceil_mode, -np.inf)
    first_max = Tensor._make(np.argmax(flat.array, axis=-1)[..., None])  # (torch: the first largest element)
    out = flat.gather(-1, first_max).squeeze(-1)
    return out if batched else out.squeeze(0)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """The largest element of each window along the last dim."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """The largest element of each window over the last two dims (``stride`` defaults to the kernel)."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(op: str, k: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    if ceil_mode or not count_include_pad or divisor_override is not None:
        raise NotImplementedError(f"{op}: ceil_mode, count_include_pad=False and divisor_override are not "
                                  "implemented in tinyattn")
    flat, batched, kernel = _pool(op, k, input, kernel_size, stride, padding, 1, False, 0)
    out = flat.mean(-1)
    return out if batched else out.squeeze(0)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window along the last dim."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean of each window over the last two dims."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


class _ConvNd(Module):
    k = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", *,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r} is not implemented in tinyattn (only 'zeros')")
        if groups != 1:
            raise NotImplementedError(f"groups={groups} is not implemented in tinyattn (only groups=1)")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple("kernel_size", kernel_size, self.k)
        self.stride, self.dilation = _tuple("stride", stride, self.k), _tuple("dilation", dilation, self.k)
        self.padding = padding if isinstance(padding, str) else _tuple("padding", padding, self.k)
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.groups, self.padding_mode = groups, padding_mode
        dtype = float_dtype(dtype, device)
        fan_in = in_channels * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        self.weight = Parameter(np.empty((out_channels, in_channels, *self.kernel_size), dtype=dtype))
        init.uniform_(self.weight, -bound, bound)  # (torch's kaiming_uniform_(a=sqrt(5)) is this bound)
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype=dtype))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        """``(N, in_channels, *spatial) -> (N, out_channels, *out)``."""
        return _conv(f"conv{self.k}d", self.k, input, self.weight, self.bias, self.stride, self.padding,
                     self.dilation, self.groups)

    def extra_repr(self) -> str:
        """``Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))``, as torch prints it."""
        out = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.k:
            out += f", padding={self.padding}"
        if self.dilation != (1,) * self.k:
            out += f", dilation={self.dilation}"
        return out + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    """A 1-D convolution: ``(N, C_in, L) -> (N, C_out, L_out)`` (see ``conv1d``)."""

    k = 1


class Conv2d(_ConvNd):
    """A 2-D convolution: ``(N, C_in, H, W) -> (N, C_out, H_out, W_out)`` (see ``conv2d``)."""

    k = 2


class _ConvTransposeNd(Module):
    k = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if groups != 1:
            raise NotImplementedError(f"groups={groups} is not implemented in tinyattn (only groups=1)")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple("kernel_size", kernel_size, self.k)
        self.stride, self.padding = _tuple("stride", stride, self.k), _tuple("padding", padding, self.k)
        self.output_padding = _tuple("output_padding", output_padding, self.k)
        self.dilation, self.groups, self.padding_mode = _tuple("dilation", dilation, self.k), groups, padding_mode
        dtype = float_dtype(dtype, device)
        fan_in = out_channels * math.prod(self.kernel_size)  # (torch's: the weight's dim 1 times the kernel)
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        self.weight = Parameter(np.empty((in_channels, out_channels, *self.kernel_size), dtype=dtype))
        init.uniform_(self.weight, -bound, bound)
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype=dtype))
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """``(N, in_channels, *spatial) -> (N, out_channels, *out)``."""
        if output_size is not None:
            raise NotImplementedError(f"{type(self).__name__}: output_size is not implemented in tinyattn; pass "
                                      "output_padding to the constructor instead")
        return _conv_transpose(f"conv_transpose{self.k}d", self.k, input, self.weight, self.bias, self.stride,
                               self.padding, self.output_padding, self.groups, self.dilation)

    def extra_repr(self) -> str:
        """``ConvTranspose2d(16, 8, kernel_size=(3, 3), stride=(2, 2))``, as torch prints it."""
        out = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.k:
            out += f", padding={self.padding}"
        if self.output_padding != (0,) * self.k:
            out += f", output_padding={self.output_padding}"
        if self.dilation != (1,) * self.k:
            out += f", dilation={self.dilation}"
        return out + ("" if self.bias is not None else ", bias=False")


class ConvTranspose1d(_ConvTransposeNd):
    """A transposed 1-D convolution: ``(N, C_in, L) -> (N, C_out, L_out)`` (see ``conv_transpose1d``)."""

    k = 1


class ConvTranspose2d(_ConvTransposeNd):
    """A transposed 2-D convolution: ``(N, C_in, H, W) -> (N, C_out, H_out, W_out)`` (see ``conv_transpose2d``)."""

    k = 2


class _PoolNd(Module):
    k = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """The largest element of each window."""
        return _max_pool(f"max_pool{self.k}d", self.k, input, self.kernel_size, self.stride, self.padding,
                         self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        """``MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)``, as torch prints it."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_PoolNd):
    """The largest element of each window along the last dim (see ``max_pool1d``)."""

    k = 1


class MaxPool2d(_PoolNd):
    """The largest element of each window over the last two dims (see ``max_pool2d``)."""

    k = 2


class _AvgPoolNd(Module):
    k = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        if self.k == 1:  # (torch keeps AvgPool1d's sizes as 1-tuples, and prints them so)
            self.kernel_size, self.stride, self.padding = (_tuple(name, getattr(self, name), 1)
                                                           for name in ("kernel_size", "stride", "padding"))

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        return _avg_pool(f"avg_pool{self.k}d", self.k, input, self.kernel_size, self.stride, self.padding,
                         self.ceil_mode, self.count_include_pad, None)

    def extra_repr(self) -> str:
        """``AvgPool2d(kernel_size=2, stride=2, padding=0)``, as torch prints it."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """The mean of each window along the last dim."""

    k = 1


class AvgPool2d(_AvgPoolNd):
    """The mean of each window over the last two dims."""

    k = 2


__all__: Sequence[str] = ["AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "avg_pool1d",
                          "avg_pool2d", "conv1d", "conv2d", "max_pool1d", "max_pool2d"]
