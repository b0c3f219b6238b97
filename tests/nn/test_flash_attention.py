"""FlashAttention: gradchecks over masks, block sizes and GQA; the fused path equals the composed one."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F

from ..helpers import check, leaf

B, H, L, S, D = 2, 2, 5, 6, 3


def composed(q, k, v, mask=None, scale=None):
    """softmax(Q Kᵀ · scale + M) V from separate ops (the reference the fused op must equal)."""
    out, _ = F.attention(q, k, v, mask, scale=scale)
    return out


def masks(rng):
    """Additive masks (as the fused op receives them) and the SDPA keyword arguments that make them."""
    allowed = rng.random((L, S)) > 0.4
    allowed[:, 0] = True
    padding = np.ones((B, 1, 1, S), dtype=bool)
    padding[0, ..., -2:] = padding[1, ..., -1] = False
    some_rows_blind = allowed.copy()
    some_rows_blind[[1, 3]] = False  # queries 1 and 3 see no key at all
    return {
        "none": {},
        "bool": {"attn_mask": allowed},
        "float": {"attn_mask": rng.standard_normal((B, H, L, S))},
        "causal": {"is_causal": True},
        "key_padding": {"attn_mask": padding},
        "fully_masked_rows": {"attn_mask": some_rows_blind},
    }


def additive(kwargs):
    """The same mask as an additive tensor for the composed reference."""
    if kwargs.get("is_causal"):
        return ta.tensor(np.where(np.tril(np.ones((L, S), dtype=bool)), 0.0, -np.inf))
    m = kwargs.get("attn_mask")
    if m is None:
        return None
    return ta.tensor(np.where(m, 0.0, -np.inf) if m.dtype == bool else m)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal", "key_padding", "fully_masked_rows"])
@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 64])  # 2 and 3 divide S = 6; 1, 4 and 64 leave a ragged block
def test_fused_op_equals_composed_and_passes_gradcheck(rng, mask_kind, block_size):
    q, k, v = leaf(rng, B, H, L, D), leaf(rng, B, H, S, D), leaf(rng, B, H, S, 4)
    kwargs = masks(rng)[mask_kind]
    out = F.scaled_dot_product_attention(q, k, v, block_size=block_size, **kwargs)
    grad_out = rng.standard_normal(out.shape)
    out.backward(grad_out)
    fused_grads = [t.grad.numpy().copy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    ref = composed(q, k, v, additive(kwargs))
    ref.backward(grad_out)
    np.testing.assert_allclose(out.array, ref.array, atol=1e-12)
    for got, t in zip(fused_grads, (q, k, v)):
        np.testing.assert_allclose(got, t.grad, atol=1e-12)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, block_size=block_size, **kwargs), q, k, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_query_that_sees_no_key_gets_zeros_and_no_nan(rng, dtype):
    q, k, v = (ta.tensor(t.array.astype(dtype), requires_grad=True)
               for t in (leaf(rng, B, H, L, D), leaf(rng, B, H, S, D), leaf(rng, B, H, S, 4)))
    kwargs = masks(rng)["fully_masked_rows"]
    out = F.scaled_dot_product_attention(q, k, v, block_size=2, **kwargs)
    out.backward(rng.standard_normal(out.shape).astype(dtype))
    assert out.dtype == dtype and np.all(out.array[:, :, [1, 3]] == 0)
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad))
    assert np.all(q.grad[:, :, [1, 3]] == 0)


@pytest.mark.parametrize("q_heads, kv_heads", [(4, 2), (2, 1), (4, 1)])
def test_grouped_query_attention(rng, q_heads, kv_heads):
    group = q_heads // kv_heads
    q, k, v = leaf(rng, B, q_heads, L, D), leaf(rng, B, kv_heads, S, D), leaf(rng, B, kv_heads, S, 4)
    mask = leaf(rng, B, q_heads, L, S)  # one mask per query head, itself differentiable
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True, block_size=4)
    k_rep, v_rep = (ta.tensor(np.repeat(t.array, group, axis=1)) for t in (k, v))
    np.testing.assert_allclose(out.array, composed(q, k_rep, v_rep, ta.tensor(mask.array)).array, atol=1e-12)
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True, block_size=4),
          q, k, v, mask)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match="not a multiple"):
        F.scaled_dot_product_attention(q, leaf(rng, B, 3, S, D), leaf(rng, B, 3, S, 4), enable_gqa=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_keeps_the_expected_value(dtype):
    """Uniform weights over 256 keys and V = 1: each output is the kept fraction / (1 - p), about 1."""
    ta.manual_seed(0)
    q, v = ta.zeros(1, 64, 8, dtype=dtype), ta.ones(1, 256, 8, dtype=dtype)
    out = F.scaled_dot_product_attention(q, ta.zeros(1, 256, 8, dtype=dtype), v, dropout_p=0.5, block_size=32)
    assert out.dtype == dtype
    assert abs(out.array.mean() - 1.0) < 0.05  # standard error 1 / 128
    assert 0.5 < out.array.std() * 16 < 2.0  # each row: the mean of 256 kept-or-not, sd (1/16) sqrt(p / (1 - p))
    all_dropped = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    np.testing.assert_array_equal(all_dropped.array, np.zeros((1, 64, 8)))  # torch's zeros, not 0 / 0
    assert all_dropped.dtype == dtype


def test_a_float_mask_that_requires_grad_gets_dS(rng):
    q, k, v = leaf(rng, B, H, L, D), leaf(rng, B, H, S, D), leaf(rng, B, H, S, 4)
    mask = leaf(rng, 1, H, L, S)  # broadcast over the batch
    check(lambda q, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, block_size=4), q, mask)


def test_scale_and_dropout(rng):
    q, k, v = leaf(rng, B, H, L, D), leaf(rng, B, H, S, D), leaf(rng, B, H, S, 4)
    out = F.scaled_dot_product_attention(q, k, v, scale=0.3, block_size=4)
    np.testing.assert_allclose(out.array, composed(q, k, v, scale=0.3).array, atol=1e-12)

    def with_dropout(q, k, v):
        ta.manual_seed(5)  # the same keep-masks at every evaluation
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, block_size=4)

    check(with_dropout, q, k, v)
    dropped = with_dropout(q, k, v).array
    assert not np.allclose(dropped, F.scaled_dot_product_attention(q, k, v).array)


def test_only_the_output_and_the_row_log_sum_exp_are_kept(rng):
    """Besides K and V the op saves Q · scale (L, d), O (L, d_v) and LSE (L, 1) per head: nothing L × S, also
    when every key fits in one block (one code path at every size: the backward recomputes that block's P)."""
    q, k, v = leaf(rng, B, H, 7, D), leaf(rng, B, H, 9, D), leaf(rng, B, H, 9, 4)
    for block_size, kept in [(4, [(B, H, 7, 1)]), (16, [(B, H, 7, 1)])]:
        out = F.scaled_dot_product_attention(q, k, v, block_size=block_size)
        saved = out.grad_fn.ctx.saved_tensors
        extra = [a.shape for a in saved if a is not None and a is not k.array and a is not v.array]
        assert sorted(extra) == sorted([(B, H, 7, D), (B, H, 7, 4)] + kept)


def random_mha_case(rng):
    """One random MultiheadAttention configuration and its inputs (float64)."""
    E, heads = 8, int(rng.choice([1, 2, 4]))
    options = {"batch_first": bool(rng.integers(2)), "bias": bool(rng.integers(2)),
               "add_bias_kv": bool(rng.integers(2)), "add_zero_attn": bool(rng.integers(2))}
    if rng.integers(2):
        options.update(kdim=5, vdim=7)
    n_q, n_k, batch = int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 3))
    batched = bool(rng.integers(3))  # mostly batched

    def shape(n, dim):
        if not batched:
            return (n, dim)
        return (batch, n, dim) if options["batch_first"] else (n, batch, dim)

    query = leaf(rng, *shape(n_q, E))
    key = leaf(rng, *shape(n_k, options.get("kdim", E)))
    value = leaf(rng, *shape(n_k, options.get("vdim", E)))
    kwargs = {}
    if rng.integers(2):
        blocked = rng.random((n_q, n_k)) > 0.6
        kwargs["attn_mask"] = blocked if rng.integers(2) else rng.standard_normal((n_q, n_k))
    if rng.integers(2):
        padding = rng.random((batch, n_k) if batched else (n_k,)) > 0.7
        kwargs["key_padding_mask"] = padding
    return E, heads, options, (query, key, value), kwargs


@pytest.mark.parametrize("seed", range(12))
def test_fused_multihead_attention_equals_the_composed_path(seed):
    rng = np.random.default_rng(seed)
    E, heads, options, inputs, kwargs = random_mha_case(rng)
    ta.manual_seed(seed)
    mha = nn.MultiheadAttention(E, heads, dtype=ta.float64, **options)
    for p in mha.parameters():
        p.array[...] = rng.standard_normal(p.shape)
    results = []
    for need_weights in (True, False):
        mha.zero_grad()
        for t in inputs:
            t.grad = None
        out, weights = mha(*inputs, need_weights=need_weights, **kwargs)
        assert (weights is None) == (not need_weights)
        out.backward(np.random.default_rng(99).standard_normal(out.shape))
        results.append([out.array] + [t.grad for t in inputs] + [p.grad for p in mha.parameters()])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, atol=1e-11)


def test_sdpa_argument_errors(rng):
    q = leaf(rng, 2, 3, 4)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        F.scaled_dot_product_attention(q, q, q, block_size=0)
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\]"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(ValueError, match=r"key \(2, 3, 4\) and value \(2, 5, 4\) differ"):
        F.scaled_dot_product_attention(q, q, leaf(rng, 2, 5, 4))
    with pytest.raises(ValueError, match="at least 2 dims"):
        F.scaled_dot_product_attention(leaf(rng, 4), q, q)


@pytest.mark.parametrize("q_heads, kv_heads", [(2, 2), (4, 2)])
def test_dropout_gradients_for_unbatched_and_grouped_heads(rng, q_heads, kv_heads):
    """(h, n, d) inputs, without and with GQA: the keep-masks of backward must be forward's, transposed right."""
    q, k, v = leaf(rng, q_heads, L, D), leaf(rng, kv_heads, S, D), leaf(rng, kv_heads, S, 4)

    def with_dropout(q, k, v):
        ta.manual_seed(7)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, enable_gqa=q_heads != kv_heads, block_size=4)

    check(with_dropout, q, k, v)


def test_a_float32_mask_gets_a_float32_gradient(rng):
    q = ta.tensor(rng.standard_normal((B, H, L, D)).astype(np.float32))
    mask = ta.tensor(rng.standard_normal((L, S)).astype(np.float32), requires_grad=True)
    kv = ta.tensor(rng.standard_normal((B, H, S, D)).astype(np.float32))
    F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask, block_size=4).backward(
        np.ones((B, H, L, D), dtype=np.float32))
    assert mask.grad.dtype == np.float32 and mask.grad.shape == (L, S)


@pytest.mark.parametrize("n_queries, n_keys, is_causal", [(0, 4, False), (0, 4, True), (3, 0, False), (0, 0, False)])
def test_no_queries_or_no_keys_as_in_torch(rng, n_queries, n_keys, is_causal):
    torch = pytest.importorskip("torch")
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, n_queries, 3), (2, n_keys, 3),
                                                                          (2, n_keys, 4), (2, n_queries, 4))]
    results = []
    for lib, sdpa in ((ta, F.scaled_dot_product_attention), (torch, torch.nn.functional.scaled_dot_product_attention)):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays[:3])
        out = sdpa(q, k, v, is_causal=is_causal)
        out.backward(lib.tensor(arrays[3]))
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)  # empty, or all 0: a query that sees no key gets 0


def ops_behind(t):
    """The names of the ops in the graph behind ``t``, each node once."""
    seen, stack, names = set(), [t.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name)
        stack.extend(node.edges)
    return names


@pytest.mark.parametrize("seed", range(16))
def test_self_attention_without_weights_is_one_packed_product_with_the_composed_result(seed):
    """need_weights=False on one tensor as query, key and value: Q, K, V from one LinearFn, the composed numbers."""
    rng = np.random.default_rng(seed)
    E, heads, options, (x, _, _), kwargs = random_mha_case(rng)
    options.pop("kdim", None), options.pop("vdim", None)
    n = x.shape[1] if x.ndim == 3 and options["batch_first"] else x.shape[0]  # self-attention: n keys for n queries
    if "attn_mask" in kwargs:
        kwargs["attn_mask"] = rng.random((n, n)) > 0.6 if rng.integers(2) else rng.standard_normal((n, n))
    if "key_padding_mask" in kwargs:  # (B, n), or (n,) unbatched
        kwargs["key_padding_mask"] = rng.random(x.shape[:-1] if options["batch_first"] else x.shape[-2::-1]) > 0.7
    mha = nn.MultiheadAttention(E, heads, dtype=ta.float64, **options)
    for p in mha.parameters():
        p.array[...] = rng.standard_normal(p.shape)
    upstream = rng.standard_normal(x.shape)
    results, graphs = [], []
    for need_weights in (True, False):
        mha.zero_grad()
        x.grad = None
        out, _ = mha(x, x, x, need_weights=need_weights, **kwargs)
        graphs.append(ops_behind(out))
        out.backward(upstream)
        results.append([out.array, x.grad.array] + [p.grad.array for p in mha.parameters()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, atol=1e-11)
    packed = not (options["add_bias_kv"] or options["add_zero_attn"])  # appended keys take the unpacked path
    assert graphs[1].count("LinearFn") == (2 if packed else 4), graphs[1]
    assert ("PackedFlashAttention" in graphs[1]) == packed and ("FlashAttention" in graphs[1]) != packed
    assert graphs[0].count("LinearFn") == 4 and "FlashAttention" not in graphs[0]


def test_packed_self_attention_draws_the_same_dropout_as_the_unpacked_path():
    mha = nn.MultiheadAttention(8, 2, dropout=0.4, batch_first=True, dtype=ta.float64)
    x = ta.randn(2, 6, 8, dtype=ta.float64, requires_grad=True)
    key = x * 1.0  # the same values, another tensor: not self-attention, so three projections
    upstream = np.random.default_rng(5).standard_normal((2, 6, 8))
    results = []
    for k in (x, key):
        mha.zero_grad()
        ta.manual_seed(11)
        out, _ = mha(x, k, k, need_weights=False)
        out.backward(upstream)
        results.append([out.array] + [p.grad.array for p in mha.parameters()])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, atol=1e-12)
    ta.manual_seed(11)
    evaluated = mha.eval()(x, x, x, need_weights=False)[0].array  # eval: no dropout, the composed path's numbers
    assert not np.allclose(evaluated, results[0][0])
    np.testing.assert_allclose(evaluated, mha(x, x, x, need_weights=True)[0].array, atol=1e-12)


@pytest.mark.parametrize("block_size", [2, 64])
@pytest.mark.parametrize("mask_kind", ["none", "float_needs_grad", "blocked_rows"])
def test_packed_op_equals_flash_attention_on_the_three_slices(rng, block_size, mask_kind):
    """PackedFlashAttention(qkv) is FlashAttention(qkv[0], qkv[1], qkv[2]): values, dqkv stacked, dM; gradcheck."""
    from tinyattn.autograd.core.ops.flash_attention import FlashAttention, PackedFlashAttention

    qkv = leaf(rng, 3, B, H, S, D)
    mask = None
    if mask_kind != "none":
        mask = ta.tensor(rng.standard_normal((S, S)), requires_grad=mask_kind == "float_needs_grad")
        if mask_kind == "blocked_rows":
            mask.array[1] = -np.inf  # a query that sees no key
    options = dict(scale=0.4, is_causal=False, dropout_p=0.0, block_size=block_size, seed=0)
    upstream = rng.standard_normal((B, H, S, D))
    packed = PackedFlashAttention.apply(qkv, mask, **options)
    packed.backward(upstream)
    got = [packed.array, qkv.grad.array] + ([mask.grad.array] if mask_kind == "float_needs_grad" else [])
    qkv.grad = None
    if mask is not None:
        mask.grad = None
    q, k, v = qkv.unbind(0)
    flash = FlashAttention.apply(q, k, v, mask, **options)
    flash.backward(upstream)
    expected = [flash.array, qkv.grad.array] + ([mask.grad.array] if mask_kind == "float_needs_grad" else [])
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=1e-12)
    inputs = (qkv, mask) if mask_kind == "float_needs_grad" else (qkv,)
    check(lambda *ts: PackedFlashAttention.apply(ts[0], ts[1] if len(ts) > 1 else mask, **options), *inputs)


def test_packed_op_dropout_is_flash_attentions():
    from tinyattn.autograd.core.ops.flash_attention import FlashAttention, PackedFlashAttention

    qkv = leaf(np.random.default_rng(4), 3, 2, 2, 5, 3)
    options = dict(scale=0.5, is_causal=False, dropout_p=0.3, block_size=2, seed=1234)
    upstream = np.random.default_rng(5).standard_normal((2, 2, 5, 3))
    results = []
    for run in (lambda: PackedFlashAttention.apply(qkv, None, **options),
                lambda: FlashAttention.apply(*qkv.unbind(0), None, **options)):
        qkv.grad = None
        out = run()
        out.backward(upstream)
        results.append((out.array, qkv.grad.array))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-12)
    assert not np.allclose(results[0][0], PackedFlashAttention.apply(qkv, None, **{**options, "dropout_p": 0.0}).array)


def test_packed_attention_refuses_what_is_not_three_stacked_heads(rng):
    with pytest.raises(TypeError, match=r"packed_attention: qkv must be a Tensor, got ndarray"):
        F.packed_attention(np.zeros((3, 4, 5, 3)))
    with pytest.raises(ValueError, match=r"qkv must have shape \(3, \.\.\., n, d\), got \(2, 4, 5, 3\)"):
        F.packed_attention(leaf(rng, 2, 4, 5, 3))
    with pytest.raises(ValueError, match=r"qkv must have shape \(3, \.\.\., n, d\), got \(3, 5\)"):
        F.packed_attention(leaf(rng, 3, 5))
    with pytest.raises(ValueError, match=r"packed_attention: dropout_p must be in \[0, 1\], got 1.5"):
        F.packed_attention(leaf(rng, 3, 4, 5, 3), dropout_p=1.5)
    with pytest.raises(ValueError, match=r"packed_attention: block_size must be a positive int, got 0"):
        F.packed_attention(leaf(rng, 3, 4, 5, 3), block_size=0)
    unbatched = leaf(rng, 3, 5, 4)  # (3, n, d): one head, no batch
    np.testing.assert_allclose(F.packed_attention(unbatched).array,
                               F.scaled_dot_product_attention(*unbatched.unbind(0)).array, atol=1e-12)
    with pytest.raises(ValueError, match=r"mask of shape \(5, 4\) does not broadcast to the scores' shape \(4, 5, 5\)"):
        F.packed_attention(leaf(rng, 3, 4, 5, 3), ta.zeros(5, 4))
    qkv = leaf(rng, 3, 4, 5, 3)
    np.testing.assert_allclose(F.packed_attention(qkv, ta.zeros(5, 5, dtype=ta.float64)).array,
                               F.scaled_dot_product_attention(*qkv.unbind(0)).array, atol=1e-12)


def test_packed_attention_takes_sdpas_key_blocks_and_no_randomness_without_dropout(rng):
    qkv = leaf(rng, 3, 1, 129, 2)  # 129 keys: two blocks of 128 and 1
    for out in (F.packed_attention(qkv), F.scaled_dot_product_attention(*qkv.unbind(0))):
        assert len(out.grad_fn.ctx.saved_tensors) == 6 and out.grad_fn.ctx.saved_tensors[-1].shape == (1, 129, 1)
    ta.manual_seed(3)
    expected = ta.randn(3).array
    ta.manual_seed(3)
    F.packed_attention(qkv)  # no dropout: the generator is left alone
    np.testing.assert_array_equal(ta.randn(3).array, expected)
