"""torch's general form of a backward pass, against torch in float64: several outputs with a gradient each
(``autograd.backward([a, b], [ga, None])``, ``autograd.grad([a, b], ...)``), ``inputs=`` (only those tensors'
``.grad`` filled, leaves or not), and the nodes no wanted gradient flows through left alone, as torch leaves
them: not run, so not freed."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-10, atol=1e-12)


def _leaves(lib, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = lib.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    return x, w


def _outputs(lib, x, w):
    """Three outputs over one graph: a (3, 2) matrix, a scalar, and the matrix again."""
    a = (x @ w).tanh()
    b = (x * x).sum() * w.sum()
    return a, b, a


def _upstream(lib, seed):
    rng = np.random.default_rng(100 + seed)
    return lib.tensor(rng.standard_normal((3, 2))), None, lib.tensor(rng.standard_normal((3, 2)))


@pytest.mark.parametrize("seed", range(6))
def test_several_outputs_sum_their_weighted_derivatives_as_torch(seed):
    results = []
    for lib in (ta, torch):
        x, w = _leaves(lib, seed)
        lib.autograd.backward(_outputs(lib, x, w), _upstream(lib, seed))
        by_grad = lib.autograd.grad(_outputs(lib, x, w), [w, x], _upstream(lib, seed))
        results.append([x.grad.numpy(), w.grad.numpy(), by_grad[0].numpy(), by_grad[1].numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)


@pytest.mark.parametrize("seed", range(3))
def test_several_outputs_with_create_graph_differentiate_again_as_torch(seed):
    results = []
    for lib in (ta, torch):
        x, w = _leaves(lib, seed)
        dx, dw = lib.autograd.grad(_outputs(lib, x, w), [x, w], _upstream(lib, seed), create_graph=True)
        results.append([g.numpy() for g in lib.autograd.grad((dx * dx).sum() + dw.sum() ** 2, [x, w])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)


@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph=True")  # (torch's note on .grad cycles)
def test_autograd_backward_of_several_outputs_with_create_graph_as_torch():
    """``autograd.backward(outputs, gradients, create_graph=True)``: each ``.grad`` is a function of the leaves and of
    a gradient that requires grad, and is differentiated again."""
    results = []
    for lib in (ta, torch):
        x, w = _leaves(lib, 11)
        weights = lib.tensor(np.random.default_rng(12).standard_normal((3, 2)), requires_grad=True)
        a, b, _ = _outputs(lib, x, w)
        lib.autograd.backward([a, b], [weights, None], create_graph=True)
        second = lib.autograd.grad((x.grad ** 2).sum() + (w.grad ** 2).sum(), [x, w, weights])
        results.append([g.numpy() for g in second])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)


@pytest.mark.parametrize("spelling", ["list", "one tensor", "dict", "twice"])
def test_backward_inputs_fills_only_those_tensors_leaves_or_not_as_torch(spelling):
    results = []
    for lib in (ta, torch):
        x, w = _leaves(lib, 7)
        hidden = x @ w
        loss = (hidden.tanh() * hidden).sum()
        inputs = {"list": [hidden, w], "one tensor": hidden, "dict": {"h": hidden, "w": w}, "twice": [w, hidden, w]}
        loss.backward(inputs=inputs[spelling])
        assert x.grad is None  # (a leaf not asked for keeps no gradient)
        results.append([hidden.grad.numpy(), None if w.grad is None else w.grad.numpy()])
    assert (results[0][1] is None) == (results[1][1] is None) == (spelling == "one tensor")
    for ours, theirs in zip(*results):
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, **TOL)


def test_autograd_backward_inputs_accumulates_as_torch():
    results = []
    for lib in (ta, torch):
        x, w = _leaves(lib, 8)
        a, b, _ = _outputs(lib, x, w)
        lib.autograd.backward([a, b], _upstream(lib, 8)[:2], retain_graph=True, inputs=[w])
        lib.autograd.backward(b, inputs=(w, x))  # (adds to w.grad; x.grad starts)
        results.append([x.grad.numpy(), w.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)


def _generator_and_critic(lib, seed):
    rng = np.random.default_rng(seed)
    g_weight = lib.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    d_weight = lib.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    fake = (lib.tensor(rng.standard_normal((5, 3))) @ g_weight).tanh()  # the generator's output, not detached
    return g_weight, d_weight, fake


@pytest.mark.parametrize("how", ["backward(inputs=...)", "autograd.grad"])
def test_the_nodes_behind_no_wanted_gradient_are_not_run_nor_freed_as_torch(how):
    """A GAN's step: the critic's loss is differentiated for the critic only (the generator's nodes behind the
    fake batch are not run, so not freed: torch runs only what a wanted gradient passes through); the
    generator's loss then goes back through those same nodes. Run as all nodes, the second pass would find them
    freed."""
    results = []
    for lib in (ta, torch):
        g_weight, d_weight, fake = _generator_and_critic(lib, 9)
        critic_loss = (fake @ d_weight).sum()
        if how == "autograd.grad":
            (critic_grad,) = lib.autograd.grad(critic_loss, d_weight)
        else:
            critic_loss.backward(inputs=[d_weight])
            critic_grad = d_weight.grad
        assert g_weight.grad is None
        generator_loss = -((fake @ d_weight).exp()).mean()
        generator_loss.backward()
        results.append([critic_grad.numpy(), g_weight.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOL)


def test_a_freed_node_is_refused_only_when_a_wanted_gradient_needs_it_as_torch():
    for lib in (ta, torch):
        g_weight, d_weight, fake = _generator_and_critic(lib, 10)
        (fake @ d_weight).sum().backward()  # frees the generator's nodes too
        with pytest.raises(RuntimeError, match="second time"):
            (fake @ d_weight).sum().backward()
        d_weight.grad = None
        (fake @ d_weight).sum().backward(inputs=[d_weight])  # the freed nodes are behind fake: not needed
        assert d_weight.grad is not None
