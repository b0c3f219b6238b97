"""trace(): the recorded backward of MultiheadAttention names every step, and its numbers are the real ones."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.explain.trace import render, trace


def traced_mha(seed=0, **forward_kwargs):
    ta.manual_seed(seed)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    rng = np.random.default_rng(seed)
    x = ta.tensor(rng.standard_normal((2, 3, 8)), requires_grad=True).named("X")
    with trace() as steps:
        out, _ = mha(x, x, x, need_weights=True, **forward_kwargs)
        out.backward(rng.standard_normal(out.shape))
    return mha, x, steps


def test_every_parameter_gradient_is_a_step_with_the_real_shape_and_values():
    mha, x, steps = traced_mha()
    E = 8
    np.testing.assert_allclose(steps.gradient_of("W^O"), mha.out_proj.weight.grad)
    np.testing.assert_allclose(steps.gradient_of("b^O"), mha.out_proj.bias.grad)
    for i, name in enumerate(["W^Q", "W^K", "W^V"]):
        np.testing.assert_allclose(steps.gradient_of(name), mha.in_proj_weight.grad[i * E : (i + 1) * E])
    np.testing.assert_allclose(steps.gradient_of("in_proj_weight"), mha.in_proj_weight.grad)
    np.testing.assert_allclose(steps.gradient_of("X"), x.grad)  # the three contributions, summed
    for step in steps:
        for g in step.grads:
            assert g.shape == g.array.shape
            assert np.isclose(g.norm, np.linalg.norm(g.array))


def test_names_and_order_are_stable():
    _, _, steps = traced_mha()
    outputs = [s.output for s in steps]
    assert outputs[:10] == ["attn_output", "concat", "t1 (2, 3, 2, 4)", "heads", "P", "S", "QKᵀ", "Q_h",
                            "t2 (2, 3, 2, 4)", "Q"]
    assert [s.op for s in steps[:6]] == ["LinearFn", "Reshape", "Transpose", "MatMul", "Softmax", "Mul"]
    assert outputs == [s.output for s in traced_mha(seed=1)[2]]


def test_formulas_shapes_and_sources():
    _, _, steps = traced_mha()
    by_output = {s.output: s for s in steps}
    softmax = by_output["P"]
    assert softmax.forward == "P = softmax(S)"
    assert softmax.grads[0].formula == "dS = P ⊙ (dP − rowsum(dP ⊙ P))"
    assert softmax.grads[0].shape == (2, 2, 3, 3)
    assert softmax.source.startswith("tinyattn/autograd/core/ops/softmax.py:")
    path, line = softmax.source.split(" ")[0].split(":")
    with open(path, encoding="utf-8") as f:
        assert "def backward" in f.read().splitlines()[int(line) - 1]
    formulas = [g.formula for s in steps for g in s.grads]
    for expected in ["dP = dheads @ (V_h)ᵀ", "dV_h = Pᵀ @ dheads", "dQ_h = d(QKᵀ) @ K_h", "d(K_h)ᵀ = (Q_h)ᵀ @ d(QKᵀ)",
                     "dconcat = dattn_output W^O", "din_proj_weight[:8] += dW^Q  (zeros elsewhere)"]:
        assert expected in formulas
    assert "d(QKᵀ) = dS ⊙ 0.5" in formulas  # 1/sqrt(d_k) with d_k = 4


def test_mask_step_appears():
    _, _, steps = traced_mha(attn_mask=np.triu(np.ones((3, 3), dtype=bool), k=1))
    add = next(s for s in steps if s.output == "S_m")
    assert add.forward == "S_m = S + M"
    assert [g.formula for g in add.grads] == ["dS = dS_m"]  # the mask gets no gradient


def test_table_lists_every_gradient():
    _, _, steps = traced_mha()
    table = steps.table()
    assert table.count("\n") == 1 + sum(len(s.grads) for s in steps)
    assert "norm" in table and "norm" not in steps.table(norms=False)


def test_trace_accumulates_like_backward():
    mha, x, _ = traced_mha()
    ta.manual_seed(0)
    twin = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    rng = np.random.default_rng(0)
    x2 = ta.tensor(rng.standard_normal((2, 3, 8)), requires_grad=True)
    out, _ = twin(x2, x2, x2, need_weights=True)
    out.backward(rng.standard_normal(out.shape))
    np.testing.assert_allclose(x.grad, x2.grad)


def test_render_and_errors():
    assert render("d{0} = d{out} @ {1}ᵀ", "C", ["A", "Bᵀ"], 0, None, (2, 2)) == "dA = dC @ B"
    with pytest.raises(RuntimeError, match="leaf"), trace():
        ta.ones(2, requires_grad=True).backward(np.ones(2))


def _second_order(x_data, u_data):
    """A create_graph pass through softmax, then the gradient of the gradient, traced."""
    x = ta.tensor(x_data, requires_grad=True).named("X")
    with trace() as steps:
        p = x.softmax(dim=-1).named("P")
        loss = (p * ta.tensor(u_data)).sum().named("L")
        (g,) = ta.autograd.grad(loss, x, create_graph=True)
        (g * g).sum().backward()
    return x, steps


def test_a_second_order_trace_names_the_backward_each_step_differentiates():
    rng = np.random.default_rng(0)
    x, steps = _second_order(rng.standard_normal((2, 3)), rng.standard_normal((2, 3)))
    softmax_first = next(s for s in steps if s.op == "Softmax")
    formula = "dX = P ⊙ (dP − rowsum(dP ⊙ P))"
    assert [g.formula for g in softmax_first.grads] == [formula] and not softmax_first.differentiates
    inside = [s for s in steps if s.differentiates.startswith("the backward of Softmax")]
    # softmax's backward, as recorded ops: P ⊙ (...), the difference, the row sum, dP ⊙ P
    assert [s.op for s in inside] == ["Mul", "Sub", "Sum", "Mul"]
    assert all(s.differentiates == f"the backward of Softmax (step {softmax_first.index}): {formula}"
               for s in inside)
    text = str(steps)
    assert f"differentiates the backward of Softmax (step {softmax_first.index}): {formula}" in text
    assert "= dX ⊙ dX" in text  # (the gradient the first pass computed, a tensor now, is called dX)
    # the second pass's own gradients are d₂: of the forward's P, d₂P; of the first pass's dP, d₂(dP)
    assert all(s.order == 1 for s in steps[:softmax_first.index])
    assert all(s.order == 2 for s in steps[softmax_first.index:])
    assert "d₂P = " in text and "d₂(dX) arrives" in text
    # the gradients that reach X in the trace add up to the second derivative backward() left in X.grad
    second = [g.array for s in steps if s.index > softmax_first.index for g in s.grads if g.name == "X"]
    np.testing.assert_allclose(sum(second), x.grad.numpy(), rtol=1e-12)


def test_a_second_order_trace_through_attention_renders_every_view():
    """Every step of the second pass through MultiheadAttention is either the outer loss's or names the first
    pass's backward it differentiates; the text, the table and the page all render."""
    ta.manual_seed(0)
    mha = ta.nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    x = ta.randn(2, 3, 8, dtype=ta.float64, requires_grad=True).named("X")
    with trace() as steps:
        out, _ = mha(x, x, x)
        (g,) = ta.autograd.grad((out * out).sum(), x, create_graph=True)
        first = len(steps)  # (the first pass's steps)
        (g * g).sum().backward()
    second = [s for s in steps if s.index > first]
    # (the loss g·g, the sums of gradients over uses, and the slicing of the weights, which the first pass did not
    # reach, are ops of their own, named by their own formula)
    assert second and {s.op for s in second if not s.differentiates} == {"Sum", "Mul", "Add", "GetItem"}
    assert {s.differentiates.split(" (")[0] for s in second if s.differentiates} >= {
        "the backward of Softmax", "the backward of MatMul", "the backward of LinearFn", "the forward's Softmax again",
        "the backward of Reshape", "the forward's LinearFn again"}
    assert str(steps) and steps.table() and "<html" in steps.html()
    assert "d₂(dattn_output) = " in str(steps)  # (the second pass's gradient of a first pass's gradient)
