"""The graded computations. Each runs in the student's process and returns ``{name: array}``.

A probe only *computes*: it calls the package under test on inputs drawn from ``seed`` and
hands back what came out (outputs, gradients, weights after a step). It decides nothing.
The grader, in its own process, runs the same probe with the same seed on the reference,
and ``judges.py`` compares the two (and checks properties of the student's arrays). The
seed is drawn anew for every grading, so no answer can be looked up in advance.

Each probe carries its task, points and visibility: ``@task(id=..., points=...)`` (from
``probing.py``, as every course's probes), read from this file's source (``grading.scan_tests``)
before anything runs. ``hidden=True`` probes grade like the rest; their results are shown to
students only once published.
The public tests a student runs at home are ``check_tasks.py``; the graded probes check
the same things, each against the reference.
"""

import numpy as np
from probing import backward_from_random, grads, large_gradient, leaves, rng_for, task

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.nn import functional as F

# -- week 1: broadcasting and matmul ----------------------------------------------


@task(id="unbroadcast", points=2)
def test_broadcast_gradients(seed):
    """the gradients of a * b + a, for inputs of broadcast shapes, equal the reference's"""
    rng, out = rng_for(seed), {}
    for n, (sa, sb) in enumerate([((3, 4), (4,)), ((2, 3, 4), (3, 1)), ((1, 4), (3, 1)), ((), (2, 2))]):
        a, b = leaves(rng, sa, sb)
        backward_from_random(a * b + a, rng)
        out |= grads(f"case{n}_", a, b)
    return out


@task(id="unbroadcast", points=1)
def test_broadcast_gradient_counts_the_copies(seed):
    """an input broadcast k times gets the sum of its k gradients, in its own shape"""
    rng = rng_for(seed)
    a = ta.tensor(np.zeros((1, 4)), requires_grad=True)
    b = ta.tensor(np.zeros((3, 1)), requires_grad=True)
    (a + b).backward(np.ones((3, 4)) + rng.integers(0, 3, (3, 4)))
    return {"a_grad": a.grad.numpy(), "b_grad": b.grad.numpy()}


@task(id="matmul_backward", points=2)
def test_matmul_gradients(seed):
    """the gradients of a @ b, batched, broadcast and with 1-D operands, equal the reference's"""
    rng, out = rng_for(seed), {}
    cases = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)), ((3, 4), (4,))]
    for n, (sa, sb) in enumerate(cases):
        a, b = leaves(rng, sa, sb)
        backward_from_random(a @ b, rng)
        out |= grads(f"case{n}_", a, b)
    return out


@task(id="linear_forward", points=1)
def test_linear_is_x_times_w_transposed_plus_b(seed):
    """F.linear's output, with and without a bias, and its gradients equal the reference's"""
    rng = rng_for(seed)
    x, w, b = leaves(rng, (2, 3, 4), (5, 4), (5,))
    y = F.linear(x, w, b)
    backward_from_random(y, rng)
    return {"y": y.detach().numpy(), "y_without_bias": F.linear(x, w).detach().numpy(),
            **grads("grad", x, w, b)}


@task(id="shape_backward", points=1)
def test_reshape_and_transpose_gradients(seed):
    """the gradients through reshape, transpose and both equal the reference's"""
    rng, out = rng_for(seed), {}
    for n, f in enumerate([lambda t: t.reshape(6, 4), lambda t: t.transpose(0, 2),
                           lambda t: t.transpose(1, 2).reshape(2, 12)]):
        (x,) = leaves(rng, (2, 3, 4))
        backward_from_random(f(x), rng)
        out[f"case{n}"] = x.grad.numpy()
    return out


# -- week 2: softmax and the loss --------------------------------------------------


@task(id="softmax_backward", points=2)
def test_softmax_gradients(seed):
    """the gradient of softmax along each dim equals the reference's"""
    rng, out = rng_for(seed), {}
    for dim in (0, 1, -1):
        (x,) = leaves(rng, (2, 3, 4))
        backward_from_random(x.softmax(dim), rng)
        out[f"dim{dim}"] = x.grad.numpy()
    return out


@task(id="log_softmax_backward", points=1)
def test_log_softmax_gradients(seed):
    """the gradient of log_softmax along each dim equals the reference's"""
    rng, out = rng_for(seed), {}
    for dim in (1, -1):
        (x,) = leaves(rng, (2, 3, 4))
        backward_from_random(x.log_softmax(dim), rng)
        out[f"dim{dim}"] = x.grad.numpy()
    return out


@task(id="log_softmax_backward", points=1)
def test_cross_entropy_gradient(seed):
    """cross-entropy's value and its gradient with respect to the logits equal the reference's"""
    rng = rng_for(seed)
    (logits,) = leaves(rng, (5, 6))
    loss = F.cross_entropy(logits, rng.integers(0, 6, 5))
    loss.backward()
    return {"loss": loss.detach().numpy(), "logits_grad": logits.grad.numpy()}


# -- week 3: attention ---------------------------------------------------------------


def _mask(rng, rows, cols):
    """An additive mask with -inf at random places, every row keeping its first key."""
    mask = np.where(rng.random((rows, cols)) > 0.6, -np.inf, 0.0)
    mask[:, 0] = 0.0
    return mask


@task(id="attention", points=2)
def test_attention_gradients_with_and_without_mask(seed):
    """attention's output, weights and gradients, with and without a mask, equal the reference's"""
    rng, out = rng_for(seed), {}
    for n, masked in enumerate((False, True)):
        q, k, v = leaves(rng, (2, 3, 4), (2, 5, 4), (2, 5, 6))
        result, p = F.attention(q, k, v, ta.tensor(_mask(rng, 3, 5)) if masked else None)
        backward_from_random(result, rng)
        out |= {f"case{n}_out": result.detach().numpy(), f"case{n}_p": p.detach().numpy(),
                **grads(f"case{n}_grad", q, k, v)}
    return out


@task(id="attention", points=1)
def test_attention_weights_are_distributions_over_allowed_keys(seed):
    """each row of weights sums to one over the allowed keys, and the output averages the values"""
    rng = rng_for(seed)
    q, k, v = leaves(rng, (3, 4), (5, 4), (5, 2))
    blocked = np.zeros((3, 5), dtype=bool)
    blocked[:, 3:] = True
    result, p = F.attention(q, k, v, ta.tensor(np.where(blocked, -np.inf, 0.0)))
    return {"out": result.detach().numpy(), "p": p.detach().numpy(), "v": v.detach().numpy(), "blocked": blocked}


# -- week 4: multi-head attention ------------------------------------------------------


def _mha(rng, **options):
    """A float64 MultiheadAttention whose every parameter is drawn from ``rng``."""
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64, **options)
    with ta.no_grad():
        for p in mha.parameters():
            p.copy_(ta.tensor(rng.standard_normal(p.shape) * 0.5))
    return mha


def _positions(rng):
    """Locality and equivariance: outputs under an only-self mask and under permuted positions."""
    mha = _mha(rng)
    x = rng.standard_normal((2, 4, 8))
    only_self = ~np.eye(4, dtype=bool)  # True = masked out
    x2 = x.copy()
    x2[:, 3] += 1.0  # change position 3 only
    perm = rng.permutation(4)
    xp = x[:, perm]

    def run(inp, mask=None):
        return mha(ta.tensor(inp), ta.tensor(inp), ta.tensor(inp), attn_mask=mask)[0].detach().numpy()

    return {"self_only": run(x, only_self), "self_only_changed": run(x2, only_self), "plain": run(x),
            "permuted": run(xp), "perm": perm}


def _gradients(rng):
    mha = _mha(rng)
    x = ta.tensor(rng.standard_normal((2, 3, 8)), requires_grad=True)
    out, w = mha(x, x, x, average_attn_weights=False)
    backward_from_random(out, rng)
    return {"out": out.detach().numpy(), "weights": w.detach().numpy(), "x_grad": x.grad.numpy(),
            **{f"{name}_grad": p.grad.numpy() for name, p in mha.named_parameters()}}


@task(id="mha_split_heads", points=1)
def test_split_heads_keeps_positions_apart(seed):
    """a query that may see only itself depends on its own input; permuting positions permutes the output"""
    return _positions(rng_for(seed))


@task(id="mha_split_heads", points=1)
def test_split_heads_uses_the_projections(seed):
    """the output, the per-head weights and every parameter's gradient equal the reference's"""
    return _gradients(rng_for(seed))


@task(id="mha_split_heads", points=1)
def test_split_heads_for_any_number_of_keys(seed):
    """keys and values may be more or fewer than the queries: cross-attention, add_bias_kv, add_zero_attn"""
    rng, out = rng_for(seed), {}
    cases = [({}, 3, 5, (2,)), ({"add_bias_kv": True}, 4, 4, (2,)), ({"add_zero_attn": True}, 4, 4, (2,)),
             ({"kdim": 6, "vdim": 5}, 2, 3, (2,)), ({}, 3, 5, ())]  # the last one unbatched
    for n, (options, L, S, batch) in enumerate(cases):
        mha = _mha(rng, **options)
        q, k, v = leaves(rng, (*batch, L, 8), (*batch, S, options.get("kdim", 8)), (*batch, S, options.get("vdim", 8)))
        result, weights = mha(q, k, v)
        backward_from_random(result, rng)
        out |= {f"case{n}_out": result.detach().numpy(), f"case{n}_weights": weights.detach().numpy(),
                **grads(f"case{n}_grad", q, k, v)}
    return out


@task(id="mha_merge_heads", points=1)
def test_merge_heads_keeps_positions_apart(seed):
    """a query that may see only itself depends on its own input; permuting positions permutes the output"""
    return _positions(rng_for(seed))


@task(id="mha_merge_heads", points=1)
def test_mha_gradients(seed):
    """the output, the per-head weights and every parameter's gradient equal the reference's"""
    return _gradients(rng_for(seed))


# -- week 5: training ----------------------------------------------------------------


@task(id="adam_step", points=1)
def test_adam_first_step_moves_each_weight_by_lr(seed):
    """at step 1 the bias-corrected moments are g and g², so each weight moves lr against its gradient"""
    rng = rng_for(seed)
    p = nn.Parameter(rng.standard_normal((3, 4)))
    start = p.detach().numpy().copy()
    # |g| in [0.5, 2]: far from Adam's eps (1e-8), where the step is lr * g / (|g| + eps), not lr
    p.grad = ta.tensor(rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.5, 2.0, (3, 4)))
    g = p.grad.numpy().copy()
    optim.Adam([p], lr=0.01).step()
    return {"start": start, "grad": g, "after": p.detach().numpy()}


@task(id="adam_step", points=1)
def test_adam_minimises_a_quadratic(seed):
    """300 Adam steps on sum(p²) bring every weight near zero, along the reference's path"""
    p = nn.Parameter(rng_for(seed).uniform(-5, 5, 5))  # (from beyond about ±10, 300 steps of 0.1 fall short)
    opt = optim.Adam([p], lr=0.1)
    for _ in range(300):
        p.grad = 2 * p.detach()  # gradient of sum(p^2)
        opt.step()
    return {"p": p.detach().numpy()}


# -- hidden: one computation per task, compared with the reference ------------------------


@task(id="unbroadcast", points=2, hidden=True)
def test_unbroadcast_reference(seed):
    rng = rng_for(seed)
    a, b, c = leaves(rng, (2, 3, 4), (3, 1), (4,))
    backward_from_random(a * b + c, rng)
    return grads("grad", a, b, c)


@task(id="matmul_backward", points=2, hidden=True)
def test_matmul_backward_reference(seed):
    rng = rng_for(seed)
    a, b, x, w = leaves(rng, (2, 3, 4), (4, 5), (5, 4), (2, 1, 4, 3))
    backward_from_random(a @ b, rng)
    backward_from_random(x @ w, rng)
    fixed = ta.tensor(rng.standard_normal((512, 512)))
    return {**grads("grad", a, b, x, w), "large_grad": large_gradient(rng, lambda big: big @ fixed, (512, 512))}


@task(id="linear_forward", points=1, hidden=True)
def test_linear_forward_reference(seed):
    x, w, b = leaves(rng_for(seed), (2, 3, 4), (5, 4), (5,))
    return {"y": F.linear(x, w, b).detach().numpy(), "y_without_bias": F.linear(x, w).detach().numpy()}


@task(id="shape_backward", points=1, hidden=True)
def test_shape_backward_reference(seed):
    rng = rng_for(seed)
    (x,) = leaves(rng, (2, 3, 4))
    backward_from_random(x.transpose(0, 2).reshape(6, 4) * x.reshape(4, 6).transpose(0, 1), rng)
    large = large_gradient(rng, lambda big: big.transpose(0, 1).reshape(1024, 256) * 2, (512, 512))
    return {"x_grad": x.grad.numpy(), "large_grad": large}


@task(id="softmax_backward", points=2, hidden=True)
def test_softmax_backward_reference(seed):
    rng = rng_for(seed)
    (x,) = leaves(rng, (2, 3, 4))
    backward_from_random(x.softmax(dim=-1) + x.softmax(dim=1), rng)
    return {"x_grad": x.grad.numpy(), "large_grad": large_gradient(rng, lambda big: big.softmax(dim=-1), (64, 4096))}


@task(id="log_softmax_backward", points=2, hidden=True)
def test_log_softmax_backward_reference(seed):
    rng = rng_for(seed)
    x, logits = leaves(rng, (2, 3, 4), (5, 6))
    backward_from_random(x.log_softmax(dim=-1), rng)
    F.cross_entropy(logits, rng.integers(0, 6, 5)).backward()
    large = large_gradient(rng, lambda big: big.log_softmax(dim=-1), (64, 4096))
    return {"x_grad": x.grad.numpy(), "logits_grad": logits.grad.numpy(), "large_grad": large}


@task(id="attention", points=3, hidden=True)
def test_attention_reference(seed):
    rng = rng_for(seed)
    q, k, v = leaves(rng, (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6))
    result, p = F.attention(q, k, v, ta.tensor(_mask(rng, 3, 5)))
    backward_from_random(result, rng)
    return {"out": result.detach().numpy(), "p": p.detach().numpy(), **grads("grad", q, k, v)}


@task(id="mha_split_heads", points=2, hidden=True)
def test_mha_split_heads_reference(seed):
    return _gradients(rng_for(seed))


@task(id="mha_merge_heads", points=2, hidden=True)
def test_mha_merge_heads_reference(seed):
    return _gradients(rng_for(seed))


@task(id="adam_step", points=2, hidden=True)
def test_adam_step_reference(seed):
    rng = rng_for(seed)
    p = nn.Parameter(rng.standard_normal((3, 4)))
    opt = optim.Adam([p], lr=0.05, betas=(0.8, 0.9))
    for g in rng.standard_normal((3, 3, 4)):
        p.grad = ta.tensor(g.copy())
        opt.step()
    return {"p": p.detach().numpy(), "exp_avg_sq": opt.state[p]["exp_avg_sq"]}
