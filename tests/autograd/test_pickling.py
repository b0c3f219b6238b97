"""Copies and pickles of tensors, models and optimizers (``autograd/pickling.py``).

A trained model and its optimizer, deep-copied or pickled together, must go on training exactly
as the original does, and the copy's backward must never reach the original's ``.grad`` (the
graph state stays behind). Where torch defines the behaviour (a non-leaf refuses deepcopy; a
Parameter's copy leaves ``.grad`` behind; a pickled tensor is a leaf), the torch tests compare.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn


def _trained(seed=0):
    """A small classifier after three Adam steps, its optimizer, and a fixed batch."""
    ta.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = ta.optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(seed)
    x, y = ta.tensor(rng.standard_normal((16, 4)), dtype=ta.float32), ta.tensor(rng.integers(0, 3, 16))
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model, opt, x, y


def _steps(model, opt, x, y, n):
    for _ in range(n):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


ROUND_TRIPS = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda obj: pickle.loads(pickle.dumps(obj)),
    "pickle protocol 2": lambda obj: pickle.loads(pickle.dumps(obj, protocol=2)),
}


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_a_trained_model_and_its_optimizer_copied_together_train_on_exactly_as_the_original(how):
    model, opt, x, y = _trained()
    model2, opt2 = ROUND_TRIPS[how]((model, opt))
    assert opt2.param_groups[0]["params"][0] is model2[0].weight  # (the copy steps the copy's weights)
    assert opt2.state[model2[0].weight]["step"] == opt.state[model[0].weight]["step"] == 3
    after = _steps(model, opt, x, y, 5)
    after2 = _steps(model2, opt2, x, y, 5)
    for a, b in zip(after, after2):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_the_copy_s_backward_never_reaches_the_original_s_grad(how):
    """(A leaf's node holds a reference to its tensor: copied along, the copy's gradient went to the original.)"""
    model, opt, x, y = _trained()
    copied = ROUND_TRIPS[how](model)
    model.zero_grad()
    nn.functional.cross_entropy(copied(x), y).backward()
    assert all(p.grad is None for p in model.parameters())
    assert all(p.grad is not None for p in copied.parameters())


def test_the_original_s_backward_never_reaches_the_copy_either():
    model, _, x, y = _trained()
    copied = copy.deepcopy(model)
    nn.functional.cross_entropy(model(x), y).backward()
    assert all(p.grad is None for p in copied.parameters())


def test_a_copy_owns_its_values():
    t = ta.randn(3, requires_grad=True)
    for how, trip in ROUND_TRIPS.items():
        c = trip(t)
        with ta.no_grad():
            c.add_(1.0)
        assert not np.array_equal(c.detach().numpy(), t.detach().numpy()), how
        assert c.requires_grad and c.is_leaf and type(c) is ta.Tensor


def test_python_attributes_and_the_parameter_type_survive():
    p = nn.Parameter(ta.randn(2, 2))
    p.note = {"lr_scale": 0.5}
    for how, trip in ROUND_TRIPS.items():
        c = trip(p)
        assert type(c) is nn.Parameter and c.note == {"lr_scale": 0.5} and c.requires_grad, how


def test_an_integer_tensor_and_a_zero_d_tensor_round_trip():
    for t in (ta.tensor([1, 2, 3]), ta.tensor(2.5), ta.zeros(0, 3)):
        for how, trip in ROUND_TRIPS.items():
            c = trip(t)
            assert c.dtype == t.dtype and c.shape == t.shape and np.array_equal(c.numpy(), t.numpy()), how


# -- against torch ----------------------------------------------------------------------------------------


@pytest.mark.torch
def test_graph_state_after_copies_and_pickles_matches_torch():
    torch = pytest.importorskip("torch")
    results = {}
    for lib in (ta, torch):
        leaf = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (leaf * 2).sum().backward()
        param = (nn if lib is ta else torch.nn).Parameter(lib.ones(2))
        (param * 3).sum().backward()
        made = leaf * 4  # a non-leaf
        facts = {}
        try:
            copy.deepcopy(made)
            facts["deepcopy of a non-leaf"] = "ok"
        except RuntimeError as err:
            facts["deepcopy of a non-leaf"] = str(err).split(".")[0]
        loaded = pickle.loads(pickle.dumps(made))
        facts["pickled non-leaf"] = (loaded.requires_grad, loaded.grad_fn is None, loaded.grad is None)
        facts["deepcopied leaf keeps grad"] = copy.deepcopy(leaf).grad.tolist()
        facts["pickled leaf keeps grad"] = pickle.loads(pickle.dumps(leaf)).grad
        facts["deepcopied Parameter keeps grad"] = copy.deepcopy(param).grad
        facts["pickled Parameter keeps grad"] = pickle.loads(pickle.dumps(param)).grad
        results[lib.__name__] = facts
    assert results["tinyattn"] == results["torch"]
