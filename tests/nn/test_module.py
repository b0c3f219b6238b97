"""Module machinery: registration, names, modes, dtype, state_dict round trips and errors."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.scale = nn.Parameter(np.ones(1, dtype=np.float32))
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.norm(self.proj(x))) * self.scale


def test_registration_and_names():
    b = Block()
    names = [n for n, _ in b.named_parameters()]
    assert names == ["scale", "proj.weight", "proj.bias", "norm.weight", "norm.bias"]
    assert [type(c).__name__ for c in b.children()] == ["Linear", "LayerNorm", "Dropout"]
    assert len(list(b.modules())) == 4
    assert all(p.requires_grad for p in b.parameters())


def test_train_eval_and_zero_grad():
    b = Block()
    b.eval()
    assert not b.training and not b.drop.training
    x = ta.randn(2, 4)
    np.testing.assert_array_equal(b(x).array, b(x).array)  # dropout off
    b(x).sum().backward()
    assert b.proj.weight.grad is not None
    b.zero_grad()
    assert all(p.grad is None for p in b.parameters())
    b.train()
    assert b.drop.training


def test_dtype_kwarg_and_to():
    lin = nn.Linear(3, 2, dtype=ta.float64)
    assert lin.weight.dtype == np.float64 and lin.bias.dtype == np.float64
    lin.float()
    assert lin.weight.dtype == np.float32
    lin.double()
    assert lin.weight.dtype == np.float64


def test_state_dict_shares_memory_and_round_trips():
    a, b = Block(), Block()
    sd = a.state_dict()
    sd["proj.weight"][...] = 0  # detached but the same memory, as torch's
    assert np.all(a.proj.weight.array == 0) and a.proj.weight.requires_grad
    b.load_state_dict(a.state_dict())
    for (n1, p1), (_, p2) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p1.array, p2.array, err_msg=n1)
    a.proj.weight.array[...] = 1  # b copied the values, not the memory
    assert np.all(b.proj.weight.array == 0)


def test_load_state_dict_accepts_tensors_and_keeps_dtype():
    lin = nn.Linear(3, 2)
    sd = {"weight": ta.tensor(np.ones((2, 3))), "bias": np.zeros(2)}  # float64 in, float32 module
    lin.load_state_dict(sd)
    assert lin.weight.dtype == np.float32
    np.testing.assert_array_equal(lin.weight.array, np.ones((2, 3)))


def test_load_state_dict_names_every_problem():
    lin = nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as err:
        lin.load_state_dict({"weight": np.ones((2, 4)), "extra": np.ones(1)})
    msg = str(err.value)
    assert "missing keys: bias" in msg and "unexpected keys: extra" in msg
    assert "weight: expected shape (2, 3), got (2, 4)" in msg
    lin.load_state_dict({"weight": np.ones((2, 3))}, strict=False)


def test_repr_like_torch():
    s = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert s == "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)"


def test_module_list_and_sequential():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU)
    assert seq(ta.randn(5, 2)).shape == (5, 1)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_assigning_non_parameter_to_parameter_slot():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter"):
        lin.weight = np.ones((2, 2))
