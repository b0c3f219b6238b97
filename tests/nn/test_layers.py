"""Linear, Embedding, LayerNorm, Dropout, GELU and losses: values and gradchecks (inputs and parameters)."""

import math

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf
from tinyattn import nn
from tinyattn.nn import functional as F


def test_linear_values_init_and_gradcheck(rng):
    ta.manual_seed(0)
    lin = nn.Linear(4, 3, dtype=ta.float64)
    bound = 1 / math.sqrt(4)
    assert np.all(np.abs(lin.weight.array) <= bound) and lin.weight.array.std() > bound / 4
    x = leaf(rng, 2, 5, 4)
    np.testing.assert_allclose(lin(x).array, x.array @ lin.weight.array.T + lin.bias.array)
    check(lambda x, w, b: lin(x), x, lin.weight, lin.bias)
    assert nn.Linear(4, 3, bias=False).bias is None


def test_linear_shape_error():
    with pytest.raises(ValueError, match=r"\(2, 5\).*\(3, 4\)"):
        nn.Linear(4, 3)(ta.ones(2, 5))


def test_embedding(rng):
    emb = nn.Embedding(5, 3, dtype=ta.float64)
    ids = np.array([[0, 4, 4], [2, 0, 1]])
    np.testing.assert_array_equal(emb(ids).array, emb.weight.array[ids])
    check(lambda w: emb(ids), emb.weight)
    with pytest.raises(IndexError, match="index 5 is out of range for 5"):
        emb(np.array([5]))
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([0.5]))


def test_layer_norm(rng):
    ln = nn.LayerNorm(4, dtype=ta.float64)
    ln.weight.array[...] = rng.standard_normal(4)
    ln.bias.array[...] = rng.standard_normal(4)
    x = leaf(rng, 2, 3, 4)
    mu = x.array.mean(-1, keepdims=True)
    ref = (x.array - mu) / np.sqrt(x.array.var(-1, keepdims=True) + 1e-5) * ln.weight.array + ln.bias.array
    np.testing.assert_allclose(ln(x).array, ref)
    check(lambda x, w, b: ln(x), x, ln.weight, ln.bias)
    ln2 = nn.LayerNorm((3, 4), elementwise_affine=False)
    assert ln2.weight is None
    check(lambda x: F.layer_norm(x, (3, 4)), x)


def test_dropout_train_and_eval():
    ta.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = ta.ones(1000, requires_grad=True)
    y = drop(x)
    kept = y.array != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y.array[kept], 1 / 0.75)
    y.backward(np.ones(1000, dtype=np.float32))
    np.testing.assert_allclose(x.grad, np.where(kept, 1 / 0.75, 0.0))
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="p must be"):
        nn.Dropout(1.5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(rng, approximate):
    x = leaf(rng, 3, 4)
    exact = x.array * 0.5 * (1 + np.vectorize(math.erf)(x.array / math.sqrt(2)))
    np.testing.assert_allclose(nn.GELU(approximate)(x).array, exact, atol=1e-3 if approximate == "tanh" else 1e-12)
    check(lambda t: F.gelu(t, approximate), x)
    check(lambda t: nn.ReLU()(t), x)


def test_cross_entropy(rng):
    logits = leaf(rng, 4, 5)
    target = np.array([1, 0, 4, -100])
    logp = logits.array - np.log(np.exp(logits.array).sum(-1, keepdims=True))
    picked = -logp[np.arange(3), target[:3]]
    np.testing.assert_allclose(F.cross_entropy(logits, target).array, picked.mean())
    np.testing.assert_allclose(F.cross_entropy(logits, target, reduction="sum").array, picked.sum())
    np.testing.assert_allclose(F.cross_entropy(logits, target, reduction="none").array, [*picked, 0.0])
    check(lambda t: F.cross_entropy(t, target), logits)
    with pytest.raises(ValueError, match="target 7 is out of range for 5 classes"):
        F.cross_entropy(logits, np.array([0, 1, 7, 2]))


def test_mse_loss(rng):
    a, b = leaf(rng, 3, 2), leaf(rng, 3, 2)
    np.testing.assert_allclose(F.mse_loss(a, b).array, ((a.array - b.array) ** 2).mean())
    check(lambda a, b: F.mse_loss(a, b, reduction="sum"), a, b)
