"""State dicts both ways, for real: torch loads ours with one line, and we load torch's tensors as they are."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

PAIRS = {
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, dtype=ta.float64),
                           lambda: torch.nn.MultiheadAttention(8, 2, dtype=torch.float64)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                   dtype=ta.float64),
                                lambda: torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                                         dtype=torch.float64)),
    "Linear": (lambda: nn.Linear(5, 3, dtype=ta.float64), lambda: torch.nn.Linear(5, 3, dtype=torch.float64)),
    "LayerNorm": (lambda: nn.LayerNorm(6, dtype=ta.float64), lambda: torch.nn.LayerNorm(6, dtype=torch.float64)),
    "Embedding": (lambda: nn.Embedding(7, 4, dtype=ta.float64),
                  lambda: torch.nn.Embedding(7, 4, dtype=torch.float64)),
}


def randomize(module, seed):
    rng = np.random.default_rng(seed)
    for p in module.parameters():
        p.array[...] = rng.standard_normal(p.shape)


def run(module, lib, x):
    module.eval()
    if isinstance(module, (nn.MultiheadAttention, torch.nn.MultiheadAttention)):
        return module(x, x, x)[0]
    return module(x)


def example(name, lib):
    rng = np.random.default_rng(1)
    if name == "Embedding":
        return lib.tensor(rng.integers(0, 7, (2, 3)))
    shape = {"Linear": (2, 5), "LayerNorm": (2, 6)}.get(name, (3, 2, 8))
    return lib.tensor(rng.standard_normal(shape))


@pytest.mark.parametrize("name", list(PAIRS))
def test_torch_loads_ours_with_one_line(name):
    make_ours, make_theirs = PAIRS[name]
    ours, theirs = make_ours(), make_theirs()
    randomize(ours, 0)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})  # the one line
    with torch.no_grad():
        expected = run(theirs, torch, example(name, torch)).numpy()
    np.testing.assert_allclose(run(ours, ta, example(name, ta)).array, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(PAIRS))
def test_we_load_torch_tensors_as_they_are(name):
    make_ours, make_theirs = PAIRS[name]
    ours, theirs = make_ours(), make_theirs()
    ours.load_state_dict(theirs.state_dict())  # torch tensors, no conversion
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[key], value.numpy())
    with torch.no_grad():
        expected = run(theirs, torch, example(name, torch)).numpy()
    np.testing.assert_allclose(run(ours, ta, example(name, ta)).array, expected, rtol=1e-10, atol=1e-12)
