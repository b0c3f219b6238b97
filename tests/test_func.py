"""``tinyattn.func`` without torch: each transform against another way of computing the same thing (per-sample
gradients against one backward per sample, Jacobians and Hessians against ``autograd.functional``, derivatives
written out by hand); vmap's randomness; functional_call puts the module's own tensors back. (Against torch:
test_func_torch.py.)"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import func

TOL = dict(rtol=1e-10, atol=1e-12)


def _loss(w, x, y):
    return ((x @ w).tanh() - y).pow(2).sum()


def test_per_sample_gradients_equal_one_backward_per_sample():
    rng = np.random.default_rng(0)
    w, x, y = (ta.tensor(rng.standard_normal(s)) for s in [(3, 2), (6, 3), (6, 2)])
    batched = func.vmap(func.grad(_loss), in_dims=(None, 0, 0))(w, x, y)
    for i in range(6):
        leaf = w.clone().requires_grad_()
        (expected,) = ta.autograd.grad(_loss(leaf, x[i], y[i]), leaf)
        np.testing.assert_allclose(batched[i].numpy(), expected.numpy(), **TOL)


def test_jacrev_and_jacfwd_equal_autograd_functional_jacobian():
    rng = np.random.default_rng(1)
    x = ta.tensor(rng.standard_normal((2, 3)))
    f = lambda t: (t @ t.T).softmax(-1) * t[:, :2].exp()  # noqa: E731
    expected = ta.autograd.functional.jacobian(f, x).numpy()
    np.testing.assert_allclose(func.jacrev(f)(x).numpy(), expected, **TOL)
    np.testing.assert_allclose(func.jacfwd(f)(x).numpy(), expected, **TOL)


def test_hessian_by_forward_over_reverse_equals_reverse_over_reverse():
    rng = np.random.default_rng(2)
    x = ta.tensor(rng.standard_normal(4))
    f = lambda t: (t.sin() * t.exp()).sum() + (t.softmax(0) * t).sum()  # noqa: E731
    np.testing.assert_allclose(func.hessian(f)(x).numpy(), ta.autograd.functional.hessian(f, x).numpy(), **TOL)


def test_grad_of_grad_is_the_second_derivative():
    x = ta.tensor(0.7, dtype=ta.float64)
    second = func.grad(func.grad(lambda t: t.sin() * t * t))(x)  # d²/dx² x² sin x = 2 sin x + 4x cos x - x² sin x
    v = 0.7
    assert abs(second.item() - (2 * np.sin(v) + 4 * v * np.cos(v) - v * v * np.sin(v))) < 1e-12


def test_grad_leaves_its_inputs_alone_and_returns_a_tensor_without_a_graph():
    w = ta.tensor(np.ones((3, 2)))
    g = func.grad(_loss)(w, ta.tensor(np.ones((4, 3))), ta.tensor(np.zeros((4, 2))))
    assert not w.requires_grad and w.grad is None and g.grad_fn is None and not g.requires_grad


def test_grad_through_an_input_that_requires_grad_is_differentiable():
    """An outer reverse pass sees through grad: d/dw of |grad_x f(w, x)|²."""
    rng = np.random.default_rng(3)
    w = ta.tensor(rng.standard_normal(3), requires_grad=True)
    x = ta.tensor(rng.standard_normal(3))
    g = func.grad(lambda x, w: (x * w).tanh().sum())(x, w)
    (outer,) = ta.autograd.grad((g * g).sum(), w)
    eps, numeric = 1e-6, []
    for j in range(3):
        def value(s, j=j):
            shifted = w.detach().numpy().copy()
            shifted[j] += s
            gj = func.grad(lambda x, w: (x * w).tanh().sum())(x, ta.tensor(shifted))
            return float((gj * gj).sum())
        numeric.append((value(eps) - value(-eps)) / (2 * eps))
    np.testing.assert_allclose(outer.numpy(), numeric, rtol=1e-6)


@pytest.mark.parametrize("randomness, same", [("same", True), ("different", False)])
def test_vmap_randomness(randomness, same):
    ta.manual_seed(0)
    draws = func.vmap(lambda x: x + ta.randn(3, dtype=ta.float64), randomness=randomness)(ta.zeros(4, 3,
                                                                                                dtype=ta.float64))
    rows = draws.numpy()
    assert all(np.array_equal(rows[0], r) for r in rows[1:]) is same


def test_functional_call_puts_the_modules_own_tensors_back_even_when_the_call_raises():
    model = ta.nn.Linear(3, 2)
    own = model.weight

    with pytest.raises(ValueError, match="inside"):
        func.functional_call(_Raising(model), {"inner.weight": ta.zeros(2, 3)}, (ta.ones(1, 3),))
    assert model.weight is own and model._parameters["weight"] is own
    out = func.functional_call(model, {"weight": ta.zeros(2, 3)}, (ta.ones(1, 3),))
    np.testing.assert_allclose(out.detach().numpy(), model.bias.detach().numpy()[None])
    assert model.weight is own


class _Raising(ta.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        self.inner(x)
        raise ValueError("inside")


def test_functional_call_refuses_a_name_the_module_does_not_have():
    with pytest.raises(AttributeError, match="no parameter or buffer named 'wieght'"):
        func.functional_call(ta.nn.Linear(3, 2), {"wieght": ta.zeros(2, 3)}, (ta.ones(1, 3),))
    with pytest.raises(RuntimeError, match="missing key\\(s\\): bias"):
        func.functional_call(ta.nn.Linear(3, 2), {"weight": ta.zeros(2, 3)}, (ta.ones(1, 3),), strict=True)
