"""Shared test helpers: float64 leaves from a local RNG, and a gradcheck shortcut."""

from __future__ import annotations

import numpy as np

import tinyattn as ta
from tinyattn.autograd import gradcheck


def leaf(rng: np.random.Generator, *shape: int, positive: bool = False) -> ta.Tensor:
    """A float64 leaf requiring grad, values ~N(0, 1) (or in [0.5, 2] if positive)."""
    data = rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)
    return ta.tensor(data, requires_grad=True)


def check(fn, *inputs) -> None:
    """gradcheck ``fn`` at ``inputs`` (random upstream gradient), raising on mismatch."""
    assert gradcheck(fn, inputs)
