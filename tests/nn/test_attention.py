"""scaled_dot_product_attention and MultiheadAttention: values, gradchecks w.r.t. inputs and every
parameter, masks of every kind, the fully-masked row, and error messages."""

import math

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf
from tinyattn import nn
from tinyattn.nn import functional as F


def reference_attention(q, k, v, additive=None):
    """Plain NumPy softmax(q k^T / sqrt(d) + mask) v."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if additive is not None:
        s = s + additive
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


# -- scaled_dot_product_attention ----------------------------------------------


def test_sdpa_values(rng):
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 5, 4), leaf(rng, 2, 5, 6)
    out = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out.array, reference_attention(q.array, k.array, v.array))


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal", "batched_bool"])
def test_sdpa_gradcheck_with_each_mask(rng, mask_kind):
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 3, 4), leaf(rng, 2, 3, 5)
    allowed = rng.random((3, 3)) > 0.4
    allowed[:, 0] = True  # every query can see at least one key
    kwargs = {
        "none": {},
        "bool": {"attn_mask": allowed},
        "float": {"attn_mask": rng.standard_normal((3, 3))},
        "causal": {"is_causal": True},
        "batched_bool": {"attn_mask": np.broadcast_to(allowed, (2, 3, 3)).copy()},
    }[mask_kind]
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    additive = None
    if mask_kind in ("bool", "batched_bool"):
        additive = np.where(kwargs["attn_mask"], 0.0, -np.inf)
    elif mask_kind == "float":
        additive = kwargs["attn_mask"]
    elif mask_kind == "causal":
        additive = np.where(np.tril(np.ones((3, 3), dtype=bool)), 0.0, -np.inf)
    np.testing.assert_allclose(out.array, reference_attention(q.array, k.array, v.array, additive))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs), q, k, v)


def test_sdpa_bool_mask_true_means_attend(rng):
    q, k, v = leaf(rng, 1, 4), leaf(rng, 2, 4), leaf(rng, 2, 3)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=np.array([[True, False]]))
    np.testing.assert_allclose(out.array, v.array[:1])  # only key 0 may be attended


def test_sdpa_errors():
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(ta.ones(2, 3), ta.ones(2, 3), ta.ones(2, 3), attn_mask=np.ones((2, 2), bool),
                                       is_causal=True)
    with pytest.raises(TypeError, match="bool and floating"):
        F.scaled_dot_product_attention(ta.ones(2, 3), ta.ones(2, 3), ta.ones(2, 3), attn_mask=np.ones((2, 2), int))
    with pytest.raises(ValueError, match=r"\(3, 3\) does not broadcast"):
        F.scaled_dot_product_attention(ta.ones(2, 3), ta.ones(2, 3), ta.ones(2, 3), attn_mask=np.ones((3, 3), bool))


# -- MultiheadAttention ----------------------------------------------------------


def make_mha(**kwargs):
    ta.manual_seed(kwargs.pop("seed", 0))
    m = nn.MultiheadAttention(kwargs.pop("embed_dim", 4), kwargs.pop("num_heads", 2), dtype=ta.float64, **kwargs)
    # non-zero biases, so their gradients are not trivially checked at zero
    for name, p in m.named_parameters():
        if "bias" in name:
            p.array[...] = np.random.default_rng(1).standard_normal(p.shape)
    return m


def check_mha(m, query, key, value, **kwargs):
    """gradcheck the output and the weights w.r.t. the inputs and every parameter."""
    params = list(m.parameters())
    inputs = [t for t in (query, key, value) if t.requires_grad]
    unique = list({id(t): t for t in inputs}.values())

    def fn(*_):
        return m(query, key, value, **kwargs)

    check(fn, *unique, *params)


def test_mha_forward_matches_the_formula(rng):
    m = make_mha(batch_first=True)
    x = leaf(rng, 2, 3, 4)
    out, w = m(x, x, x, average_attn_weights=False)
    E, h, d = 4, 2, 2
    W, b = m.in_proj_weight.array, m.in_proj_bias.array
    q, k, v = (x.array @ W[i * E : (i + 1) * E].T + b[i * E : (i + 1) * E] for i in range(3))
    split = lambda t: t.reshape(2, 3, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    heads = reference_attention(split(q), split(k), split(v))  # (B, h, L, d)
    concat = heads.transpose(0, 2, 1, 3).reshape(2, 3, E)
    np.testing.assert_allclose(out.array, concat @ m.out_proj.weight.array.T + m.out_proj.bias.array)
    assert w.shape == (2, 2, 3, 3)
    np.testing.assert_allclose(w.array.sum(-1), 1.0)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"batch_first": True},
        {"bias": False},
        {"add_bias_kv": True},
        {"add_zero_attn": True},
        {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
    ],
    ids=repr,
)
def test_mha_gradcheck_self_attention(rng, options):
    m = make_mha(**options)
    x = leaf(rng, 3, 2, 4)  # (L, B, E) or (B, L, E)
    check_mha(m, x, x, x)


def test_mha_gradcheck_cross_attention_kdim_vdim(rng):
    m = make_mha(kdim=3, vdim=5, batch_first=True)
    assert m.in_proj_weight is None and m.k_proj_weight.shape == (4, 3) and m.v_proj_weight.shape == (4, 5)
    q, k, v = leaf(rng, 2, 3, 4), leaf(rng, 2, 4, 3), leaf(rng, 2, 4, 5)
    check_mha(m, q, k, v, average_attn_weights=False)


@pytest.mark.parametrize("mask", ["bool_2d", "float_2d", "bool_3d", "padding", "padding_and_float"])
def test_mha_gradcheck_with_masks(rng, mask):
    m = make_mha(batch_first=True)
    B, L, S, h = 2, 3, 4, 2
    q, kv = leaf(rng, B, L, 4), leaf(rng, B, S, 4)
    blocked = rng.random((L, S)) > 0.6
    blocked[:, 0] = False
    padding = np.array([[False, False, True, True], [False, False, False, True]])
    kwargs = {
        "bool_2d": {"attn_mask": blocked},
        "float_2d": {"attn_mask": rng.standard_normal((L, S))},
        "bool_3d": {"attn_mask": (rng.random((B * h, L, S)) > 0.7) & np.arange(S).astype(bool)},
        "padding": {"key_padding_mask": padding},
        "padding_and_float": {"key_padding_mask": padding, "attn_mask": rng.standard_normal((L, S))},
    }[mask]
    check_mha(m, q, kv, kv, **kwargs)


def test_mha_bool_mask_true_means_masked_out(rng):
    m = make_mha(batch_first=True)
    x = leaf(rng, 1, 3, 4)
    padding = np.array([[False, True, True]])
    _, w = m(x, x, x, key_padding_mask=padding)
    np.testing.assert_allclose(w.array[0, :, 0], 1.0)
    np.testing.assert_array_equal(w.array[0, :, 1:], 0.0)
    _, w2 = m(x, x, x, attn_mask=np.triu(np.ones((3, 3), dtype=bool), k=1))  # causal
    np.testing.assert_array_equal(np.triu(w2.array[0], k=1), 0.0)


def test_mha_unbatched(rng):
    m = make_mha()
    x = leaf(rng, 3, 4)
    out, w = m(x, x, x, key_padding_mask=np.array([False, False, True]))
    assert out.shape == (3, 4) and w.shape == (3, 3)
    out_b, w_b = m(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1), key_padding_mask=np.array([[False, False, True]]))
    np.testing.assert_allclose(out.array, out_b.array[:, 0])
    _, wh = m(x, x, x, average_attn_weights=False, attn_mask=np.zeros((2, 3, 3), bool))
    assert wh.shape == (2, 3, 3)
    check_mha(m, x, x, x)


def test_mha_need_weights_false_and_shapes(rng):
    m = make_mha()
    x = leaf(rng, 5, 3, 4)  # (L, B, E)
    out, w = m(x, x, x, need_weights=False)
    assert out.shape == (5, 3, 4) and w is None


def test_fully_masked_query_has_no_nan_anywhere(rng):
    m = make_mha(batch_first=True)
    x = leaf(rng, 2, 3, 4)
    blocked = np.zeros((3, 3), dtype=bool)
    blocked[1] = True  # query 1 may attend to nothing
    out, w = m(x, x, x, attn_mask=blocked)
    np.testing.assert_array_equal(w.array[:, 1], 0.0)
    np.testing.assert_allclose(out.array[:, 1], np.broadcast_to(m.out_proj.bias.array, (2, 4)))
    (out * ta.tensor(rng.standard_normal(out.shape))).sum().backward()
    for name, p in [("x", x), *m.named_parameters()]:
        assert np.all(np.isfinite(p.grad)), name
    check_mha(m, x, x, x, attn_mask=blocked)


def test_dropout_on_weights_only_in_training(rng):
    m = make_mha(dropout=0.5, batch_first=True)
    x = leaf(rng, 2, 4, 4)
    ta.manual_seed(3)
    _, w_train = m(x, x, x, average_attn_weights=False)
    assert np.any(w_train.array == 0) and np.any(w_train.array > 1.0 / 4)
    m.eval()
    _, w1 = m(x, x, x)
    _, w2 = m(x, x, x)
    np.testing.assert_array_equal(w1.array, w2.array)
    np.testing.assert_allclose(w1.array.sum(-1), 1.0)


def test_mha_constructor_errors():
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be divisible by num_heads \(3\)"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize(
    "shapes,kwargs,pattern",
    [
        (((3, 2, 5), (3, 2, 4), (3, 2, 4)), {}, r"query has shape \(3, 2, 5\), its last dim must be embed_dim=4"),
        (((3, 2, 4), (3, 2, 4), (4, 2, 4)), {}, r"same sequence length.*\(3, 2, 4\) and \(4, 2, 4\)"),
        (((3, 2, 4), (3, 2, 6), (3, 2, 4)), {}, r"key has shape \(3, 2, 6\), its last dim must be kdim=4"),
        (((3, 2, 4), (3, 1, 4), (3, 1, 4)), {}, r"batch sizes differ"),
        (((3, 2, 4), (3, 2, 4), (3, 2, 4)), {"key_padding_mask": np.zeros((2, 4), bool)}, r"\(2, 3\), got \(2, 4\)"),
        (((3, 2, 4), (3, 2, 4), (3, 2, 4)), {"attn_mask": np.zeros((3, 2), bool)}, r"\(3, 3\) or \(4, 3, 3\)"),
        (((3, 4),), {}, r"same number of dims"),
    ],
)
def test_mha_input_errors(shapes, kwargs, pattern):
    m = nn.MultiheadAttention(4, 2)
    tensors = [ta.ones(*s) for s in shapes] + [ta.ones(3, 2, 4)] * (3 - len(shapes))
    with pytest.raises(ValueError, match=pattern):
        m(*tensors, **kwargs)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "make,error,pattern",
    [
        (lambda: (np.ones((3, 2, 4), np.float32), ta.ones(3, 2, 4), ta.ones(3, 2, 4)), TypeError,
         r"query must be a Tensor, got ndarray"),
        (lambda: (ta.ones(3, 2, 4), None, ta.ones(3, 2, 4)), TypeError, r"key must be a Tensor, got NoneType"),
        (lambda: (ta.ones(3, 2, 4), ta.ones(3, 2, 4), [[1.0]]), TypeError, r"value must be a Tensor, got list"),
        # a 2-D value beside 3-D query and key, though every size it has would fit: still refused
        (lambda: (ta.ones(3, 4, 4), ta.ones(3, 4, 4), ta.ones(3, 4)), ValueError,
         r"query, key and value must have the same number of dims"),
        (lambda: (ta.ones(1, 3, 2, 4),) * 3, ValueError,
         r"query must be 2-D \(unbatched\) or 3-D, got shape \(1, 3, 2, 4\)"),
        (lambda: (ta.ones(4),) * 3, ValueError, r"query must be 2-D \(unbatched\) or 3-D, got shape \(4,\)"),
        (lambda: (ta.ones(3, 2, 4), ta.ones(3, 2, 4), ta.ones(3, 2, 5)), ValueError,
         r"value has shape \(3, 2, 5\), its last dim must be vdim=4"),
        # several mistakes at once: the first check that fails is the one named
        (lambda: (ta.ones(3, 2, 5), ta.ones(4, 2, 6), ta.ones(3, 1, 4)), ValueError, r"query has shape"),
    ],
)
def test_mha_input_errors_name_the_first_failing_check(make, error, pattern, batch_first):
    m = nn.MultiheadAttention(4, 2, batch_first=batch_first)
    with pytest.raises(error, match="MultiheadAttention: " + pattern):
        m(*make())


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_batch_and_length_checks_follow_the_layout(batch_first):
    m = nn.MultiheadAttention(4, 2, batch_first=batch_first)
    def laid_out(B, n):  # (B, n, E) with batch_first, else (n, B, E)
        return ta.ones(B, n, 4) if batch_first else ta.ones(n, B, 4)
    with pytest.raises(ValueError, match=rf"batch sizes differ: .* \(batch dim {0 if batch_first else 1}\)"):
        m(laid_out(2, 3), laid_out(5, 3), laid_out(5, 3))
    with pytest.raises(ValueError, match=r"same sequence length"):
        m(laid_out(2, 3), laid_out(2, 3), laid_out(2, 4))
    out, _ = m(laid_out(2, 3), laid_out(2, 5), laid_out(2, 5))  # queries and keys may differ in length
    assert out.shape == laid_out(2, 3).shape


def test_mha_mask_dtype_and_is_causal_errors():
    m = nn.MultiheadAttention(4, 2)
    x = ta.ones(3, 2, 4)
    with pytest.raises(TypeError, match="bool and floating"):
        m(x, x, x, attn_mask=np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(RuntimeError, match="is_causal hint requires attn_mask"):
        m(x, x, x, is_causal=True)


def test_parameter_names_and_shapes_like_torch():
    m = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    shapes = {n: p.shape for n, p in m.named_parameters()}
    assert shapes == {"in_proj_weight": (24, 8), "in_proj_bias": (24,), "bias_k": (1, 1, 8), "bias_v": (1, 1, 8),
                      "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    m2 = nn.MultiheadAttention(8, 2, bias=False, kdim=3, vdim=5)
    assert {n: p.shape for n, p in m2.named_parameters()} == {
        "q_proj_weight": (8, 8), "k_proj_weight": (8, 3), "v_proj_weight": (8, 5), "out_proj.weight": (8, 8)}
    np.testing.assert_array_equal(nn.MultiheadAttention(8, 2).in_proj_bias.array, 0.0)
    bound = math.sqrt(6 / (8 + 24))
    w = nn.MultiheadAttention(8, 2).in_proj_weight.array
    assert np.all(np.abs(w) <= bound) and np.abs(w).max() > bound / 2
