"""Gradients of gradients (``create_graph=True``) against torch in float64: every op's second derivative,
third derivatives, Hessian-vector products through attention, a gradient penalty, a tensor passed as several
inputs of one op. (Without torch, every op's ``gradgradcheck``: test_higher_order.py.)"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd.function import Function
from tinyattn.nn import functional as F

from .test_higher_order import CASES

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOL = dict(rtol=1e-8, atol=1e-10)


def _second_derivative(lib, fn, data, u, v):
    """d/dx <v, d/dx <u, fn(x)>>, and the first derivative: the same program in either library."""
    x = lib.tensor(data, requires_grad=True)
    out = fn(lib, x)
    (g,) = lib.autograd.grad(out, x, lib.tensor(u), create_graph=True)
    (h,) = lib.autograd.grad(g, x, lib.tensor(v))
    return g.detach().numpy(), h.numpy()


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_second_derivative_matches_torch(name, fn):
    rng = np.random.default_rng(sum(map(ord, name)))
    data = rng.standard_normal((3, 4))
    u = rng.standard_normal(tuple(fn(torch, torch.tensor(data)).shape))
    v = rng.standard_normal((3, 4))
    g, h = _second_derivative(ta, fn, data, u, v)
    tg, th = _second_derivative(torch, fn, data, u, v)
    np.testing.assert_allclose(g, tg.numpy() if hasattr(tg, "numpy") else tg, **TOL)
    np.testing.assert_allclose(h, th, **TOL)


def test_third_derivative_matches_torch():
    data = np.array([0.3, -1.2, 0.8])

    def third(lib):
        x = lib.tensor(data, requires_grad=True)
        y = (x.sin() * x.exp() + x ** 4).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (t,) = lib.autograd.grad((h * h).sum(), x)
        return t.numpy()

    np.testing.assert_allclose(third(ta), third(torch), **TOL)


def test_third_derivative_through_linear_ops_matches_torch():
    """Reshape's backward is recorded as one op whose own backward is recorded again (the transposed map twice)."""
    data = np.random.default_rng(3).standard_normal((2, 3))

    def third(lib):
        x = lib.tensor(data, requires_grad=True)
        y = ((x * x * x).reshape(3, 2).T.sum(0) ** 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad((g.reshape(6) * lib.arange(6.0)).sum(), x, create_graph=True)
        (t,) = lib.autograd.grad(h.sum(), x)
        return t.numpy()

    np.testing.assert_allclose(third(ta), third(torch), **TOL)


@pytest.mark.parametrize("block_size, causal, lead, heads_kv, mask", [
    (128, False, (1, 2), 2, None), (2, False, (1, 2), 2, None), (2, True, (1, 2), 2, None), (3, False, (1, 2), 1, None),
    (2, False, (2, 4), 2, None), (3, False, (4,), 2, None), (2, False, (1, 2), 2, "float"),
    (3, False, (2, 4), 2, "bool"),
], ids=lambda c: str(c))
def test_hvp_through_flash_attention_matches_torch(block_size, causal, lead, heads_kv, mask):
    """Through the composed twin: key blocks, causal, grouped K/V heads (GQA: several query heads to one K/V head,
    with and without a batch dim), a float or bool mask."""
    rng = np.random.default_rng(block_size + causal + heads_kv + len(lead))
    kv_lead = lead[:-1] + (heads_kv,)
    q, k, v = (rng.standard_normal(s) for s in [lead + (5, 4), kv_lead + (5, 4), kv_lead + (5, 3)])
    u, w = rng.standard_normal(lead + (5, 3)), rng.standard_normal(lead + (5, 4))
    masks = {None: None, "float": rng.standard_normal((5, 5)), "bool": rng.random((1, 5)) < 0.7}
    masks["bool"][0, 0] = True  # (every query sees a key)

    def hvp(lib, attend):
        tq, tk, tv = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        m = None if masks[mask] is None else lib.tensor(masks[mask])
        out = attend(lib, tq, tk, tv, m)
        (gq,) = lib.autograd.grad((out * lib.tensor(u)).sum(), tq, create_graph=True)
        return [g.numpy() for g in lib.autograd.grad((gq * lib.tensor(w)).sum(), [tq, tk, tv])]

    def ours(lib, tq, tk, tv, m):
        return F.scaled_dot_product_attention(tq, tk, tv, m, is_causal=causal, block_size=block_size,
                                              enable_gqa=heads_kv != lead[-1])

    def theirs(lib, tq, tk, tv, m):
        return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, m, is_causal=causal,
                                                                enable_gqa=heads_kv != lead[-1])

    for a, b in zip(hvp(ta, ours), hvp(torch, theirs)):
        np.testing.assert_allclose(a, b, **TOL)


@pytest.mark.parametrize("masked", [False, True])
def test_hessian_vector_product_through_multihead_attention_matches_torch(masked):
    """Both paths, unmasked and with a key padding mask and a float attention mask."""
    rng = np.random.default_rng(11)
    padding = np.array([[False, False, False, True, True], [False, False, False, False, True]])
    attn = rng.standard_normal((5, 5))
    ours = ta.nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    data, u = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    direction = {name: rng.standard_normal(p.shape) for name, p in ours.named_parameters()}
    results = []
    # ours: the packed FlashAttention path, then the composed one. torch's fused path has no second derivative
    # ("derivative for aten::_scaled_dot_product_flash_attention_for_cpu_backward is not implemented"): its
    # composed path is the reference for both
    for lib, mha, need_weights in ((ta, ours, False), (ta, ours, True), (torch, theirs, True)):
        x = lib.tensor(data)
        masks = dict(key_padding_mask=lib.tensor(padding), attn_mask=lib.tensor(attn)) if masked else {}
        out, _ = mha(x, x, x, need_weights=need_weights, **masks)
        params = [p for _, p in mha.named_parameters()]
        grads = lib.autograd.grad((out * lib.tensor(u)).sum(), params, create_graph=True)
        dot = sum((g * lib.tensor(direction[n])).sum() for (n, _), g in zip(mha.named_parameters(), grads))
        # (out_proj.bias's gradient is a constant, the upstream summed: its Hessian part is zero, unused)
        results.append([h.numpy() for h in lib.autograd.grad(dot, params, materialize_grads=True)])
    for ours_hvp, theirs_hvp in ((results[0], results[2]), (results[1], results[2])):
        for a, b in zip(ours_hvp, theirs_hvp):
            np.testing.assert_allclose(a, b, **TOL)


def test_gradient_penalty_on_a_linear_matches_torch():
    """WGAN-GP: the norm of d critic / d input, pushed towards 1, is part of the loss the weights learn from."""
    rng = np.random.default_rng(5)
    ours = ta.nn.Linear(4, 1, dtype=ta.float64)
    theirs = torch.nn.Linear(4, 1, dtype=torch.float64)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    data = rng.standard_normal((6, 4))
    grads = []
    for lib, critic in ((ta, ours), (torch, theirs)):
        x = lib.tensor(data, requires_grad=True)
        hidden = critic(x).tanh()
        (dx,) = lib.autograd.grad(hidden.sum(), x, create_graph=True)
        penalty = ((dx.norm(2, dim=1) - 1) ** 2).mean()
        (hidden.mean() + 10 * penalty).backward()
        grads.append([p.grad.numpy() for p in critic.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, **TOL)


def test_backward_create_graph_makes_grad_differentiable_as_torch():
    data = np.array([0.5, -1.5, 2.0])
    results = []
    for lib in (ta, torch):
        x = lib.tensor(data, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        first = x.grad
        assert first.requires_grad
        (x * x).sum().backward(create_graph=True)  # accumulates: x.grad = 3x² + 2x, still with a graph
        (second,) = lib.autograd.grad(x.grad.sum(), x)
        results.append((first.detach().numpy().copy(), x.grad.detach().numpy(), second.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_grad_allow_unused_and_materialize_grads_as_torch():
    for lib in (ta, torch):
        x, unused = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="allow_unused"):
            lib.autograd.grad((x * x).sum(), [x, unused])
        assert lib.autograd.grad((x * x).sum(), [x, unused], allow_unused=True)[1] is None
        zeros = lib.autograd.grad((x * x).sum(), [x, unused], materialize_grads=True)[1]
        np.testing.assert_array_equal(zeros.numpy(), [0.0])


def test_grad_outputs_with_a_graph_are_differentiated_as_torch():
    """With create_graph, the gradient is a function of grad_outputs too (a vector-Jacobian product's vector)."""
    data, u = np.array([[0.2, -0.4], [1.1, 0.3]]), np.array([0.7, -0.2])
    results = []
    for lib in (ta, torch):
        x, w = lib.tensor(data, requires_grad=True), lib.tensor(u, requires_grad=True)
        (g,) = lib.autograd.grad((x @ x)[0], x, w, create_graph=True)
        results.append([t.numpy() for t in lib.autograd.grad((g * g).sum(), [x, w])])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_grad_outputs_of_another_dtype_with_a_graph_are_cast_as_torch():
    """A float64 grad_outputs that requires grad, for a float32 output: the gradient is float32 (as the input), and
    it is still a function of grad_outputs (differentiated back in float64)."""
    rng = np.random.default_rng(11)
    data, u = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4)
    results = []
    for lib in (ta, torch):
        x, w = lib.tensor(data, requires_grad=True), lib.tensor(u, requires_grad=True)
        (g,) = lib.autograd.grad((x * x.sin()).clone(), x, w, create_graph=True)  # (clone: passes dout on as is)
        (dw,) = lib.autograd.grad((g * g).sum(), w)
        results.append((g.dtype, dw.dtype, g.detach().numpy(), dw.numpy()))
    (g_dtype, dw_dtype, g, dw), (_, _, g_torch, dw_torch) = results
    assert (str(g_dtype), str(dw_dtype)) == ("float32", "float64")
    np.testing.assert_allclose(g, g_torch, rtol=1e-6)
    np.testing.assert_allclose(dw, dw_torch, rtol=1e-6)


def test_autograd_backward_takes_grad_tensors_retain_graph_and_create_graph_as_torch():
    """``autograd.backward(tensors, grad_tensors, retain_graph, create_graph)``: each argument reaches the backward
    pass (a second pass through the same graph; a non-scalar output's weights; a .grad that can be differentiated)."""
    rng = np.random.default_rng(12)
    data, u = rng.standard_normal(3), rng.standard_normal(3)
    results = []
    for lib in (ta, torch):
        x = lib.tensor(data, requires_grad=True)
        y = x * x * x
        lib.autograd.backward(y, lib.tensor(u), retain_graph=True)
        lib.autograd.backward([y], [lib.tensor(u)], None, True)  # (positional, one-element lists; create_graph)
        assert x.grad.requires_grad
        (second,) = lib.autograd.grad(x.grad.sum(), x)
        results.append((x.grad.detach().numpy(), second.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_backward_create_graph_with_a_gradient_that_requires_grad_as_torch():
    """``y.backward(w, create_graph=True)`` for a non-scalar ``y``: ``x.grad`` is a function of ``w`` too."""
    rng = np.random.default_rng(13)
    data, u = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    results = []
    for lib in (ta, torch):
        x, w = lib.tensor(data, requires_grad=True), lib.tensor(u, requires_grad=True)
        (x.tanh() * x).backward(w, create_graph=True)
        results.append([t.numpy() for t in lib.autograd.grad((x.grad ** 2).sum(), [x, w])])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **TOL)


def test_second_derivative_across_dtypes_matches_torch():
    """float32 and float64 inputs mixed (a broadcast product, cat, stack): each first gradient comes back in its
    input's dtype, with a graph, through the casts the backward formulas make on Tensors."""
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4)
    u = rng.standard_normal(3)
    results = []
    for lib in (ta, torch):
        x, w = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = ((x * w).sin() + lib.cat([x, w[None] * w[None]], 0)[:3] * lib.stack([x[0], w], 0).exp().sum(0)).sum(1)
        gx, gw = lib.autograd.grad(out, [x, w], lib.tensor(u), create_graph=True)
        assert (str(gx.dtype).split(".")[-1], str(gw.dtype).split(".")[-1]) == ("float32", "float64")
        hx, hw = lib.autograd.grad((gx * gx).sum() + (gw * gw).sum(), [x, w])
        results.append([t.detach().numpy() for t in (gx, gw, hx, hw)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _softplus_of_yours(kind):
    """A Function of a user's, on arrays, whose backward reads its output: ``y = log(1 + e^x)``, ``dx = dy (1 − e^−y)``
    (written in operations that arrays and Tensors share, so that create_graph records it). Made when a test runs,
    not when the module is imported, since the class statement is what notes where forward saves its output.

    kind: "noted" (its forward notes it), "declared" (the class says saved_output, as tinyattn's ops do),
    "plain" (forward and backward without @staticmethod), "inherited" (a subclass that keeps its parent's forward).
    """

    def forward(ctx, x):
        out = np.logaddexp(0.0, x)
        ctx.save_for_backward(x * 0.0, out)  # (a constant first, so the output is not the first saved array)
        return out

    def backward(ctx, grad_output):
        _, out = ctx.saved_tensors
        return grad_output * (1.0 - np.exp(-out))

    methods = {"forward": forward, "backward": backward}
    if kind != "plain":
        methods = {name: staticmethod(f) for name, f in methods.items()}
    body = {"on_arrays": True, **methods, **({"saved_output": 1} if kind == "declared" else {})}
    op = type("SoftplusOfYours", (Function,), body)
    return type("SoftplusSubclass", (op,), {}) if kind == "inherited" else op


@pytest.mark.parametrize("kind", ["noted", "declared", "plain", "inherited"])
def test_second_derivative_through_an_output_a_function_of_yours_saved_matches_torch(kind):
    """The output a forward of yours saved is read as the output (its history and all) when its backward is
    recorded: noted by its forward, or declared by the class; taken as a constant, d²y/dx² would be 0 here."""
    op = _softplus_of_yours(kind)
    rng = np.random.default_rng(15)
    data, u, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    g, h = _second_derivative(ta, lambda lib, x: op.apply(x) * x, data, u, v)
    tg, th = _second_derivative(torch, lambda lib, x: torch.nn.functional.softplus(x) * x, data, u, v)
    np.testing.assert_allclose(g, tg, **TOL)
    np.testing.assert_allclose(h, th, **TOL)
    assert ta.autograd.gradgradcheck(op.apply, [ta.tensor(data, requires_grad=True)])


def _square(x):
    return x[:, :3] * 1.0  # (3, 3): one tensor, used as both operands below


def _query(x):
    return x.reshape(1, 3, 4) * 1.0


def _mha(lib, x):
    mha = lib.nn.MultiheadAttention(4, 2, batch_first=True, dtype=lib.float64)
    rng = np.random.default_rng(5)
    with lib.no_grad():
        for _, p in sorted(mha.named_parameters()):
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
    q = _query(x)
    # (torch's fused path has no second derivative: its composed one, need_weights=True, is the reference)
    return mha(q, q, q, need_weights=lib is torch)[0]


# (name, function of (library, x)) in which one tensor is passed as several inputs of one op
REPEATED = [
    ("add", lambda lib, x: (x + x) * x),
    ("sub", lambda lib, x: (x - x) * x + x),
    ("mul", lambda lib, x: x * x),
    ("div", lambda lib, x: (x / x) * x),
    ("pow", lambda lib, x: (lambda a: a ** a)(x * x + 0.5)),
    ("maximum_minimum", lambda lib, x: lib.maximum(x, x) * x + lib.minimum(x, x)),
    ("where", lambda lib, x: lib.where(x > 0, x, x) * x),
    ("matmul", lambda lib, x: (lambda s: s @ s)(_square(x))),
    ("bmm_dot_outer_mv", lambda lib, x: (lambda s: lib.bmm(s[None], s[None])[0] + lib.outer(s[0], s[0])
                                           + lib.mv(s, s[1])[:, None] + lib.dot(s[2], s[2]))(_square(x))),
    ("linear", lambda lib, x: (lambda s: lib.nn.functional.linear(s, s, s[0]))(_square(x))),
    ("einsum", lambda lib, x: lib.einsum("ij,ij->i", x, x)),
    ("cat_stack", lambda lib, x: lib.cat([x, x], 1) * lib.cat([x, x], 1) + lib.stack([x, x]).sum(0).repeat(1, 2)),
    ("losses", lambda lib, x: lib.nn.functional.mse_loss(x, x) + lib.nn.functional.l1_loss(x * x, x * x) + x.sum()),
    ("scaled_dot_product_attention", lambda lib, x: (lambda q: lib.nn.functional.scaled_dot_product_attention(
        q, q, q))(_query(x))),
    ("scaled_dot_product_attention_causal", lambda lib, x: (lambda q: lib.nn.functional.scaled_dot_product_attention(
        q, q, q, is_causal=True))(_query(x))),
    ("scaled_dot_product_attention_q_k", lambda lib, x: (lambda q: lib.nn.functional.scaled_dot_product_attention(
        q, q, q.exp()))(_query(x))),
    ("multihead_attention_self", _mha),
]


@pytest.mark.parametrize("name, fn", REPEATED, ids=[c[0] for c in REPEATED])
def test_a_tensor_passed_as_several_inputs_of_one_op_matches_torch_at_first_and_second_order(name, fn):
    """Each input position gets the gradient through that position only, and the engine adds them: at first
    order, with and without create_graph, and at second order."""
    rng = np.random.default_rng(sum(map(ord, name)) + 7)
    data = rng.standard_normal((3, 4))
    u = rng.standard_normal(tuple(fn(torch, torch.tensor(data)).shape))
    v = rng.standard_normal((3, 4))
    g, h = _second_derivative(ta, fn, data, u, v)
    tg, th = _second_derivative(torch, fn, data, u, v)
    np.testing.assert_allclose(g, tg, **TOL)
    np.testing.assert_allclose(h, th, **TOL)
    x = ta.tensor(data, requires_grad=True)
    (plain,) = ta.autograd.grad(fn(ta, x), x, ta.tensor(u))
    np.testing.assert_allclose(plain.numpy(), tg, **TOL)


@pytest.mark.parametrize("cut", ["detach", "data"])
def test_an_input_and_its_detached_copy_in_one_op_match_torch_at_second_order(cut):
    """The detached copy (``x.detach()``, ``x.data``) shares the input's values, not its history: no gradient
    flows through it."""
    rng = np.random.default_rng(8)
    data, u, v = (rng.standard_normal((3, 4)) for _ in range(3))

    def detached(t):
        return t.detach() if cut == "detach" else t.data

    def program(lib, x):
        return (x * detached(x)).exp() + lib.nn.functional.scaled_dot_product_attention(
            _query(x), detached(_query(x)), _query(x)).reshape(3, 4)

    for ours, theirs in zip(_second_derivative(ta, program, data, u, v),
                            _second_derivative(torch, program, data, u, v)):
        np.testing.assert_allclose(ours, theirs, **TOL)
