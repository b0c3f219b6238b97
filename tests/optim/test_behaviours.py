"""Optimizer bookkeeping a user relies on: groups, state_dict indices and copies, defaults, versions."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim


def param(value, grad):
    p = nn.Parameter(np.array(value, dtype=np.float64))
    p.grad = ta.tensor(np.array(grad, dtype=np.float64))
    return p


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps)],
                         ids=["SGD", "Adam"])
def test_state_dict_numbers_parameters_across_three_groups(make):
    groups = [[param([1.0, 2.0], [1.0, 1.0]), param([3.0], [1.0])], [param([4.0], [1.0])], [param([5.0], [1.0])]]
    opt = make([{"params": g} for g in groups])
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2], [3]]
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    before = {i: {k: np.copy(v) for k, v in s.items()} for i, s in sd["state"].items()}
    opt.step()  # the saved buffers are copies: the second step leaves them as they were
    for i, buffers in before.items():
        for k, v in buffers.items():
            np.testing.assert_array_equal(sd["state"][i][k], v, err_msg=f"state[{i}][{k!r}] changed")


def test_a_group_may_hold_a_single_tensor_and_defaults_fill_it():
    p, q = param([1.0], [2.0]), param([1.0], [2.0])
    opt = optim.SGD([{"params": p}, {"params": [q], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[0]["params"] == [p] and opt.param_groups[0]["lr"] == 0.1
    assert opt.defaults == {"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
                            "nesterov": False, "maximize": False}
    opt.step()
    np.testing.assert_allclose(p.array, [1.0 - 0.1 * 2.0])
    np.testing.assert_allclose(q.array, [1.0 - 0.5 * 2.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_grad_to_zeros_keeps_shape_and_dtype(dtype):
    p = nn.Parameter(np.ones((2, 3), dtype=dtype))
    p.grad = ta.ones(2, 3, dtype=dtype)
    optim.Adam([p]).zero_grad(set_to_none=False)
    assert p.grad.shape == (2, 3) and p.grad.dtype == dtype and not p.grad.any()


def test_params_that_are_not_iterable_are_refused_clearly():
    with pytest.raises(TypeError, match="^SGD: params must be an iterable of Tensors or dicts, got int"):
        optim.SGD(3, lr=0.1)
    with pytest.raises(ValueError, match="^AdamW: optimizer got an empty parameter list"):
        optim.AdamW([])


def test_a_beta_of_zero_is_allowed_as_in_torch():
    p = param([1.0], [2.0])
    optim.Adam([p], lr=0.1, betas=(0.0, 0.0)).step()  # m = g, v = g^2: a step of lr * sign(g)
    np.testing.assert_allclose(p.array, [0.9], rtol=1e-6)


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1), lambda ps: optim.Adam(ps, lr=0.1),
                                  lambda ps: optim.AdamW(ps, lr=0.1)], ids=["SGD", "Adam", "AdamW"])
def test_every_step_counts_as_an_in_place_change(make):
    """A graph built after one step and before the next cannot backward through the changed weight."""
    w = nn.Parameter(np.ones(3))
    opt = make([w])
    w.grad = ta.ones(3, dtype=w.dtype)
    opt.step()
    loss = (w * w).sum()  # saves w as it is after the first step
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation.* at version 2; expected version 1"):
        loss.backward()  # one version per step, as torch's SGD and Adam count


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_argument_errors_name_the_optimizer(name):
    with pytest.raises(ValueError, match=f"^{name}: invalid learning rate: -1"):
        getattr(optim, name)([nn.Parameter(np.ones(2))], lr=-1)
