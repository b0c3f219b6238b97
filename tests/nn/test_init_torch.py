"""``nn.init`` against torch: the gains, the deterministic fills, the random fills' laws, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
    ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None),
])
def test_calculate_gain_matches_torch(nonlinearity, param):
    ours, theirs = ta.nn.init.calculate_gain(nonlinearity, param), torch.nn.init.calculate_gain(nonlinearity, param)
    assert math.isclose(ours, theirs)


def _errors(call):
    messages = []
    for lib in (ta, torch):
        with pytest.raises(ValueError) as err:
            call(lib)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_the_initialisers_refuse_as_torch_does():
    _errors(lambda lib: lib.nn.init.calculate_gain("softsign"))
    _errors(lambda lib: lib.nn.init.calculate_gain("leaky_relu", "a"))
    _errors(lambda lib: lib.nn.init.eye_(lib.empty(2, 2, 2)))
    _errors(lambda lib: lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="fan_middle"))
    _errors(lambda lib: lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(3)))


def test_the_deterministic_fills_and_the_fans_match_torch():
    for shape in [(3, 4), (2, 3, 5)]:
        assert ta.nn.init._calculate_fan_in_and_fan_out(ta.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    assert ta.nn.init.eye_(ta.empty(3, 5)).tolist() == torch.nn.init.eye_(torch.empty(3, 5)).tolist()
    filled = ta.nn.init.constant_(ta.empty(2, 2), 0.5)
    assert filled.tolist() == torch.nn.init.constant_(torch.empty(2, 2), 0.5).tolist()


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("fill", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_draws_have_torch_s_law(fill, mode):
    """Same bound (uniform) and standard deviation, to sampling error, on 200,000 draws."""
    ta.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(ta.nn.init, fill)(ta.empty(400, 500), a=0.1, mode=mode, nonlinearity="leaky_relu").numpy()
    theirs = getattr(torch.nn.init, fill)(torch.empty(400, 500), a=0.1, mode=mode, nonlinearity="leaky_relu").numpy()
    assert abs(ours.std() / theirs.std() - 1) < 0.01 and abs(ours.mean()) < 3 * theirs.std() / 400
    if fill == "kaiming_uniform_":
        assert abs(np.abs(ours).max() / np.abs(theirs).max() - 1) < 0.001


def test_trunc_normal_stays_in_its_bounds_with_torch_s_law():
    ta.manual_seed(1)
    torch.manual_seed(1)
    ours = ta.nn.init.trunc_normal_(ta.empty(300, 300), std=0.02, a=-0.03, b=0.03).numpy()
    theirs = torch.nn.init.trunc_normal_(torch.empty(300, 300), std=0.02, a=-0.03, b=0.03).numpy()
    assert ours.min() >= -0.03 and ours.max() <= 0.03
    assert abs(ours.std() / theirs.std() - 1) < 0.01


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 2, 2)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_the_gain(shape):
    for lib in (ta, torch):
        w = lib.nn.init.orthogonal_(lib.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1)
        small = min(w.shape)
        gram = w @ w.T if w.shape[0] == small else w.T @ w
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
