"""Public tests of the RoPE task (in the notebook rotary.ipynb, imported as the module rotary)."""

import numpy as np
import pytest
from rotary import rope

import tinyattn as ta
from tinyattn.autograd import gradcheck


@pytest.mark.task(id="rope", points=1)
def test_rope_keeps_each_pair_s_length_and_leaves_position_0_alone():
    x = np.random.default_rng(1).standard_normal((6, 8))
    y = rope(ta.tensor(x)).numpy()
    pairs = lambda a: np.hypot(a[..., 0::2], a[..., 1::2])  # noqa: E731
    np.testing.assert_allclose(pairs(y), pairs(x))
    np.testing.assert_allclose(y[0], x[0])


@pytest.mark.task(id="rope", points=1)
def test_rope_scores_depend_on_the_distance_only():
    rng = np.random.default_rng(2)
    q = np.repeat(rng.standard_normal((1, 8)), 12, axis=0)
    k = np.repeat(rng.standard_normal((1, 8)), 12, axis=0)
    rq, rk = rope(ta.tensor(q)).numpy(), rope(ta.tensor(k)).numpy()
    assert np.isclose(rq[5] @ rk[3], rq[9] @ rk[7]) and np.isclose(rq[2] @ rk[6], rq[6] @ rk[10])
    assert not np.isclose(rq[5] @ rk[3], rq[5] @ rk[4])


@pytest.mark.task(id="rope", points=1)
def test_rope_gradients_match_finite_differences():
    x = ta.tensor(np.random.default_rng(3).standard_normal((2, 4, 6)), requires_grad=True)
    assert gradcheck(rope, (x,))
