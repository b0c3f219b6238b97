"""Calls that lean on defaults behave as torch's with the same defaults: optimizer steps, dropout rates,
LayerNorm's eps, the encoder layer's width; and messages of MultiheadAttention and SDPA name their source."""

import re

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_an_optimizer_step_with_every_default_matches_torch(name):
    data, grad = np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, -1.0])
    ours, theirs = nn.Parameter(data.copy()), torch.nn.Parameter(torch.tensor(data))
    ours.grad, theirs.grad = ta.tensor(grad.copy()), torch.tensor(grad)
    getattr(optim, name)([ours]).step()
    getattr(torch.optim, name)([theirs]).step()
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-12)


def test_dropout_defaults_drop_half_and_layer_norm_uses_torchs_eps(rng):
    ta.manual_seed(0)
    kept = [float((F.dropout(ta.ones(4000)).array > 0).mean()), float((nn.Dropout()(ta.ones(4000)).array > 0).mean())]
    assert all(0.45 < k < 0.55 for k in kept)  # p = 0.5 by default
    data = rng.standard_normal((3, 4)) * 1e-3  # tiny variance: eps shows
    np.testing.assert_allclose(F.layer_norm(ta.tensor(data), (4,)).array,
                               torch.nn.functional.layer_norm(torch.tensor(data), (4,)).numpy(), rtol=1e-10)
    assert nn.TransformerEncoderLayer(4, 2).linear1.weight.shape == tuple(
        torch.nn.TransformerEncoderLayer(4, 2).linear1.weight.shape)  # dim_feedforward 2048


def test_mha_attributes_and_checks_like_torch():
    mha, theirs = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True), torch.nn.MultiheadAttention(
        8, 2, kdim=3, vdim=5, add_bias_kv=True)
    assert mha.head_dim == theirs.head_dim == 4 and isinstance(mha.head_dim, int)
    names = [p.name for p in (mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight, mha.bias_k, mha.bias_v)]
    assert names == ["W^Q", "W^K", "W^V", "bias_k", "bias_v"]  # as the explainer labels them
    with pytest.raises(ValueError, match="dropout"):
        nn.MultiheadAttention(8, 2, dropout=1.5)
    with pytest.raises(TypeError, match="^MultiheadAttention: key_padding_mask: only bool and floating-point"):
        nn.MultiheadAttention(4, 2)(ta.ones(3, 1, 4), ta.ones(3, 1, 4), ta.ones(3, 1, 4),
                                    key_padding_mask=np.zeros((1, 3), dtype=np.int64))


def test_unbatched_mha_with_a_mask_per_head_matches_torch(rng):
    ta.manual_seed(0)
    ours = nn.MultiheadAttention(4, 2, dtype=ta.float64)
    theirs = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x, mask = rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 3))  # (L, E) and (h, L, S)
    out, w = ours(*(ta.tensor(x),) * 3, attn_mask=mask, average_attn_weights=False)
    t_out, t_w = theirs(*(torch.tensor(x),) * 3, attn_mask=torch.tensor(mask), average_attn_weights=False)
    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.array, t_w.detach().numpy(), rtol=1e-10)


def test_a_float64_padding_mask_keeps_a_float32_model_float32():
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    x = ta.randn(2, 3, 4)
    padding = np.zeros((2, 3))
    padding[0, -1] = -np.inf
    out, w = mha(x, x, x, key_padding_mask=padding)
    assert out.dtype == w.dtype == np.float32


def test_sdpa_messages_name_it_and_hint_only_without_enable_gqa():
    q, k = ta.ones(2, 4, 3, 5), ta.ones(3, 2, 3, 5)
    message = "scaled_dot_product_attention: query (2, 4, 3, 5) and key (3, 2, 3, 5) differ in their batch dims"
    with pytest.raises(ValueError, match="^" + re.escape(message) + r" \(pass enable_gqa=True"):
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    with pytest.raises(TypeError, match="^scaled_dot_product_attention: attn_mask: only bool and floating"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros((3, 3), dtype=np.int64))


def test_to_returns_the_tensor_itself_when_nothing_changes():
    t = ta.ones(2)
    assert t.to(np.float32) is t and t.float() is t and t.to(None) is t
    assert t.double() is not t and t.double().dtype == np.float64
