"""Public homework tests: gradient checks and properties, one group per task. Run with ``pytest``."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.autograd import gradcheck
from tinyattn.nn import functional as F


def leaf(rng, *shape):
    return ta.tensor(rng.standard_normal(shape), requires_grad=True)


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


# -- week 1: broadcasting and matmul ----------------------------------------------


@pytest.mark.task(id="unbroadcast", points=2)
def test_broadcast_gradients_match_finite_differences(rng):
    for sa, sb in [((3, 4), (4,)), ((2, 3, 4), (3, 1)), ((1, 4), (3, 1)), ((), (2, 2))]:
        assert gradcheck(lambda a, b: a * b + a, (leaf(rng, *sa), leaf(rng, *sb)))


@pytest.mark.task(id="unbroadcast", points=1)
def test_broadcast_gradient_counts_the_copies():
    a = ta.tensor(np.zeros((1, 4)), requires_grad=True)
    b = ta.tensor(np.zeros((3, 1)), requires_grad=True)
    (a + b).backward(np.ones((3, 4)))
    assert a.grad.shape == (1, 4) and b.grad.shape == (3, 1)
    np.testing.assert_array_equal(a.grad.numpy(), np.full((1, 4), 3.0))  # each a[0, j] was used 3 times
    np.testing.assert_array_equal(b.grad.numpy(), np.full((3, 1), 4.0))


@pytest.mark.task(id="matmul_backward", points=2)
def test_matmul_gradients(rng):
    for sa, sb in [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)), ((3, 4), (4,))]:
        assert gradcheck(lambda a, b: a @ b, (leaf(rng, *sa), leaf(rng, *sb)))


@pytest.mark.task(id="linear_forward", points=1)
def test_linear_is_x_times_w_transposed_plus_b(rng):
    x, w, b = leaf(rng, 2, 3, 4), leaf(rng, 5, 4), leaf(rng, 5)
    y = F.linear(x, w, b)
    assert y.shape == (2, 3, 5)
    for i, j in [(0, 0), (1, 2)]:
        # each output row is one input row through every weight row
        row = np.array([float((x[i, j] * w[o]).sum() + b[o]) for o in range(5)])
        np.testing.assert_allclose(y[i, j].detach().numpy(), row)
    np.testing.assert_allclose((F.linear(x, w) + b).detach().numpy(), y.detach().numpy())
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))


@pytest.mark.task(id="shape_backward", points=1)
def test_reshape_and_transpose_gradients(rng):
    x = leaf(rng, 2, 3, 4)
    assert gradcheck(lambda t: t.reshape(6, 4), (x,))
    assert gradcheck(lambda t: t.transpose(0, 2), (x,))
    assert gradcheck(lambda t: t.transpose(1, 2).reshape(2, 12), (x,))


# -- week 2: softmax and the loss --------------------------------------------------


@pytest.mark.task(id="softmax_backward", points=2)
def test_softmax_gradients(rng):
    x = leaf(rng, 2, 3, 4)
    for dim in (0, 1, -1):
        assert gradcheck(lambda t, dim=dim: t.softmax(dim), (x,))


@pytest.mark.task(id="log_softmax_backward", points=1)
def test_log_softmax_gradients(rng):
    x = leaf(rng, 2, 3, 4)
    for dim in (1, -1):
        assert gradcheck(lambda t, dim=dim: t.log_softmax(dim), (x,))


@pytest.mark.task(id="log_softmax_backward", points=1)
def test_cross_entropy_gradient(rng):
    logits = leaf(rng, 5, 6)
    assert gradcheck(lambda t: F.cross_entropy(t, np.array([0, 5, 2, 2, 1])), (logits,))


# -- week 3: attention ---------------------------------------------------------------


@pytest.mark.task(id="attention", points=2)
def test_attention_gradients_with_and_without_mask(rng):
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 5, 4), leaf(rng, 2, 5, 6)
    assert gradcheck(lambda q, k, v: F.attention(q, k, v), (q, k, v))
    mask = ta.tensor(np.where(rng.random((3, 5)) > 0.6, -np.inf, 0.0) * np.arange(5).astype(bool))
    assert gradcheck(lambda q, k, v: F.attention(q, k, v, mask), (q, k, v))


@pytest.mark.task(id="attention", points=1)
def test_attention_weights_are_distributions_over_allowed_keys(rng):
    q, k, v = leaf(rng, 3, 4), leaf(rng, 5, 4), leaf(rng, 5, 2)
    blocked = np.zeros((3, 5), dtype=bool)
    blocked[:, 3:] = True
    out, p = F.attention(q, k, v, ta.tensor(np.where(blocked, -np.inf, 0.0)))
    assert out.shape == (3, 2) and p.shape == (3, 5)
    weights, values, result = (t.detach().numpy() for t in (p, v, out))
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    assert np.all(weights[blocked] == 0)
    # the output is a weighted average of the values
    lo, hi = values.min(0), values.max(0)
    assert np.all(result >= lo - 1e-12) and np.all(result <= hi + 1e-12)


# -- week 4: multi-head attention ------------------------------------------------------


def _mha(rng):
    ta.manual_seed(1)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    mha.in_proj_bias.data[...] = ta.tensor(rng.standard_normal(24))
    return mha


def _locality(mha, rng):
    """With every query allowed to attend only to itself, output i depends on input i alone."""
    x = rng.standard_normal((2, 4, 8))
    only_self = ~np.eye(4, dtype=bool)  # True = masked out
    out = mha(ta.tensor(x), ta.tensor(x), ta.tensor(x), attn_mask=only_self)[0].detach().numpy()
    x2 = x.copy()
    x2[:, 3] += 1.0  # change position 3 only
    out2 = mha(ta.tensor(x2), ta.tensor(x2), ta.tensor(x2), attn_mask=only_self)[0].detach().numpy()
    np.testing.assert_allclose(out2[:, :3], out[:, :3], err_msg="positions 0-2 changed when only x[:, 3] did")
    assert not np.allclose(out2[:, 3], out[:, 3])


def _every_projection_learns(mha, rng):
    x = ta.tensor(rng.standard_normal((2, 4, 8)), requires_grad=True)
    out, _ = mha(x, x, x)
    out.backward(rng.standard_normal(out.shape))
    for rows, name in [(slice(0, 8), "W^Q"), (slice(8, 16), "W^K"), (slice(16, 24), "W^V")]:
        assert np.abs(mha.in_proj_weight.grad.numpy()[rows]).sum() > 0, f"{name} gets no gradient"


def _equivariance(mha, rng):
    """Self-attention without a mask treats positions alike: permuting them permutes the output."""
    x = rng.standard_normal((2, 4, 8))
    perm = np.array([2, 0, 3, 1])
    out = mha(ta.tensor(x), ta.tensor(x), ta.tensor(x))[0].detach().numpy()
    xp = x[:, perm]
    out_p = mha(ta.tensor(xp), ta.tensor(xp), ta.tensor(xp))[0].detach().numpy()
    np.testing.assert_allclose(out_p, out[:, perm], err_msg="permuting the positions did not permute the output")


@pytest.mark.task(id="mha_split_heads", points=1)
def test_split_heads_keeps_positions_apart(rng):
    _locality(_mha(rng), rng)
    _equivariance(_mha(rng), rng)


@pytest.mark.task(id="mha_split_heads", points=1)
def test_split_heads_uses_the_projections(rng):
    _every_projection_learns(_mha(rng), rng)


@pytest.mark.task(id="mha_split_heads", points=1)
def test_split_heads_for_any_number_of_keys(rng):
    """Keys and values may be more or fewer than the queries: cross-attention, add_bias_kv, add_zero_attn."""
    for options, L, S, batch in [({}, 3, 5, (2,)), ({"add_bias_kv": True}, 4, 4, (2,)),
                                 ({"add_zero_attn": True}, 4, 4, (2,)), ({"kdim": 6, "vdim": 5}, 2, 3, (2,)),
                                 ({}, 3, 5, ())]:  # the last one unbatched
        ta.manual_seed(2)
        mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64, **options)
        q = leaf(rng, *batch, L, 8)
        k, v = leaf(rng, *batch, S, options.get("kdim", 8)), leaf(rng, *batch, S, options.get("vdim", 8))
        out, weights = mha(q, k, v)
        extra = 1 if options.get("add_bias_kv") or options.get("add_zero_attn") else 0
        assert out.shape == (*batch, L, 8) and weights.shape == (*batch, L, S + extra), options
        assert gradcheck(lambda q, k, v, mha=mha: mha(q, k, v)[0], (q, k, v)), options


@pytest.mark.task(id="mha_merge_heads", points=1)
def test_merge_heads_keeps_positions_apart(rng):
    _locality(_mha(rng), rng)
    _equivariance(_mha(rng), rng)


@pytest.mark.task(id="mha_merge_heads", points=1)
def test_mha_gradients(rng):
    mha = _mha(rng)
    x = leaf(rng, 2, 3, 8)
    assert gradcheck(lambda x, *params: mha(x, x, x)[0], (x, *mha.parameters()))


# -- week 5: training ----------------------------------------------------------------


@pytest.mark.task(id="adam_step", points=1)
def test_adam_first_step_moves_each_weight_by_lr(rng):
    p = nn.Parameter(rng.standard_normal((3, 4)))
    start = p.detach().numpy().copy()
    g = rng.standard_normal((3, 4))
    p.grad = ta.tensor(g.copy())
    optim.Adam([p], lr=0.01).step()
    # at step 1 the bias-corrected moments are g and g^2, so each weight moves lr against its gradient
    np.testing.assert_allclose(start - p.detach().numpy(), 0.01 * np.sign(g), rtol=1e-5)


@pytest.mark.task(id="adam_step", points=1)
def test_adam_minimises_a_quadratic(rng):
    p = nn.Parameter(rng.uniform(-5, 5, 5))  # (from beyond about ±10, 300 steps of 0.1 fall short)
    opt = optim.Adam([p], lr=0.1)
    for _ in range(300):
        p.grad = 2 * p.detach()  # gradient of sum(p^2)
        opt.step()
    assert np.abs(p.detach().numpy()).max() < 0.05
