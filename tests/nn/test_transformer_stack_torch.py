"""The decoder layer, the stacks and ``nn.Transformer`` against torch's: torch's state dicts load
unchanged, and outputs and every gradient agree over random options and masks."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::UserWarning")]

D, H, FF = 8, 2, 12


def random_options(rng):
    return dict(norm_first=bool(rng.integers(2)), bias=bool(rng.integers(2)), batch_first=bool(rng.integers(2)),
                activation=["relu", "gelu"][int(rng.integers(2))], layer_norm_eps=float(rng.choice([1e-5, 0.3])))


def seq(rng, options, n, batch=2):
    return rng.standard_normal((batch, n, D) if options["batch_first"] else (n, batch, D))


def random_masks(rng, T, S, batch=2):
    masks = {}
    if rng.integers(2):
        masks["tgt_mask"] = np.asarray(torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64))
    if rng.integers(2):
        padding = np.zeros((batch, S), dtype=bool)
        padding[1, -1] = True
        masks["memory_key_padding_mask"] = padding
    if rng.integers(2):
        padding = np.zeros((batch, T), dtype=bool)
        padding[0, -1] = True
        masks["tgt_key_padding_mask"] = padding
    return masks


def load_theirs_into_ours(theirs, ours, rng):
    with torch.no_grad():
        for p in theirs.parameters():  # away from init values (zero biases, unit norms)
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.4))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())  # torch's state dict, unchanged


def compare(ours, theirs, inputs, masks, rng):
    upstream = None
    results = []
    for lib, model in ((ta, ours), (torch, theirs)):
        tensors = [lib.tensor(a, requires_grad=True) for a in inputs]
        out = model(*tensors, **{k: lib.tensor(v) for k, v in masks.items()})
        if upstream is None:
            upstream = rng.standard_normal(tuple(out.shape))
        (out * lib.tensor(upstream)).sum().backward()
        grads = {f"input {i}": np.asarray(t.grad) for i, t in enumerate(tensors)}
        grads |= {k: np.asarray(p.grad) for k, p in model.named_parameters()}
        results.append((np.asarray(out.detach()), grads))
    (a, ga), (b, gb) = results
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    assert ga.keys() == gb.keys()
    for name in ga:
        np.testing.assert_allclose(ga[name], gb[name], rtol=1e-8, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("seed", range(12))
def test_decoder_layer_matches_torch(seed):
    rng = np.random.default_rng(seed)
    options = random_options(rng)
    T, S = int(rng.integers(2, 5)), int(rng.integers(2, 6))
    ours = nn.TransformerDecoderLayer(D, H, FF, 0.0, dtype=ta.float64, **options)
    theirs = torch.nn.TransformerDecoderLayer(D, H, FF, 0.0, dtype=torch.float64, **options)
    load_theirs_into_ours(theirs, ours, rng)
    compare(ours, theirs, [seq(rng, options, T), seq(rng, options, S)], random_masks(rng, T, S), rng)


@pytest.mark.parametrize("seed", range(8))
def test_encoder_and_decoder_stacks_match_torch(seed):
    rng = np.random.default_rng(100 + seed)
    options = random_options(rng)
    layers = int(rng.integers(1, 4))
    norm = bool(rng.integers(2))
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, 0.0, dtype=ta.float64, **options), layers,
                                 nn.LayerNorm(D, dtype=ta.float64) if norm else None)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, H, FF, 0.0, dtype=torch.float64,
                                                                          **options), layers,
                                         torch.nn.LayerNorm(D, dtype=torch.float64) if norm else None,
                                         enable_nested_tensor=False)
    load_theirs_into_ours(theirs, ours, rng)
    n = int(rng.integers(2, 5))
    masks = {"mask": np.asarray(torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64))} \
        if seed % 2 else {}
    compare(ours, theirs, [seq(rng, options, n)], masks, rng)

    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, 0.0, dtype=ta.float64, **options), layers,
                                 nn.LayerNorm(D, dtype=ta.float64) if norm else None)
    theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, H, FF, 0.0, dtype=torch.float64,
                                                                          **options), layers,
                                         torch.nn.LayerNorm(D, dtype=torch.float64) if norm else None)
    load_theirs_into_ours(theirs, ours, rng)
    T, S = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    compare(ours, theirs, [seq(rng, options, T), seq(rng, options, S)], random_masks(rng, T, S), rng)


@pytest.mark.parametrize("seed", range(6))
def test_transformer_matches_torch(seed):
    rng = np.random.default_rng(200 + seed)
    options = random_options(rng)
    sizes = dict(num_encoder_layers=int(rng.integers(1, 3)), num_decoder_layers=int(rng.integers(1, 3)))
    ours = nn.Transformer(D, H, dim_feedforward=FF, dropout=0.0, dtype=ta.float64, **sizes, **options)
    theirs = torch.nn.Transformer(D, H, dim_feedforward=FF, dropout=0.0, dtype=torch.float64, **sizes, **options)
    load_theirs_into_ours(theirs, ours, rng)
    S, T = int(rng.integers(2, 6)), int(rng.integers(2, 5))
    masks = random_masks(rng, T, S)
    masks.pop("memory_key_padding_mask", None)
    if seed % 2:
        padding = np.zeros((2, S), dtype=bool)
        padding[1, -1] = True
        masks["src_key_padding_mask"] = masks["memory_key_padding_mask"] = padding
    compare(ours, theirs, [seq(rng, options, S), seq(rng, options, T)], masks, rng)


def test_transformer_init_is_xavier_and_the_layers_are_independent_copies():
    model = nn.Transformer(16, 2, 1, 2, dim_feedforward=32, dtype=ta.float64)
    w = model.encoder.layers[0].linear1.weight
    bound = np.sqrt(6 / (16 + 32))
    assert np.all(np.abs(w.array) <= bound) and w.array.std() > bound / 3
    a, b = model.decoder.layers
    assert a.linear1.weight is not b.linear1.weight
    a.linear1.weight.array[...] = 0.0
    assert np.any(b.linear1.weight.array != 0)
    assert len(list(model.parameters())) == len(list(torch.nn.Transformer(16, 2, 1, 2, 32).parameters()))


def test_generate_square_subsequent_mask_is_torchs():
    ours = nn.Transformer.generate_square_subsequent_mask(5)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(5)
    assert ours.dtype == np.float32 and ours.shape == (5, 5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=ta.float64).dtype == np.float64


def test_refusals():
    model = nn.Transformer(8, 2, 1, 1, dim_feedforward=8, batch_first=True)
    with pytest.raises(RuntimeError, match=r"the batch number of src and tgt must be equal, got shapes \(2, 3, 8\)"):
        model(ta.zeros(2, 3, 8), ta.zeros(3, 3, 8))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal to d_model"):
        model(ta.zeros(2, 3, 8), ta.zeros(2, 3, 4))
    with pytest.raises(RuntimeError, match="is_causal hint requires the mask"):
        model.decoder(ta.zeros(2, 3, 8), ta.zeros(2, 3, 8), tgt_is_causal=True)
    with pytest.raises(ValueError, match="activation must be 'relu', 'gelu' or a callable, got 'tanh'"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
