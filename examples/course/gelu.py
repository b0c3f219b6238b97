"""GELU, the activation of most transformers' feed-forward blocks, with its backward written by hand.

``gelu(x) = x Φ(x)``, where ``Φ`` is the standard normal distribution's CDF (the exact form, as
``torch.nn.functional.gelu`` computes by default).
"""

import math

import numpy as np

from tinyattn.autograd import Function

_erf = np.vectorize(math.erf, otypes=[np.float64])


class GELU(Function):
    """GELU on NumPy arrays, elementwise."""

    on_arrays = True

    @staticmethod
    def forward(ctx, x):
        cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
        ctx.save_for_backward(x, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx, grad_output):
        # BEGIN TASK gelu_backward
        x, cdf = ctx.saved_tensors
        pdf = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)  # φ(x), the normal density
        return (grad_output * (cdf + x * pdf),)  # d/dx [x Φ(x)] = Φ(x) + x φ(x)
        # END TASK


def gelu(x):
    """GELU of the tensor ``x``."""
    return GELU.apply(x)
