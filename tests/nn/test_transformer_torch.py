"""TransformerEncoderLayer against torch's, over random options: the output and every gradient."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

D, H, FF = 8, 2, 6


def random_case(seed):
    """Seeded options, input and masks; no query is left without a key to attend to."""
    rng = np.random.default_rng(seed)
    options = dict(
        norm_first=bool(rng.integers(2)), bias=bool(rng.integers(2)), batch_first=bool(rng.integers(2)),
        activation=["relu", "gelu"][rng.integers(2)], layer_norm_eps=float(rng.choice([1e-5, 0.5])),
    )
    n, batch = int(rng.integers(2, 5)), 2
    x = rng.standard_normal((batch, n, D) if options["batch_first"] else (n, batch, D))
    masks = {}
    if rng.integers(2):  # causal, as bool or as the additive float mask
        causal = np.triu(np.ones((n, n), dtype=bool), k=1)
        masks["src_mask"] = causal if rng.integers(2) else np.where(causal, -np.inf, 0.0)
    if rng.integers(2):
        padding = np.zeros((batch, n), dtype=bool)
        padding[1, -1] = True
        masks["src_key_padding_mask"] = padding
    return rng, options, x, masks


@pytest.mark.filterwarnings("ignore:Support for mismatched")  # torch's, for a bool padding mask with a float src_mask
@pytest.mark.parametrize("seed", range(16))
def test_encoder_layer_matches_torch(seed):
    rng, options, x, masks = random_case(seed)
    ta.manual_seed(seed)
    ours = nn.TransformerEncoderLayer(D, H, FF, 0.0, dtype=ta.float64, **options)
    for p in ours.parameters():  # away from the init values (zero biases, unit norms)
        p.array[...] = rng.standard_normal(p.shape) * 0.5
    theirs = torch.nn.TransformerEncoderLayer(D, H, FF, 0.0, dtype=torch.float64, **options)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    upstream = rng.standard_normal(x.shape)
    results = []
    for lib, layer in ((ta, ours), (torch, theirs)):
        inp = lib.tensor(x, requires_grad=True)
        out = layer(inp, **{k: lib.tensor(v) for k, v in masks.items()})
        (out * lib.tensor(upstream)).sum().backward()
        grads = {"input": np.asarray(inp.grad)} | {k: np.asarray(p.grad) for k, p in layer.named_parameters()}
        results.append((np.asarray(out.detach()), grads))
    (out1, grads1), (out2, grads2) = results
    np.testing.assert_allclose(out1, out2, rtol=1e-9, atol=1e-11, err_msg=f"output, {options}, {list(masks)}")
    assert grads1.keys() == grads2.keys()
    for name in grads1:
        np.testing.assert_allclose(grads1[name], grads2[name], rtol=1e-8, atol=1e-10, err_msg=f"grad of {name}")


def test_encoder_layer_dropout_rate_is_torchs():
    """``dropout`` reaches all four dropouts, the attention's included: at p=1 every path but the residual is cut."""
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, 1.0, norm_first=True, dtype=ta.float64)
    x = ta.randn(3, 2, D, dtype=ta.float64)
    np.testing.assert_array_equal(layer(x).array, x.array)  # pre-norm: x + 0 + 0
    assert [m.p for m in (layer.dropout, layer.dropout1, layer.dropout2)] == [1.0] * 3
    assert layer.self_attn.dropout == 1.0
