"""``torch.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) against torch's in float64: values,
the shapes of nested results, create_graph, strict, and the errors."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-8, atol=1e-12)


def _scalar(lib):
    """One element out of two inputs: softmax attention of a against b, and a cubic term."""
    def f(a, b):
        return ((a @ b).softmax(-1) @ b.T * a).sum() + (a ** 3).sum()
    return f


def _pair(lib):
    """Two outputs of two inputs, one output independent of b."""
    def f(a, b):
        return (a * b.sum()).tanh(), a.exp().sum(0)
    return f


def _tensor(lib, data):
    return tuple(lib.tensor(d) for d in data) if isinstance(data, tuple) else lib.tensor(data)


def _numpy(result):
    if isinstance(result, tuple):
        return tuple(_numpy(r) for r in result)
    return result.detach().numpy()


def _assert_same(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
    else:
        assert not isinstance(ours, tuple) and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, **TOL)


RNG = np.random.default_rng(7)
A, B = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
VA, VB = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
V_OUT = (RNG.standard_normal((2, 3)), RNG.standard_normal(3))

CALLS = {
    "vjp": lambda lib, AF: AF.vjp(_pair(lib), _tensor(lib, (A, B)), _tensor(lib, V_OUT)),
    "vjp_one_input": lambda lib, AF: AF.vjp(lambda a: a.exp() * a, _tensor(lib, A), _tensor(lib, VA)),
    "vjp_scalar_no_v": lambda lib, AF: AF.vjp(_scalar(lib), _tensor(lib, (A, B))),
    "jvp": lambda lib, AF: AF.jvp(_pair(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "jvp_one_input": lambda lib, AF: AF.jvp(lambda a: (a * a).sum(1), _tensor(lib, A), _tensor(lib, VA)),
    "jacobian": lambda lib, AF: AF.jacobian(_pair(lib), _tensor(lib, (A, B))),
    "jacobian_one_to_one": lambda lib, AF: AF.jacobian(lambda a: a.softmax(-1), _tensor(lib, A)),
    "jacobian_one_to_two": lambda lib, AF: AF.jacobian(lambda a: (a.sin(), a.sum()), _tensor(lib, A)),
    "hessian": lambda lib, AF: AF.hessian(_scalar(lib), _tensor(lib, (A, B))),
    "hessian_one_input": lambda lib, AF: AF.hessian(lambda a: (a.exp() * a.sin()).sum(), _tensor(lib, A)),
    "vhp": lambda lib, AF: AF.vhp(_scalar(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "hvp": lambda lib, AF: AF.hvp(_scalar(lib), _tensor(lib, (A, B)), _tensor(lib, (VA, VB))),
    "hvp_one_input": lambda lib, AF: AF.hvp(lambda a: (a.tanh() ** 2).sum(), _tensor(lib, A), _tensor(lib, VA)),
}


@pytest.mark.parametrize("name", CALLS)
def test_matches_torch(name):
    ours = CALLS[name](ta, ta.autograd.functional)
    theirs = CALLS[name](torch, torch.autograd.functional)
    _assert_same(_numpy(ours), _numpy(theirs))


@pytest.mark.parametrize("name", CALLS)
def test_results_are_detached_unless_create_graph(name):
    flat = []

    def walk(r):
        if isinstance(r, tuple):
            for x in r:
                walk(x)
        else:
            flat.append(r)

    walk(CALLS[name](ta, ta.autograd.functional))
    assert flat and not any(t.requires_grad for t in flat)


def test_create_graph_lets_a_result_be_differentiated_as_torch():
    """The Hessian-vector product's own gradient with respect to the point (a third derivative)."""
    results = []
    for lib in (ta, torch):
        a = lib.tensor(A, requires_grad=True)
        _, hv = lib.autograd.functional.hvp(lambda x: (x.sin() * x * x).sum(), a, lib.tensor(VA), create_graph=True)
        assert hv.requires_grad
        (third,) = lib.autograd.grad((hv * hv).sum(), a)
        results.append(third.numpy())
    np.testing.assert_allclose(*results, **TOL)


def test_strict_refuses_an_independent_input_as_torch():
    for lib in (ta, torch):
        AF = lib.autograd.functional
        with pytest.raises(RuntimeError, match="independent of input 1"):
            AF.vjp(lambda a, b: a * 2, _tensor(lib, (A, B)), lib.tensor(VA), strict=True)
        _, (_, zeros) = AF.vjp(lambda a, b: a * 2, _tensor(lib, (A, B)), lib.tensor(VA))
        np.testing.assert_array_equal(zeros.numpy(), np.zeros_like(B))
        with pytest.raises(RuntimeError, match="does not require gradients"):
            AF.jacobian(lambda a, lib=lib: lib.ones(2, dtype=lib.float64), lib.tensor(A), strict=True)


@pytest.mark.parametrize("call, error, message", [
    (lambda lib, AF: AF.vjp(lambda a: a * a, lib.tensor(A)), RuntimeError, "v can only be None"),
    (lambda lib, AF: AF.vjp(lambda a: a * a, lib.tensor(A), lib.tensor(VB)), RuntimeError, "invalid size"),
    (lambda lib, AF: AF.vjp(lambda a: a * a, [lib.tensor(A)]), TypeError, "must be either a Tensor or a tuple"),
    (lambda lib, AF: AF.vjp(lambda a: 3, lib.tensor(A)), TypeError, "outputs of the user-provided function"),
    (lambda lib, AF: AF.jvp(lambda a: a * a, lib.tensor(A)), RuntimeError, "v can only be None"),
    (lambda lib, AF: AF.hessian(lambda a: a * a, lib.tensor(A)), RuntimeError, "should contain a single element"),
    (lambda lib, AF: AF.hessian(lambda a: (a, a), lib.tensor(A)), RuntimeError, "should return a single Tensor"),
    (lambda lib, AF: AF.jacobian(lambda a: a, lib.tensor(A), strategy="forward-mode"), NotImplementedError,
     "only implemented for `vectorize=True`"),
])
def test_refusals_match_torch(call, error, message):
    for lib in (ta, torch):
        with pytest.raises(error, match=message):
            call(lib, lib.autograd.functional)


def test_an_unknown_strategy_is_a_value_error():
    """(torch raises a bare AssertionError here; the message is the same idea.)"""
    with pytest.raises(ValueError, match='"forward-mode" or "reverse-mode"'):
        ta.autograd.functional.jacobian(lambda a: a, ta.tensor(A), strategy="sideways")
