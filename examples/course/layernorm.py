"""LayerNorm over the last axis, with its backward written by hand as a tinyattn ``Function``.

``y = x̂ ⊙ w + b`` with ``x̂ = (x − mean(x)) / sqrt(var(x) + eps)``, the mean and the (biased)
variance taken over the last axis, as ``torch.nn.LayerNorm`` does.
"""

import numpy as np

from tinyattn.autograd import Function


class LayerNorm(Function):
    """LayerNorm on NumPy arrays: ``forward(x, weight, bias)``, normalising over the last axis."""

    on_arrays = True  # forward and backward on NumPy arrays, as tinyattn's own ops

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        centred = x - x.mean(axis=-1, keepdims=True)
        inv_std = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)
        x_hat = centred * inv_std
        ctx.save_for_backward(x_hat, inv_std, weight)
        return x_hat * weight + bias

    @staticmethod
    def backward(ctx, grad_output):
        # BEGIN TASK layernorm_backward
        x_hat, inv_std, weight = ctx.saved_tensors
        batch = tuple(range(grad_output.ndim - 1))  # every axis but the normalised one
        grad_weight = (grad_output * x_hat).sum(axis=batch)
        grad_bias = grad_output.sum(axis=batch)
        g = grad_output * weight  # the gradient with respect to x̂
        # dx = (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂)) / std: the mean and the variance depend on every x
        grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) * inv_std
        return grad_x, grad_weight, grad_bias
        # END TASK


def layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm of the tensor ``x`` over its last axis, with a weight and a bias of that axis's size."""
    return LayerNorm.apply(x, weight, bias, eps=eps)
