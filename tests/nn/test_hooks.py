"""Hooks without torch: gradients replaced by hand-derived amounts, handles that remove, and no cost while no hook
is registered (the pass gets a plain table; a module calls forward directly). (Against torch: test_hooks_torch.)"""


import numpy as np

import tinyattn as ta
from tinyattn.autograd import hooks


def test_a_hook_that_doubles_a_leafs_gradient_doubles_it_and_remove_takes_it_off():
    x = ta.tensor([1.0, -2.0, 3.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 2)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy())  # d(x²)/dx = 2x, doubled
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_a_hook_inside_the_graph_changes_what_flows_to_the_ops_before_it():
    x = ta.tensor([0.5, 1.5], requires_grad=True)
    y = x * 3.0
    y.register_hook(lambda g: ta.ones(2, dtype=g.dtype) * 10.0)  # dL/dy replaced by 10
    y.exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])  # 10 * dy/dx


def test_a_node_without_hooks_runs_none_and_a_module_without_hooks_calls_forward_directly(monkeypatch):
    x = ta.ones(2, requires_grad=True)
    y = x * 2.0
    assert y.grad_fn.tensor_hooks is None and x.gradient_edge().tensor_hooks is None
    handle = y.register_hook(lambda g: g * 10)
    (y * 1.0).sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])  # the hook ran: 10 * dy/dx
    handle.remove()
    assert not y.grad_fn.tensor_hooks
    monkeypatch.setattr(hooks, "run", lambda *a: (_ for _ in ()).throw(AssertionError("hooked")))
    x.grad = None
    (y * 1.0).sum().backward()  # (no hook left: hooks.run is never reached)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    layer = ta.nn.Linear(2, 2)
    assert layer._hooks is None
    monkeypatch.setattr(ta.nn.module_hooks, "call", lambda *a: (_ for _ in ()).throw(AssertionError("hooked")))
    layer(ta.ones(1, 2))  # (no hook: module_hooks.call is never reached)


def test_a_full_backward_hook_gets_the_layers_input_and_output_gradients():
    layer = ta.nn.Linear(2, 1, bias=False, dtype=ta.float64)
    with ta.no_grad():
        layer.weight.copy_(ta.tensor([[2.0, -1.0]]))
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi[0].numpy(), go[0].numpy())))
    x = ta.tensor([[1.0, 1.0]], dtype=ta.float64, requires_grad=True)
    (layer(x) * 3.0).sum().backward()
    (grad_input, grad_output), = seen
    np.testing.assert_allclose(grad_output, [[3.0]])  # dL/dy
    np.testing.assert_allclose(grad_input, [[6.0, -3.0]])  # dL/dx = dL/dy W
