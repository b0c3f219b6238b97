"""Every elementwise op that names itself, against torch: value, gradient, forward-mode tangent, second derivative.

The op states its derivative once (``core/ops/elementwise.py``); its backward, its jvp and its second derivative
all follow from it, and its method (``x.exp()``) and function (``ta.exp(x)``) are made from it. So a new op is
one entry there, and one line here: the interval its inputs are drawn from.
"""

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.autograd.forward_ad as fwAD
from tinyattn.autograd.core.ops.elementwise import named_ops

torch = pytest.importorskip("torch")

# where each op's inputs are drawn: its domain, away from the points where it has no derivative
DOMAIN = {
    "exp": (-3, 3), "log": (0.2, 4), "log1p": (-0.8, 4), "expm1": (-3, 3), "sqrt": (0.2, 4), "tanh": (-3, 3),
    "relu": (-3, 3), "sigmoid": (-4, 4), "abs": (-3, 3), "erf": (-2, 2), "sin": (-4, 4), "cos": (-4, 4),
    "sinh": (-3, 3),
}
OPS = [op for _, op in named_ops()]


def test_every_named_op_has_its_domain_here():
    assert {op.name for op in OPS} == set(DOMAIN)


def draws(name, seed, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    low, high = DOMAIN[name]
    x = rng.uniform(low, high, shape)
    x[np.abs(x) < 0.05] = 0.3  # (away from 0, where relu and abs have no derivative)
    return x, rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_a_named_op_is_a_method_and_a_function_and_differentiates_as_torchs(op, seed):
    x, g, t, v = draws(op.name, seed)
    mine = ta.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y = getattr(mine, op.name)()
    y_t = getattr(torch, op.name)(theirs)
    np.testing.assert_allclose(y.detach().numpy(), y_t.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(getattr(ta, op.name)(mine).detach().numpy(), y.detach().numpy())
    assert type(y.grad_fn.fn) is type(op) and y.grad_fn.fn is op
    # the gradient, from a random upstream gradient, with its graph: then differentiated again, along v
    (dx,) = ta.autograd.grad(y, mine, ta.tensor(g), create_graph=True)
    (dx_t,) = torch.autograd.grad(y_t, theirs, torch.tensor(g), create_graph=True)
    np.testing.assert_allclose(dx.detach().numpy(), dx_t.detach().numpy(), rtol=1e-12, atol=1e-14)
    (ddx_t,) = torch.autograd.grad(dx_t, theirs, torch.tensor(v), allow_unused=True, materialize_grads=True)
    if dx.requires_grad:
        (ddx,) = ta.autograd.grad(dx, mine, ta.tensor(v))
        np.testing.assert_allclose(ddx.numpy(), ddx_t.numpy(), rtol=1e-11, atol=1e-13)
    else:  # a piecewise-constant slope (relu, abs): the gradient is no function of x, its derivative 0
        np.testing.assert_array_equal(ddx_t.numpy(force=True), 0.0)
    # forward mode: the tangent of the output along t
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(getattr(fwAD.make_dual(ta.tensor(x), ta.tensor(t)), op.name)()).tangent
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(torch.tensor(x), torch.tensor(t))
        tangent_t = torch.autograd.forward_ad.unpack_dual(getattr(torch, op.name)(dual)).tangent
    np.testing.assert_allclose(tangent.numpy(), tangent_t.numpy(), rtol=1e-12, atol=1e-14)
