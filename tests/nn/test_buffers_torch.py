"""Buffers, children, apply and ModuleDict against torch's: names, order, state_dict keys, what .to() casts."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def build(lib):
    nn = lib.nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.key = nn.Linear(4, 4, bias=False)
            self.register_buffer("tril", lib.tril(lib.ones(3, 3)))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.blocks = nn.ModuleDict(dict(ln=nn.LayerNorm(4), proj=nn.Linear(4, 2)))
            self.blocks["extra"] = nn.Linear(2, 2)

        def forward(self, x):
            w = x @ self.key.weight.T
            return self.blocks["proj"](self.blocks["ln"](w)).masked_fill(self.tril[:2, :2] == 0, 0.0)

    return Head()


def test_state_dict_keys_buffers_and_children_are_torchs():
    ours, theirs = build(ta), build(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())  # persistent buffers in, module by module
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))  # a buffer is never a parameter
    assert list(ours.blocks) == list(theirs.blocks) and "ln" in ours.blocks and len(ours.blocks) == 3
    assert [k for k, _ in ours.blocks.items()] == list(theirs.blocks.keys())


def test_apply_visits_children_first_then_the_module_as_torch():
    ours, theirs = build(ta), build(torch)
    seen_ours, seen_theirs = [], []
    assert ours.apply(lambda m: seen_ours.append(type(m).__name__)) is ours
    theirs.apply(lambda m: seen_theirs.append(type(m).__name__))
    assert seen_ours == seen_theirs


def test_state_dicts_load_both_ways_and_forward_agrees():
    ours, theirs = build(ta), build(torch)
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(ta.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        theirs.tril.zero_()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    assert theirs.tril.sum().item() == 6.0  # the buffer came back


def test_to_casts_float_buffers_and_an_assigned_buffer_stays_a_buffer():
    for lib in (ta, torch):
        m = build(lib)
        m.to(lib.float64)
        assert m.tril.dtype == lib.float64 and m.scratch.dtype == lib.float64
        m.tril = lib.ones(3, 3)
        assert [n for n, _ in m.named_buffers()][:1] == ["tril"]
        with pytest.raises((TypeError, KeyError)):
            m.register_buffer("key", lib.ones(1))  # a sub-module's name
        with pytest.raises(TypeError):
            m.tril = np.ones(2)
