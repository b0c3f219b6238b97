"""Files saved by an earlier tinyattn (commit 5988731, before the core ran alone) load and run today.

``tests/saved/`` holds a ``tinyattn.save`` checkpoint (a MultiheadAttention's state dict after one Adam step,
the optimizer's, an input and the output) and a plain pickle of the module itself, both written by that commit.
"""

import pathlib
import pickle

import numpy as np

import tinyattn as ta
from tinyattn import nn, optim

SAVED = pathlib.Path(__file__).parent / "saved"


def test_a_checkpoint_saved_before_loads_into_todays_modules_and_gives_the_same_output():
    checkpoint = ta.load(SAVED / "mha_checkpoint_5988731.pt")
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    mha.load_state_dict(checkpoint["model"])
    adam = optim.Adam(mha.parameters(), lr=1e-2)
    adam.load_state_dict(checkpoint["optimizer"])
    assert adam.state_dict()["state"][0]["step"] == 1
    x = checkpoint["x"]
    out, _ = mha(x, x, x)
    np.testing.assert_array_equal(out.detach().numpy(), checkpoint["out"].numpy())
    out.sum().backward()  # (and it trains on)
    adam.step()


def test_a_module_pickled_before_unpickles_as_todays_classes_and_runs():
    with open(SAVED / "mha_pickle_5988731.pkl", "rb") as f:
        saved = pickle.load(f)
    module, x = saved["module"], saved["x"]
    assert type(module) is nn.MultiheadAttention and type(x) is ta.Tensor
    assert type(module.in_proj_weight) is nn.Parameter
    out, _ = module(x, x, x)
    np.testing.assert_array_equal(out.detach().numpy(), saved["out"].numpy())
    out.sum().backward()
    assert module.in_proj_weight.grad.shape == (24, 8)
