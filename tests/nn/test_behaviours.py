"""nn and optim behaviours no other test pinned down (found by mutation testing, docs/mutation.md)."""

import math
import re

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.nn import functional as F

from ..helpers import check, leaf


def test_sdpa_uses_the_scale_it_is_given(rng):
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 5, 4), leaf(rng, 2, 5, 2)
    for scale in (0.1, 2.0):
        weights = np.exp(q.array @ k.array.transpose(0, 2, 1) * scale)
        weights /= weights.sum(-1, keepdims=True)
        np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, scale=scale).array, weights @ v.array)


def test_dropout_rates(rng):
    ta.manual_seed(0)
    x = ta.ones(20_000)
    for p in (0.1, 0.5):
        kept = F.dropout(x, p).array
        assert abs((kept == 0).mean() - p) < 0.02 and np.allclose(kept[kept != 0], 1 / (1 - p))
    assert np.all(F.dropout(x, 1.0).array == 0) and F.dropout(x, 0.5, training=False) is x
    mha = nn.MultiheadAttention(4, 1, dropout=0.5, batch_first=True)
    q = ta.randn(1, 200, 4)
    _, weights = mha(q, q, q)
    zeros = (weights.array == 0).mean()
    assert 0.4 < zeros < 0.6  # the attention-dropout rate is the one given


def test_losses_and_their_modules(rng):
    x, y = leaf(rng, 3, 4), ta.tensor(rng.standard_normal((3, 4)))
    np.testing.assert_allclose(F.mse_loss(x, y, reduction="none").array, (x.array - y.array) ** 2)
    np.testing.assert_allclose(nn.MSELoss(reduction="sum")(x, y).item(), ((x.array - y.array) ** 2).sum())
    logits = leaf(rng, 5)
    one = F.cross_entropy(logits, np.array(2))  # 1-D logits and a scalar target
    assert np.isclose(one.item(), -(logits.array[2] - np.log(np.exp(logits.array).sum())))
    batch = leaf(rng, 3, 5)
    targets = np.array([1, -100, -100])  # one valid target: the mean is over it alone
    assert np.isclose(F.cross_entropy(batch, targets).item(),
                      nn.CrossEntropyLoss(reduction="sum")(batch, targets).item())
    check(lambda t: nn.CrossEntropyLoss()(t, np.array([0, 4, 2])), batch)


def test_softmax_functions_and_layer_norm_options(rng):
    x = leaf(rng, 2, 3, 4)
    np.testing.assert_allclose(F.softmax(x, 1).array.sum(1), 1.0)
    np.testing.assert_allclose(np.exp(F.log_softmax(x, -1).array).sum(-1), 1.0)
    layer = nn.LayerNorm((3, 4), eps=0.5, dtype=ta.float64)  # a tuple normalized_shape, a large eps
    out = layer(x).array
    mean = x.array.mean((1, 2), keepdims=True)
    var = x.array.var((1, 2), keepdims=True)
    np.testing.assert_allclose(out, (x.array - mean) / np.sqrt(var + 0.5))
    check(lambda t: layer(t), x)


def test_linear_initial_weights_follow_torchs_bounds():
    ta.manual_seed(0)
    layer = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    for p in (layer.weight, layer.bias):
        assert np.abs(p.array).max() <= bound and np.abs(p.array).max() > 0.9 * bound


def test_mha_with_kdim_equal_to_embed_dim_but_another_vdim(rng):
    mha = nn.MultiheadAttention(4, 2, kdim=4, vdim=3, batch_first=True, dtype=ta.float64)
    assert mha.in_proj_weight is None and mha.v_proj_weight.shape == (4, 3)
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 5, 4), leaf(rng, 2, 5, 3)
    check(lambda q, k, v: mha(q, k, v)[0], q, k, v)


def test_state_dict_keys_two_deep_load_copies_and_shares_memory_as_torch(rng):
    outer = nn.Sequential(nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3)), nn.Linear(3, 1))
    assert list(outer.state_dict()) == ["0.0.weight", "0.0.bias", "0.1.weight", "0.1.bias", "1.weight", "1.bias"]
    saved = {k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in outer.state_dict().items()}
    outer.load_state_dict(saved)
    saved["1.bias"][...] = 123.0  # the module holds a copy
    assert outer[1].bias.array[0] != 123.0
    weight = outer[1].weight
    outer.load_state_dict(saved)
    assert outer[1].weight is weight and weight._version > 0  # copied in place, as torch's copy_
    state = outer.state_dict()
    assert isinstance(state["1.weight"], ta.Tensor) and not state["1.weight"].requires_grad
    state["1.weight"][...] = 7.0  # detached, sharing memory, as torch's state_dict
    assert np.all(outer[1].weight.array == 7.0)


def test_optimizer_resumes_after_load_state_dict_exactly():
    def run(split):
        p = nn.Parameter(np.array([1.0, -2.0]))
        opt = optim.AdamW([p], lr=0.1, betas=(0.5, 0.7), eps=1e-3, weight_decay=0.2)
        for step in range(6):
            if step == split:
                fresh = optim.AdamW([p], lr=0.1, betas=(0.5, 0.7), eps=1e-3, weight_decay=0.2)
                fresh.load_state_dict(opt.state_dict())
                opt = fresh
            p.grad = ta.tensor(np.array([0.3 * step - 1, 0.5]), dtype=p.dtype)
            opt.step()
        return p.array

    np.testing.assert_array_equal(run(split=3), run(split=-1))


def test_adamw_uses_its_betas_and_eps():
    def final(**kwargs):
        p = nn.Parameter(np.array([1.0]))
        opt = optim.AdamW([p], lr=0.1, **kwargs)
        for g in (1.0, -0.5, 0.25):
            p.grad = ta.tensor(np.array([g]), dtype=p.dtype)
            opt.step()
        return p.array[0]

    base = final()
    assert final(betas=(0.5, 0.999)) != base and final(betas=(0.9, 0.5)) != base and final(eps=0.5) != base


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_a_parameter_without_a_gradient_does_not_stop_the_others(name):
    a, b, c = (nn.Parameter(np.array([1.0])) for _ in range(3))
    opt = getattr(optim, name)([a, b, c], lr=0.1)
    for _ in range(2):
        a.grad, b.grad, c.grad = None, ta.tensor(np.array([1.0])), ta.tensor(np.array([1.0]))
        opt.step()
    assert a.array[0] == 1.0 and b.array[0] < 1.0 and c.array[0] == b.array[0]
    if name != "SGD":
        assert opt.state[b]["step"] == opt.state[c]["step"] == 2 and a not in opt.state


def test_optimizer_argument_checks():
    p = [nn.Parameter(np.ones(1))]
    for call, message in [
        (lambda: optim.SGD(p, lr=0.1, momentum=-0.1), "invalid momentum value"),
        (lambda: optim.SGD(p, lr=0.1, weight_decay=-1), "invalid weight_decay value"),
        (lambda: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
        (lambda: optim.Adam(p, eps=-1e-8), "invalid epsilon value"),
        (lambda: optim.Adam(p, betas=(0.9, 1.0)), "invalid beta parameter at index 1"),
        (lambda: optim.Adam(p, weight_decay=-0.1), "invalid weight_decay value"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()


def test_cross_entropy_checks_and_shapes(rng):
    logits = leaf(rng, 3, 4)
    targets = ta.tensor(np.array([0, 3, 1]))  # a tensor of targets works like an array
    assert np.isclose(F.cross_entropy(logits, targets).item(), F.cross_entropy(logits, targets.array).item())
    assert F.cross_entropy(logits, targets, reduction="none").shape == (3,)
    with pytest.raises(ValueError, match="target 4 is out of range for 4 classes"):
        F.cross_entropy(logits, np.array([0, 4, 1]))
    with pytest.raises(ValueError, match="target -1 is out of range"):
        F.cross_entropy(logits, np.array([0, -1, 1]))
    with pytest.raises(ValueError, match=r"input of shape \(2, 3, 4\) needs targets of shape \(2, 4\), got \(2, 3\) "
                                         r"\(the classes are dim 1, as in torch: reshape \(B, n, C\) logits"):
        F.cross_entropy(leaf(rng, 2, 3, 4), np.zeros((2, 3), dtype=int))
    with pytest.raises(TypeError, match="targets must be integer class indices, got dtype float64"):
        F.cross_entropy(logits, np.zeros(3))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'max'"):
        F.cross_entropy(logits, targets, reduction="max")
    one = F.cross_entropy(leaf(rng, 4), np.array(3), reduction="none")
    assert one.shape == ()


def test_dropout_arguments_and_dtype():
    x = ta.ones(100, dtype=ta.float64)
    assert F.dropout(x, 0.3).dtype == np.float64 and F.dropout(x, 1.0).dtype == np.float64
    assert F.dropout(x, 0.0) is x
    for bad in (-0.1, 1.1):
        with pytest.raises(ValueError, match=rf"dropout: p must be in \[0, 1\], got {bad}"):
            F.dropout(x, bad)
    assert np.all(F.dropout(x, 1.0).array == 0)


def test_embedding_checks(rng):
    weight = leaf(rng, 5, 2)
    np.testing.assert_array_equal(F.embedding(ta.tensor(np.array([4, 0])), weight).array, weight.array[[4, 0]])
    with pytest.raises(IndexError, match="embedding: index 5 is out of range for 5 embeddings"):
        F.embedding(np.array([0, 5]), weight)
    with pytest.raises(IndexError, match="embedding: index -2 is out of range"):
        F.embedding(np.array([-2, 7]), weight)
    with pytest.raises(TypeError, match="indices must be integers, got dtype float64"):
        F.embedding(np.array([0.0]), weight)


def test_mse_loss_reductions_and_shape_check(rng):
    x, y = leaf(rng, 2, 3), rng.standard_normal((2, 3))
    assert np.isclose(F.mse_loss(x, y).item(), ((x.array - y) ** 2).mean())
    assert np.isclose(nn.MSELoss()(x, ta.tensor(y)).item(), ((x.array - y) ** 2).mean())
    with pytest.raises(ValueError, match=r"mse_loss: input shape \(2, 3\) and target shape \(3,\) differ"):
        F.mse_loss(x, np.ones(3))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none'"):
        F.mse_loss(x, y, reduction="avg")


def test_layers_dtypes_and_options(rng):
    for make in (lambda d: nn.Linear(3, 2, dtype=d), lambda d: nn.Embedding(4, 2, dtype=d),
                 lambda d: nn.LayerNorm(3, dtype=d)):
        assert all(p.dtype == np.float32 for p in make(None).parameters())  # torch's default
        assert all(p.dtype == np.float64 for p in make(ta.float64).parameters())
    assert nn.LayerNorm(3).weight.shape == (3,) and nn.LayerNorm([2, 3]).weight.shape == (2, 3)
    assert np.all(nn.Linear(0, 3).weight.array == 0)  # no inputs: torch's bound is 0
    assert nn.Dropout(1.0)(ta.ones(4)).tolist() == [0.0] * 4
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(1.5)
    logits = leaf(rng, 3, 4)
    targets = np.array([1, 2, 3])
    loss = nn.CrossEntropyLoss(ignore_index=2, reduction="none")(logits, targets)
    np.testing.assert_allclose(loss.array, F.cross_entropy(logits, targets, ignore_index=2, reduction="none").array)
    assert loss.array[1] == 0
    x, y = leaf(rng, 2, 2), ta.tensor(rng.standard_normal((2, 2)))
    np.testing.assert_allclose(nn.MSELoss(reduction="none")(x, y).array, (x.array - y.array) ** 2)


def test_linear_init_bounds_at_one_and_zero_inputs():
    ta.manual_seed(0)
    one = nn.Linear(1, 64)  # bound 1 / sqrt(1) = 1: uniform in [-1, 1], not all zero
    assert 0.5 < np.abs(one.weight.array).max() <= 1.0 and 0.5 < np.abs(one.bias.array).max() <= 1.0
    empty = nn.Linear(0, 3)  # no inputs: torch's bound is 0, so the bias starts at 0
    assert empty.weight.shape == (3, 0) and not empty.bias.array.any()


def test_linear_names_the_dtypes_it_got():
    with pytest.raises(RuntimeError, match="share one dtype, got float32, float64, float64"):
        F.linear(ta.ones(2, 3), ta.ones(4, 3, dtype=ta.float64), ta.ones(4, dtype=ta.float64))
    with pytest.raises(RuntimeError, match="share one dtype, got float64, float32$"):
        F.linear(ta.ones(2, 3, dtype=ta.float64), ta.ones(4, 3))


@pytest.mark.parametrize("x_shape", [(2, 3), (2, 5, 3)])
def test_linear_refuses_a_bias_that_does_not_fit_even_one_that_would_broadcast(x_shape):
    for bias in (ta.ones(1), ta.ones(5), ta.ones(4, 1)):  # (1,) and (4, 1) would broadcast in y += b
        with pytest.raises(ValueError, match=rf"linear: bias of shape {re.escape(str(bias.shape))} does not fit "
                                             r"weight of shape \(4, 3\)"):
            F.linear(ta.ones(*x_shape), ta.ones(4, 3), bias)
    with pytest.raises(ValueError, match=r"linear: input of shape \(2, 5, 2\) does not fit weight of shape \(4, 3\) "
                                         r"\(2 != 3\)"):
        F.linear(ta.ones(2, 5, 2), ta.ones(4, 3), ta.ones(4))
