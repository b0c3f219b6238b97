"""The attention core (``F.multi_head_attention``) against a plain NumPy reference written from the paper's
equations, and the option paths of MultiheadAttention and SDPA that a torch user relies on."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F


def reference_mha(x_q, x_k, x_v, num_heads, weights, biases, mask):
    """``Concat(head_1..head_h) W^Oᵀ + b^O``, ``head_i = softmax(Q_i K_iᵀ / √d_k + M) V_i``, head by head."""
    w_q, w_k, w_v, w_o = weights
    b_q, b_k, b_v, b_o = biases if biases is not None else (0.0, 0.0, 0.0, 0.0)
    q, k, v = x_q @ w_q.T + b_q, x_k @ w_k.T + b_k, x_v @ w_v.T + b_v  # (B, n, E)
    E = w_q.shape[0]
    d_k = E // num_heads
    heads, weights_out = [], []
    for i in range(num_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        scores = q[..., cols] @ np.swapaxes(k[..., cols], -1, -2) / np.sqrt(d_k)  # (B, L, S)
        if mask is not None:
            scores = scores + mask[:, i] if mask.ndim == 4 else scores + mask
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        heads.append(p @ v[..., cols])
        weights_out.append(p)
    return np.concatenate(heads, -1) @ w_o.T + b_o, np.stack(weights_out, 1)


@pytest.mark.parametrize("seed", range(8))
def test_core_equals_the_per_head_reference(seed):
    """Widths of query, key and value that differ from E (W^Q is (E, E_q)), with and without biases and masks."""
    rng = np.random.default_rng(seed)
    B, L, S, h = 2, int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.choice([1, 2]))
    E, E_q, E_k, E_v = 4, int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(2, 6))
    x_q, x_k, x_v = (rng.standard_normal((B, n, d)) for n, d in ((L, E_q), (S, E_k), (S, E_v)))
    weights = [rng.standard_normal((E, d)) for d in (E_q, E_k, E_v, E)]
    biases = [rng.standard_normal(E) for _ in range(4)] if rng.integers(2) else None
    mask = [None, rng.standard_normal((L, S)), rng.standard_normal((B, h, L, S))][rng.integers(3)]
    expected, expected_p = reference_mha(x_q, x_k, x_v, h, weights, biases, mask)
    tensors = [ta.tensor(a) for a in (x_q, x_k, x_v)]
    out, p = F.multi_head_attention(*tensors, h, tuple(ta.tensor(w) for w in weights),
                                    None if biases is None else tuple(ta.tensor(b) for b in biases),
                                    None if mask is None else ta.tensor(mask))
    np.testing.assert_allclose(out.array, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p.array, expected_p, rtol=1e-10, atol=1e-12)  # weights by default, no dropout
    fused, none = F.multi_head_attention(*tensors, h, tuple(ta.tensor(w) for w in weights),
                                         None if biases is None else tuple(ta.tensor(b) for b in biases),
                                         None if mask is None else ta.tensor(mask), need_weights=False)
    assert none is None
    np.testing.assert_allclose(fused.array, expected, rtol=1e-10, atol=1e-12)


def test_mha_dropout_reaches_the_fused_path_and_differs_call_to_call():
    ta.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, dropout=0.5, batch_first=True, dtype=ta.float64)
    x = ta.randn(2, 6, 4, dtype=ta.float64)
    first, second = (mha(x, x, x, need_weights=False)[0].array for _ in range(2))
    plain = mha.eval()(x, x, x, need_weights=False)[0].array
    assert not np.allclose(first, plain) and not np.allclose(first, second)


def test_sdpa_draws_fresh_dropout_masks_and_no_randomness_without_dropout():
    q = ta.randn(1, 2, 5, 3, dtype=ta.float64)
    outs = [F.scaled_dot_product_attention(q, q, q, dropout_p=p).array for p in (0.5, 0.5, 1.0)]
    assert not np.allclose(outs[0], outs[1])
    ta.manual_seed(3)
    expected = ta.randn(3).array
    ta.manual_seed(3)
    F.scaled_dot_product_attention(q, q, q)  # no dropout: the generator is left alone
    np.testing.assert_array_equal(ta.randn(3).array, expected)


@pytest.mark.parametrize("embed_dim, num_heads", [(0, 1), (4, 0), (-2, 1)])
def test_mha_sizes_must_be_positive(embed_dim, num_heads):
    with pytest.raises(ValueError, match=rf"embed_dim \({embed_dim}\) and num_heads \({num_heads}\) must be > 0"):
        nn.MultiheadAttention(embed_dim, num_heads)


def test_mha_with_one_dim_and_one_head_and_unbatched_single_query():
    ta.manual_seed(0)
    mha = nn.MultiheadAttention(1, 1, dtype=ta.float64)
    out, w = mha(ta.randn(1, 1, dtype=ta.float64), ta.randn(3, 1, dtype=ta.float64), ta.randn(3, 1, dtype=ta.float64))
    assert out.shape == (1, 1) and w.shape == (1, 3)  # unbatched: (L, E) and (L, S), L = 1 kept
    out, w = mha(ta.randn(2, 1, dtype=ta.float64), ta.randn(1, 1, dtype=ta.float64), ta.randn(1, 1, dtype=ta.float64))
    assert out.shape == (2, 1) and w.shape == (2, 1)


def test_mha_input_checks_name_the_argument():
    mha = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, batch_first=True)
    q, k, v = ta.zeros(2, 3, 4), ta.zeros(2, 6, 3), ta.zeros(2, 6, 5)
    with pytest.raises(ValueError, match=r"key and value must have the same number of dims, got .* and \(6, 5\)"):
        mha(q, k, ta.zeros(6, 5))
    with pytest.raises(ValueError, match=r"value .*vdim"):
        mha(q, k, ta.zeros(2, 6, 4))
    with pytest.raises(ValueError, match=r"key .*kdim"):
        mha(q, ta.zeros(2, 6, 4), v)
    with pytest.raises(ValueError, match=r"same sequence length, got shapes \(2, 6, 3\) and \(2, 5, 5\)"):
        mha(q, k, ta.zeros(2, 5, 5))


def test_f_dropout_keeps_the_dtype_even_at_p_1():
    x = ta.ones(3, 4)
    assert F.dropout(x, 1.0).dtype == np.float32 and not F.dropout(x, 1.0).array.any()
    assert F.dropout(x, 0.5).dtype == np.float32


def test_cross_entropy_with_one_class_and_an_ignored_row():
    logits = ta.tensor(np.zeros((2, 1)), requires_grad=True)
    loss = F.cross_entropy(logits, np.array([0, -100]), reduction="none")
    np.testing.assert_array_equal(loss.array, [0.0, 0.0])  # log softmax of one class is 0


def test_float_ids_or_targets_that_require_grad_get_the_dtype_message():
    """Passing embeddings where ids belong (a common slip) names the dtype, not NumPy's conversion."""
    weight = ta.ones(4, 2)
    floats = ta.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="embedding: indices must be integers, got dtype float32"):
        F.embedding(floats, weight)
    with pytest.raises(TypeError, match="cross_entropy: targets must be integer class indices, got dtype float32"):
        F.cross_entropy(ta.ones(3, 4), floats)


def test_ids_and_targets_may_be_plain_lists():
    weight = ta.tensor(np.arange(8.0).reshape(4, 2))
    assert F.embedding([3, 0], weight).tolist() == [[6.0, 7.0], [0.0, 1.0]]
    logits = ta.tensor(np.log(np.array([[0.25, 0.75], [0.5, 0.5]])))
    np.testing.assert_allclose(F.cross_entropy(logits, [1, 0], reduction="none").array, [-np.log(0.75), np.log(2)])
