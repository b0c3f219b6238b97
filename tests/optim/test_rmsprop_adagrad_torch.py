"""RMSprop and Adagrad follow torch's update for every option: the same weights after the same steps."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _run(lib, make, steps=6):
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = lib.tensor(rng.standard_normal(4), requires_grad=True)
    opt = make(lib.optim, [w, b])
    for step in range(steps):
        x = lib.tensor(np.random.default_rng(step + 1).standard_normal((5, 3)))
        opt.zero_grad()
        ((x @ w + b).tanh() ** 2).sum().backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()], opt


OPTIONS = [
    lambda o, p: o.RMSprop(p), lambda o, p: o.RMSprop(p, lr=0.05, alpha=0.9, eps=1e-6),
    lambda o, p: o.RMSprop(p, momentum=0.8), lambda o, p: o.RMSprop(p, centered=True, weight_decay=0.1),
    lambda o, p: o.RMSprop(p, centered=True, momentum=0.5, maximize=True),
    lambda o, p: o.Adagrad(p), lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.05),
    lambda o, p: o.Adagrad(p, weight_decay=0.2, initial_accumulator_value=0.3, eps=1e-6),
    lambda o, p: o.Adagrad(p, maximize=True),
]


@pytest.mark.parametrize("make", OPTIONS)
def test_the_weights_after_six_steps_are_torchs(make):
    (ours, _), (theirs, _) = _run(ta, make), _run(torch, make)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [OPTIONS[3], OPTIONS[7]])
def test_the_state_dict_has_torchs_buffers_and_resumes(make):
    _, ours = _run(ta, make, steps=3)
    _, theirs = _run(torch, make, steps=3)
    mine, other = ours.state_dict()["state"][0], theirs.state_dict()["state"][0]
    assert sorted(mine) == sorted(other)
    for key in mine:
        np.testing.assert_allclose(np.asarray(mine[key].numpy(), float), np.asarray(other[key], float), rtol=1e-10)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="invalid alpha value"):
        ta.optim.RMSprop([ta.ones(1, requires_grad=True)], alpha=-1)
    with pytest.raises(ValueError, match="invalid lr_decay value"):
        ta.optim.Adagrad([ta.ones(1, requires_grad=True)], lr_decay=-1)
