"""Optimizer trajectories against torch.optim: 20 steps, random options, groups, 0-d and tied parameters."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def random_options(rng, name):
    if name == "SGD":
        momentum = float(rng.choice([0.0, 0.5, 0.9]))
        nesterov = bool(momentum and rng.integers(2))
        return dict(lr=float(rng.uniform(0.01, 0.2)), momentum=momentum,
                    dampening=0.0 if nesterov else float(rng.choice([0.0, 0.3])),
                    weight_decay=float(rng.choice([0.0, 0.05])), nesterov=nesterov, maximize=bool(rng.integers(2)))
    betas = (float(rng.uniform(0.5, 0.95)), float(rng.uniform(0.9, 0.999)))
    return dict(lr=float(rng.uniform(0.005, 0.05)), betas=betas,
                eps=float(rng.choice([1e-8, 1e-3])), weight_decay=float(rng.choice([0.0, 0.1])),
                amsgrad=bool(rng.integers(2)), maximize=bool(rng.integers(2)))


@pytest.mark.parametrize("seed", range(24))
def test_trajectory_matches_torch(seed):
    rng = np.random.default_rng(seed)
    name = ["SGD", "Adam", "AdamW"][seed % 3]
    shapes = [(3, 2), (), (4,)]  # a 0-d parameter among them
    inits = [rng.standard_normal(s) for s in shapes]
    ours = [nn.Parameter(np.array(a)) for a in inits]
    theirs = [torch.nn.Parameter(torch.tensor(np.array(a))) for a in inits]
    options = random_options(rng, name)
    group_lr = float(options["lr"]) * 0.5
    ours_opt = getattr(optim, name)([{"params": ours[:2]}, {"params": ours[2:], "lr": group_lr}], **options)
    theirs_opt = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:], "lr": group_lr}],
                                            **options)
    for step in range(20):
        for a, b in zip(ours, theirs):
            if step == 3 and a.ndim == 1:  # a parameter without a gradient for one step is left alone
                a.grad, b.grad = None, None
                continue
            g = rng.standard_normal(a.shape)
            a.grad, b.grad = ta.tensor(np.array(g)), torch.tensor(np.array(g))
        ours_opt.step()
        theirs_opt.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=f"step {step}")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_tied_weights_are_stepped_once(name):
    rng = np.random.default_rng(7)
    ta.manual_seed(0)
    ours = nn.Sequential(nn.Linear(4, 4, dtype=ta.float64), nn.Linear(4, 4, dtype=ta.float64))
    ours[1].weight = ours[0].weight  # tied
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 4).double(), torch.nn.Linear(4, 4).double())
    theirs[1].weight = theirs[0].weight
    with torch.no_grad():
        for (_, p), q in zip(ours.named_parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.array))
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 3
    assert list(ours.state_dict()) == list(theirs.state_dict())  # both names kept
    kwargs = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.01)
    ours_opt = getattr(optim, name)(ours.parameters(), **kwargs)
    theirs_opt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    for _ in range(20):
        x = rng.standard_normal((5, 4))
        ours_opt.zero_grad()
        theirs_opt.zero_grad()
        (ours(ta.tensor(x)) ** 2).sum().backward()
        (theirs(torch.tensor(x)) ** 2).sum().backward()
        ours_opt.step()
        theirs_opt.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=1e-9, atol=1e-12)
    norm_ours = nn.utils.clip_grad_norm_(ours.parameters(), 1e9)
    norm_theirs = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1e9)
    assert np.isclose(float(norm_ours), float(norm_theirs))
