"""A few optimizer steps against torch.optim, with the same parameters and gradients."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kwargs):
    rng = np.random.default_rng(0)
    init = rng.standard_normal((3, 4))
    ours = nn.Parameter(init.copy())
    theirs = torch.nn.Parameter(torch.tensor(init.copy()))
    opt_ours = getattr(optim, name)([ours], **kwargs)
    opt_theirs = getattr(torch.optim, name)([theirs], **kwargs)
    for _ in range(5):
        g = rng.standard_normal((3, 4))
        ours.grad = ta.tensor(g.copy())
        theirs.grad = torch.tensor(g.copy())
        opt_ours.step()
        opt_theirs.step()
        np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
