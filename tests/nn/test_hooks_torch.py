"""Hooks against torch in float64: tensor hooks (reading and replacing gradients, on leaves and inside the graph,
with retain_grad, under create_graph), Module forward, forward-pre and full backward hooks, in torch's order,
with handles that remove them; the hooks a gradient-visualisation tutorial uses on MultiheadAttention."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-10, atol=1e-12)


def _numpy(x):
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [_numpy(t) for t in x]
    return x.detach().numpy().copy() if hasattr(x, "detach") else x


def _same(a, b):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, **TOL)
    else:
        assert a == b, (a, b)


def _both(program):
    return program(ta), program(torch)


def test_tensor_hooks_read_and_replace_gradients_as_torch():
    def program(lib):
        rng = np.random.default_rng(0)
        log = []
        x = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
        w = lib.tensor(rng.standard_normal((4, 2)), requires_grad=True)
        x.register_hook(lambda g: log.append(("x", _numpy(g))) or g * 2)
        h = x @ w
        h.retain_grad()
        h.register_hook(lambda g: log.append(("h", _numpy(g))))  # reads only
        h.register_hook(lambda g: g + 1)  # then replaces: what flows on, and what h.grad keeps
        y = h.tanh()
        removed = y.register_hook(lambda g: g * 100)
        removed.remove()
        (y * lib.tensor(rng.standard_normal((3, 2)))).sum().backward()
        return log, _numpy(x.grad), _numpy(w.grad), _numpy(h.grad)

    _same(*_both(program))


def test_tensor_hooks_run_in_autograd_grad_and_under_create_graph_as_torch():
    def program(lib):
        rng = np.random.default_rng(1)
        x = lib.tensor(rng.standard_normal(5), requires_grad=True)
        y = x.sin() * x
        y.register_hook(lambda g: g * y.detach())
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return _numpy(g), _numpy(h)

    _same(*_both(program))


def _network(lib, rng):
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    return net


def test_module_hooks_run_in_torchs_order_and_replace_what_they_return():
    def program(lib):
        rng = np.random.default_rng(2)
        net = _network(lib, rng)
        log = []
        net[0].register_forward_pre_hook(lambda m, a: log.append(("pre0", _numpy(a))) or (a[0] * 2,))
        net[0].register_forward_pre_hook(lambda m, a: log.append(("pre0-first", _numpy(a))), prepend=True)
        net[1].register_forward_hook(lambda m, a, o: log.append(("forward1", _numpy(a), _numpy(o))) or o * 3)
        net[2].register_forward_hook(lambda m, a, k, o: log.append(("forward2-kwargs", k)), with_kwargs=True)
        net[2].register_full_backward_pre_hook(lambda m, go: log.append(("backward-pre2", _numpy(go))) or
                                               (go[0] * 0.5,))
        net[1].register_full_backward_hook(lambda m, gi, go: log.append(("backward1", _numpy(gi), _numpy(go))) or
                                           (gi[0] + 1,))
        net[0].register_full_backward_hook(lambda m, gi, go: log.append(("backward0", _numpy(gi), _numpy(go))))
        gone = net[2].register_forward_hook(lambda m, a, o: o * 1000)
        gone.remove()
        x = lib.tensor(rng.standard_normal((5, 3)), requires_grad=True)
        out = net(x)
        (out * lib.tensor(rng.standard_normal((5, 2)))).sum().backward()
        return log, _numpy(out), _numpy(x.grad), [_numpy(p.grad) for p in net.parameters()]

    _same(*_both(program))


def test_a_backward_hook_on_a_first_layer_gets_none_for_an_input_without_a_gradient():
    def program(lib):
        rng = np.random.default_rng(3)
        net = _network(lib, rng)
        log = []
        net[0].register_full_backward_hook(lambda m, gi, go: log.append((_numpy(gi), _numpy(go))))
        net(lib.tensor(rng.standard_normal((2, 3)))).sum().backward()
        return log

    _same(*_both(program))


@pytest.mark.parametrize("need_weights", [False, True])
def test_hooks_on_multihead_attention_see_what_torchs_do(need_weights):
    """A visualisation tutorial's hooks: the attention output and weights on the way forward, the gradients of the
    output (the weights output unused: None) and of the three inputs on the way back."""
    def program(lib):
        rng = np.random.default_rng(4)
        mha = lib.nn.MultiheadAttention(4, 2, batch_first=True, dtype=lib.float64)
        with lib.no_grad():
            for _, p in sorted(mha.named_parameters()):
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
        log = []
        mha.register_forward_hook(lambda m, a, o: log.append(("forward", _numpy(o[0]), _numpy(o[1]))))
        mha.register_full_backward_hook(lambda m, gi, go: log.append(("backward", _numpy(gi), _numpy(go))))
        q = lib.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
        k = lib.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
        out, _ = mha(q, k, k, need_weights=need_weights)
        (out * lib.tensor(rng.standard_normal((2, 3, 4)))).sum().backward()
        return log, _numpy(q.grad), _numpy(k.grad)

    _same(*_both(program))


def test_refusals_are_torchs():
    for lib in (ta, torch):
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)
        x = lib.ones(2, requires_grad=True)
        x.register_hook(lambda g: g[:1])
        with pytest.raises(RuntimeError, match="hook 'hook'|has changed the size of value"):
            (x * 2).sum().backward()
