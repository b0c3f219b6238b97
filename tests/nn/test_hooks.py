"""Hooks without torch: gradients replaced by hand-derived amounts, handles that remove, and no cost while no hook
is registered (the pass gets a plain table; a module calls forward directly). (Against torch: test_hooks_torch.)"""

import gc

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


def test_without_hooks_the_pass_gets_a_plain_table_and_a_module_calls_forward_directly(monkeypatch):
    gc.collect()  # (the graphs of earlier tests, and their hooks, gone)
    table = {}
    assert hooks._registered == 0 and hooks.gradient_table(table) is table
    x = ta.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g):
        assert isinstance(hooks.gradient_table(table), hooks.HookedGradients)
    assert hooks._registered == 0 and hooks.gradient_table(table) is table
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
