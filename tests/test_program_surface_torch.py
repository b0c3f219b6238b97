"""Small behaviours real programs lean on, as torch has them: a frozen parameter given to an optimizer,
sizes given as ``size=``, ``out=``, and walking ``grad_fn.next_functions``."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def test_an_optimizer_takes_a_frozen_parameter_and_leaves_it_alone():
    for lib in (ta, torch):
        frozen = lib.nn.Embedding.from_pretrained(lib.ones(3, 2))  # requires_grad False, as torch
        layer = lib.nn.Linear(2, 1)
        opt = lib.optim.Adam([*frozen.parameters(), *layer.parameters()], lr=0.1)
        before = layer.weight.detach().clone()
        layer(frozen(lib.tensor([0, 2]))).sum().backward()
        opt.step()
        assert np.array_equal(frozen.weight.detach().numpy(), np.ones((3, 2)))
        assert not np.array_equal(layer.weight.detach().numpy(), before.numpy())


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_sizes_as_the_size_keyword(name):
    assert tuple(getattr(ta, name)(size=(2, 3)).shape) == tuple(getattr(torch, name)(size=(2, 3)).shape)
    with pytest.raises(TypeError, match="the size is given twice"):
        getattr(ta, name)(2, size=(2, 3))


@pytest.mark.parametrize("fn, args", [("matmul", ([[1.0, 2.0], [3.0, 4.0]],) * 2), ("mul", ([1.0, 2.0], [3.0, 4.0])),
                                      ("add", ([1.0, 2.0], [3.0, 4.0])), ("sub", ([1.0, 2.0], [3.0, 4.0]))])
def test_out_writes_into_the_given_tensor_and_returns_it(fn, args):
    results = []
    for lib in (ta, torch):
        out = lib.zeros(np.shape(args[0]))
        returned = getattr(lib, fn)(*(lib.tensor(a) for a in args), out=out)
        assert returned is out
        results.append(out.numpy())
    np.testing.assert_array_equal(*results)


def test_out_refuses_a_graph_as_torch():
    for lib in (ta, torch):
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
            lib.mul(lib.ones(2, requires_grad=True), 2.0, out=lib.zeros(2))


@pytest.mark.parametrize("after_backward", [False, True])
def test_next_functions_walks_the_graph_one_edge_per_input(after_backward):
    """Before backward and after it (which frees what forward saved, but not the graph's edges), as torch."""
    def chain(lib):
        x = lib.ones(3, requires_grad=True)
        loss = ((x * 2).exp() + 1).sum()
        if after_backward:
            loss.backward()
        names, node = [], loss.grad_fn
        while node is not None and node.next_functions:
            nxt = [n for n, _ in node.next_functions if n is not None]
            node = nxt[0] if nxt else None
            names.append(len(nxt))
        return names

    assert chain(ta) == chain(torch)
