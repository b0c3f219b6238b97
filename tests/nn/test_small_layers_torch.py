"""The small layers, parameter containers and Module utilities against torch's: names, state dicts,
values and gradients."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def both(rng, shape):
    a = rng.standard_normal(shape)
    return ta.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize(("make", "shape"), [
    (lambda lib: lib.nn.Identity(54, unused="x"), (2, 3)),
    (lambda lib: lib.nn.Flatten(), (2, 3, 4, 5)),
    (lambda lib: lib.nn.Flatten(0, 2), (2, 3, 4, 5)),
    (lambda lib: lib.nn.Flatten(-2), (2, 3, 4)),
    (lambda lib: lib.nn.Unflatten(1, (3, 4)), (2, 12, 5)),
    (lambda lib: lib.nn.Unflatten(-1, (2, -1)), (3, 8)),
    (lambda lib: lib.nn.Softmax(dim=-1), (2, 3, 4)),
    (lambda lib: lib.nn.Softmax(dim=0), (5, 2)),
    (lambda lib: lib.nn.Tanh(), (4, 3)),
    (lambda lib: lib.nn.Sigmoid(), (4, 3)),
    (lambda lib: lib.nn.SiLU(), (4, 3)),
])
def test_layer_matches_torch_in_value_and_gradient(make, shape, rng):
    x, y = both(rng, shape)
    a, b = make(ta)(x), make(torch)(y)
    assert a.shape == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)
    upstream = rng.standard_normal(tuple(b.shape))
    a.backward(ta.tensor(upstream))
    b.backward(torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_silu_functional_and_the_sequential_of_d2l_style(rng):
    x, y = both(rng, (3, 4))
    np.testing.assert_allclose(ta.nn.functional.silu(x).detach().numpy(),
                               torch.nn.functional.silu(y).detach().numpy(), rtol=1e-12)
    ours = nn.Sequential(nn.Flatten(), nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3))
    images = rng.standard_normal((5, 2, 3, 2)).astype(np.float32)
    assert ours(ta.tensor(images)).shape == (5, 3)
    assert ours[1].weight.shape == (8, 12) and ours[3].weight.shape == (3, 8)
    theirs = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    np.testing.assert_allclose(ours(ta.tensor(images)).detach().numpy(),
                               theirs(torch.tensor(images)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_lazy_linear_is_initialized_like_linear_and_trains_with_an_optimizer_built_before(rng):
    lazy = nn.LazyLinear(4, dtype=ta.float64)
    weight = lazy.weight
    opt = optim.SGD(lazy.parameters(), lr=0.1)  # built before the first call, as torch allows
    assert lazy.weight.shape == (4, 0) and lazy.in_features == 0
    x = ta.tensor(rng.standard_normal((6, 9)))
    lazy(x).square().mean().backward()
    assert lazy.weight is weight and weight.shape == (4, 9) and lazy.in_features == 9
    bound = 1 / np.sqrt(9)
    assert np.all(np.abs(weight.array) <= bound) and weight.array.std() > bound / 4  # U(-1/sqrt(in), 1/sqrt(in))
    before = weight.array.copy()
    opt.step()
    assert not np.allclose(weight.array, before)
    with pytest.raises(ValueError, match=r"linear: input of shape \(6, 5\) does not fit weight of shape \(4, 9\)"):
        lazy(ta.tensor(rng.standard_normal((6, 5))))


def test_parameter_list_and_dict_register_under_torchs_names():
    ours = nn.Module()
    theirs = torch.nn.Module()
    ours.heads = nn.ParameterList([nn.Parameter(np.ones((2, 2))), ta.zeros(3)])  # a tensor gets wrapped
    theirs.heads = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 2)), torch.zeros(3)])
    ours.heads.append(nn.Parameter(np.ones(1)))
    theirs.heads.append(torch.nn.Parameter(torch.ones(1)))
    ours.table = nn.ParameterDict({"b": nn.Parameter(np.ones(2)), "a": nn.Parameter(np.ones(4))})
    theirs.table = torch.nn.ParameterDict({"b": torch.nn.Parameter(torch.ones(2)),
                                           "a": torch.nn.Parameter(torch.ones(4))})
    ours.table["c"] = nn.Parameter(np.zeros(1))
    theirs.table["c"] = torch.nn.Parameter(torch.zeros(1))
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.heads[1], nn.Parameter) and ours.heads[-1].shape == (1,) and len(ours.heads) == 3
    assert list(ours.table) == list(theirs.table) == ["a", "b", "c"] and "a" in ours.table  # a dict: sorted
    ordered = nn.ParameterDict([("z", nn.Parameter(np.ones(1))), ("y", nn.Parameter(np.ones(1)))])
    assert list(ordered) == ["z", "y"]  # pairs: in their order
    del ours.table["a"]
    assert [n for n, _ in ours.named_parameters()][-2:] == ["table.b", "table.c"]
    with pytest.raises(TypeError, match="expected a Parameter or a Tensor, got list"):
        ours.heads.append([1.0])
    with pytest.raises(IndexError, match="index 3 is out of range for a ParameterList of 3"):
        ours.heads[3]


def test_requires_grad_freezes_and_unfreezes_like_torch(rng):
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    assert model[0].requires_grad_(False) is model[0]
    x = ta.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    model(x).sum().backward()
    assert model[0].weight.grad is None and model[1].weight.grad is not None
    model.requires_grad_()
    assert all(p.requires_grad for p in model.parameters())


def test_children_modules_and_extra_repr_as_torch():
    ours = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh(), nn.Flatten(0)))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Flatten(0)))
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    for a, b in zip(ours.modules(), theirs.modules()):
        if isinstance(a, (nn.Linear, nn.Flatten, nn.Softmax, nn.Unflatten)):
            assert a.extra_repr() == b.extra_repr()
