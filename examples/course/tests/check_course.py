"""Public tests: each gradient checked against central differences. Run with ``python -m pytest tests``."""

import numpy as np
import pytest
from gelu import gelu
from layernorm import layer_norm

import tinyattn as ta
from tinyattn.autograd import gradcheck


def leaf(rng, *shape):
    return ta.tensor(rng.standard_normal(shape), requires_grad=True)


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


@pytest.mark.task(id="layernorm_backward", points=2)
def test_layernorm_gradients_match_finite_differences(rng):
    for shape in [(4, 6), (2, 3, 5), (7,)]:
        assert gradcheck(layer_norm, (leaf(rng, *shape), leaf(rng, shape[-1]), leaf(rng, shape[-1])))


@pytest.mark.task(id="layernorm_backward", points=1)
def test_layernorm_input_gradient_sums_to_zero_per_row(rng):
    """Adding a constant to a row changes nothing after the mean is taken out: each row's gradient sums to 0."""
    x = leaf(rng, 3, 6)
    layer_norm(x, ta.ones(6), ta.zeros(6)).backward(rng.standard_normal((3, 6)))
    np.testing.assert_allclose(x.grad.numpy().sum(axis=-1), 0.0, atol=1e-10)


@pytest.mark.task(id="gelu_backward", points=2)
def test_gelu_gradient_matches_finite_differences(rng):
    assert gradcheck(gelu, (ta.tensor(rng.standard_normal((5, 7)) * 2.0, requires_grad=True),))
