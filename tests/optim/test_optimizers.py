"""Optimizers: one step computed by hand from the update formulas, state, zero_grad, state_dict."""

import math

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim


def param(values, grad):
    p = nn.Parameter(np.array(values, dtype=np.float64))
    p.grad = ta.tensor(np.array(grad, dtype=np.float64))
    return p


def test_sgd_plain_and_weight_decay():
    p = param([1.0, -2.0], [0.5, 0.25])
    optim.SGD([p], lr=0.1, weight_decay=0.01).step()
    np.testing.assert_allclose(p.array, [1.0 - 0.1 * (0.5 + 0.01), -2.0 - 0.1 * (0.25 - 0.02)])


def test_sgd_momentum_two_steps():
    p = param([1.0], [1.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.step()  # buf = g = 1
    np.testing.assert_allclose(p.array, [0.9])
    p.grad = ta.tensor(np.array([2.0]))
    opt.step()  # buf = 0.9 * 1 + 2 = 2.9
    np.testing.assert_allclose(p.array, [0.9 - 0.29])
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"], [2.9])  # (keyed by the parameter, as torch)


def test_adam_first_steps_by_hand():
    p = param([1.0, 2.0], [0.1, -0.3])
    opt = optim.Adam([p], lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    opt.step()
    # step 1: m_hat = g, v_hat = g^2, so the update is lr * sign(g) (up to eps)
    np.testing.assert_allclose(p.array, [1.0 - 0.01, 2.0 + 0.01], rtol=1e-6)
    g2 = np.array([0.2, 0.1])
    p.grad = ta.tensor(g2.copy())
    opt.step()
    m = 0.9 * 0.1 * np.array([0.1, -0.3]) + 0.1 * g2
    v = 0.99 * 0.01 * np.array([0.1, -0.3]) ** 2 + 0.01 * g2**2
    update = 0.01 * (m / (1 - 0.9**2)) / (np.sqrt(v / (1 - 0.99**2)) + 1e-8)
    g1 = np.array([0.1, -0.3])
    after_step1 = np.array([1.0, 2.0]) - 0.01 * g1 / (np.abs(g1) + 1e-8)
    np.testing.assert_allclose(p.array, after_step1 - update, rtol=1e-12)
    assert opt.state[p]["step"] == 2


def test_adamw_decays_weights_directly():
    p, q = param([1.0], [0.0]), param([1.0], [0.0])
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    optim.Adam([q], lr=0.1, weight_decay=0.5).step()
    np.testing.assert_allclose(p.array, [1.0 * (1 - 0.1 * 0.5)])  # zero gradient: decay only
    np.testing.assert_allclose(q.array, [1.0 - 0.1], rtol=1e-6)  # L2 through the gradient: a full Adam step


def test_skips_params_without_grad_and_zero_grad():
    p, q = param([1.0], [1.0]), nn.Parameter(np.array([5.0]))
    opt = optim.Adam([p, q], lr=0.1)
    opt.step()
    assert q.array[0] == 5.0 and q not in opt.state
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad, [0.0])
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_and_state_dict_round_trip():
    a, b = param([1.0], [1.0]), param([2.0], [1.0])
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["lr"] == 0.1
    opt.step()
    sd = opt.state_dict()
    assert sd["param_groups"][1]["params"] == [1]
    a2, b2 = param([1.0], [1.0]), param([2.0], [1.0])
    opt2 = optim.Adam([{"params": [a2]}, {"params": [b2]}], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.5 and opt2.state[a2]["step"] == 1 and opt2.state[b2]["step"] == 1
    assert set(sd["state"]) == {0, 1}  # (state_dict numbers the parameters, as torch's)
    sd["state"][0]["exp_avg"][...] = 99  # a copy
    assert opt2.state[a2]["exp_avg"][0] != 99


def test_bad_arguments():
    with pytest.raises(ValueError, match="invalid learning rate: -1"):
        optim.SGD([nn.Parameter(np.ones(1))], lr=-1)
    with pytest.raises(ValueError, match="invalid beta parameter at index 0: 1.0"):
        optim.Adam([nn.Parameter(np.ones(1))], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])


def test_float32_params_stay_float32():
    p = nn.Parameter(np.ones(3, dtype=np.float32))
    p.grad = ta.ones(3)
    optim.Adam([p]).step()
    assert p.dtype == np.float32


def test_training_reduces_a_quadratic():
    ta.manual_seed(0)
    lin = nn.Linear(3, 1)
    x = ta.randn(32, 3)
    y = x @ ta.tensor([[1.0], [-2.0], [0.5]])
    opt = optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(100):
        loss = nn.functional.mse_loss(lin(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 * losses[0]
    assert math.isfinite(losses[-1])


def test_optimizers_refuse_what_torch_refuses():
    w = nn.Parameter(np.ones((2, 3)))
    with pytest.raises(TypeError, match="params must be an iterable of Tensors or dicts, got Parameter"):
        optim.SGD(w, lr=0.1)  # a bare tensor would otherwise be iterated row by row
    with pytest.raises(ValueError, match=r"can't optimize a non-leaf Tensor \(of shape \(2, 3\)\)"):
        optim.Adam([w * 2])
    with pytest.raises(ValueError, match="appear twice"):
        optim.Adam([{"params": [w]}, {"params": [w], "lr": 0.1}])
    with pytest.raises(ValueError, match="appear twice"):
        optim.SGD([w, w], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors, got ndarray"):
        optim.SGD([np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum > 0 and zero dampening"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="invalid epsilon value: -1"):
        optim.AdamW([w], eps=-1)


def test_sgd_momentum_with_weight_decay_moves_a_0d_parameter_like_any_other():
    p = nn.Parameter(np.array(1.0))
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1)
    for _ in range(3):
        p.grad = ta.tensor(np.array(1.0))
        opt.step()
    # buffers: 1.1, then 0.9 * 1.1 + (1 + 0.1 p) ... computed by hand: the buffer is updated every step
    b1 = 1 + 0.1 * 1.0
    p1 = 1.0 - 0.1 * b1
    b2 = 0.9 * b1 + (1 + 0.1 * p1)
    p2 = p1 - 0.1 * b2
    b3 = 0.9 * b2 + (1 + 0.1 * p2)
    assert np.isclose(float(p.array), p2 - 0.1 * b3)
    assert np.isclose(float(opt.state[p]["momentum_buffer"]), b3)
