"""The graded probes of this course: each calls the student's code on inputs drawn from the seed.

The grader runs each probe on the student's code (in a sandbox) and on the reference (here, with the
same seed) and compares what they return, array by array.
"""

import numpy as np
from gelu import gelu
from layernorm import layer_norm
from probing import backward_from_random, grads, large_gradient, leaves, rng_for, task
from rotary import rope


@task(id="layernorm_backward", points=2)
def test_layernorm_gradients(seed):
    """the gradients of LayerNorm with respect to x, the weight and the bias equal the reference's"""
    rng, out = rng_for(seed), {}
    for n, shape in enumerate([(4, 6), (2, 3, 5), (7,)]):
        x, weight, bias = leaves(rng, shape, shape[-1:], shape[-1:])
        backward_from_random(layer_norm(x, weight, bias), rng)
        out |= grads(f"case{n}_", x, weight, bias)
    return out


@task(id="layernorm_backward", points=1, hidden=True)
def test_layernorm_gradient_of_shifted_and_scaled_rows(seed):
    """LayerNorm's input gradient is the same for rows shifted and scaled, and is right on a large input"""
    rng = rng_for(seed)
    (x,) = leaves(rng, (3, 8))
    weight, bias = (np.ones(8), np.zeros(8))
    shifted = x * 50.0 + 1000.0  # far from 0: a mean or a variance left out shows
    backward_from_random(layer_norm(shifted, weight, bias), rng)
    return {"x_grad": x.grad.numpy(),
            "large_grad": large_gradient(rng, lambda big: layer_norm(big, np.ones(2048), np.zeros(2048)), (64, 2048))}


@task(id="gelu_backward", points=2)
def test_gelu_gradient(seed):
    """the gradient of GELU equals the reference's, at inputs from -6 to 6"""
    rng = rng_for(seed)
    (x,) = leaves(rng, (5, 7))
    with_tails = x * 2.0
    backward_from_random(gelu(with_tails), rng)
    return {"x_grad": x.grad.numpy(), "large_grad": large_gradient(rng, gelu, (256, 1024))}


@task(id="rope", points=2)
def test_rope_output_and_gradient(seed):
    """RoPE's output and its gradient, for a batch of sequences, equal the reference's"""
    rng = rng_for(seed)
    (x,) = leaves(rng, (2, 5, 8))
    y = rope(x)
    backward_from_random(y, rng)
    return {"y": y.detach().numpy(), "x_grad": x.grad.numpy()}


@task(id="rope", points=1, hidden=True)
def test_rope_on_a_long_sequence_with_another_base(seed):
    """RoPE with base 100 on 64 positions of 16 features equals the reference's"""
    rng = rng_for(seed)
    (x,) = leaves(rng, (64, 16))
    return {"y": rope(x, base=100.0).detach().numpy()}
