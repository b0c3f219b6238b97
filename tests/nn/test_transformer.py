"""Positional encodings, the encoder block, and gradient clipping."""

import math

import numpy as np
import pytest

import tinyattn as ta
from tests.helpers import check, leaf
from tinyattn import nn


def test_sinusoidal_values_from_the_formula():
    pe = nn.PositionalEncoding(6, max_len=10, dtype=ta.float64)
    for pos in (0, 3, 9):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert math.isclose(pe.pe[pos, 2 * i], math.sin(angle), abs_tol=1e-12)
            assert math.isclose(pe.pe[pos, 2 * i + 1], math.cos(angle), abs_tol=1e-12)
    x = ta.zeros(2, 4, 6, dtype=ta.float64)
    np.testing.assert_allclose(pe(x).array, np.broadcast_to(pe.pe[:4], (2, 4, 6)))
    seq_first = nn.PositionalEncoding(6, max_len=10, batch_first=False, dtype=ta.float64)
    np.testing.assert_allclose(seq_first(ta.zeros(4, 2, 6, dtype=ta.float64)).array[:, 1], pe.pe[:4])
    assert not list(pe.parameters())


def test_positional_encoding_errors():
    for odd in (3, 5, 9):
        with pytest.raises(ValueError, match=f"d_model must be even, got {odd}"):
            nn.PositionalEncoding(odd)
    with pytest.raises(ValueError, match=r"\(1, 11, 6\)"):
        nn.PositionalEncoding(6, max_len=10)(ta.zeros(1, 11, 6))
    with pytest.raises(ValueError, match=r"\(1, 3, 5\) needs last dim 6"):
        nn.PositionalEncoding(6, max_len=10)(ta.zeros(1, 3, 5))  # short enough, but the wrong width
    with pytest.raises(ValueError, match="length 6 exceeds max_len 5"):
        nn.LearnedPositionalEncoding(5, 4)(ta.zeros(1, 6, 4))


def test_positional_encodings_take_max_len_tokens_and_keep_the_dtype():
    pe = nn.PositionalEncoding(4)
    assert pe.pe.dtype == np.float32 and pe.pe.shape == (5000, 4)  # torch's tutorial default max_len
    assert pe(ta.zeros(1, 5000, 4)).dtype == np.float32  # exactly max_len is allowed
    with pytest.raises(ValueError, match="length <= 5000"):
        pe(ta.zeros(1, 5001, 4))
    assert nn.PositionalEncoding(4, dtype=ta.float64)(ta.zeros(2, 3, 4, dtype=ta.float64)).dtype == np.float64
    assert nn.LearnedPositionalEncoding(5, 4)(ta.zeros(1, 5, 4)).shape == (1, 5, 4)


def test_learned_positional_encoding(rng):
    lpe = nn.LearnedPositionalEncoding(8, 4, dtype=ta.float64)
    x = leaf(rng, 2, 5, 4)
    np.testing.assert_allclose(lpe(x).array, x.array + lpe.embedding.weight.array[:5])
    check(lambda x, w: lpe(x), x, lpe.embedding.weight)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck(rng, norm_first):
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, norm_first=norm_first,
                                       batch_first=True, dtype=ta.float64)
    x = leaf(rng, 2, 3, 4)
    out = layer(x)
    assert out.shape == (2, 3, 4) and layer.last_attn_weights.shape == (2, 2, 3, 3)
    check(lambda x, *params: layer(x), x, *layer.parameters())


def test_clip_grad_norm():
    a, b = nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(1))
    a.grad, b.grad = ta.tensor(np.array([3.0, 0.0]), dtype=a.dtype), ta.tensor(np.array([4.0]), dtype=b.dtype)
    total = nn.clip_grad_norm_([a, b], max_norm=1.0)
    assert math.isclose(total, 5.0)
    np.testing.assert_allclose(np.concatenate([a.grad, b.grad]), np.array([3.0, 0.0, 4.0]) / (5.0 + 1e-6))
    a.grad = ta.tensor(np.array([0.3, 0.0]), dtype=a.dtype)
    assert math.isclose(nn.clip_grad_norm_([a], max_norm=1.0), 0.3)
    np.testing.assert_allclose(a.grad, [0.3, 0.0])  # under the limit: untouched
    a.grad = ta.tensor(np.array([-7.0, 2.0]), dtype=a.dtype)
    assert nn.clip_grad_norm_([a], max_norm=1.0, norm_type=math.inf) == 7.0


def test_encoder_layer_takes_torchs_arguments_in_torchs_order():
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8, 0.0, "gelu", 1e-6, dtype=ta.float64)  # 5th: activation
    assert layer.activation is nn.functional.gelu and layer.norm1.eps == 1e-6
    assert not layer.batch_first and not layer.self_attn.batch_first  # torch's default: (n, B, d_model)
    x = ta.randn(5, 2, 4, dtype=ta.float64)
    assert layer(x).shape == (5, 2, 4)
    with pytest.raises(ValueError, match="activation must be 'relu', 'gelu' or a callable, got 'tanh'"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")
    assert nn.TransformerEncoderLayer(4, 2, 8, device="cpu").last_attn_weights is None  # none before a call
    with pytest.raises(RuntimeError, match="device 'cuda' is not available: tinyattn runs on the CPU only"):
        nn.TransformerEncoderLayer(4, 2, device="cuda")
