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
    assert softmax.source.startswith("tinyattn/autograd/ops/softmax.py:")
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
