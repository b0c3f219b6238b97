"""Fixed computations whose results the reference records at assignment time and grading compares.

Each probe returns ``{name: array}``; it uses only the public API, on inputs
drawn from a fixed seed, in float64. The values are never shown to students:
only the autograder receives them.
"""

import numpy as np

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.nn import functional as F


def _leaves(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [ta.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes], rng


def _backward(out, rng):
    out.backward(rng.standard_normal(out.shape))


def unbroadcast():
    (a, b, c), rng = _leaves(1, (2, 3, 4), (3, 1), (4,))
    _backward(a * b + c, rng)
    return {"a_grad": a.grad.numpy(), "b_grad": b.grad.numpy(), "c_grad": c.grad.numpy()}


def matmul_backward():
    (a, b, x, w), rng = _leaves(2, (2, 3, 4), (4, 5), (5, 4), (2, 1, 4, 3))
    _backward(a @ b, rng)
    _backward(x @ w, rng)
    return {"a_grad": a.grad.numpy(), "b_grad": b.grad.numpy(), "x_grad": x.grad.numpy(), "w_grad": w.grad.numpy()}


def linear_forward():
    (x, w, b), _ = _leaves(3, (2, 3, 4), (5, 4), (5,))
    return {"y": F.linear(x, w, b).detach().numpy(), "y_nobias": F.linear(x, w).detach().numpy()}


def shape_backward():
    (x,), rng = _leaves(4, (2, 3, 4))
    _backward(x.transpose(0, 2).reshape(6, 4) * x.reshape(4, 6).transpose(0, 1), rng)
    return {"x_grad": x.grad.numpy()}


def softmax_backward():
    (x,), rng = _leaves(5, (2, 3, 4))
    _backward(x.softmax(dim=-1) + x.softmax(dim=1), rng)
    return {"x_grad": x.grad.numpy()}


def log_softmax_backward():
    (x, logits), rng = _leaves(6, (2, 3, 4), (5, 6))
    _backward(x.log_softmax(dim=-1), rng)
    F.cross_entropy(logits, np.array([0, 5, 2, 2, 1])).backward()
    return {"x_grad": x.grad.numpy(), "logits_grad": logits.grad.numpy()}


def attention():
    (q, k, v), rng = _leaves(7, (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6))
    mask = np.where(np.random.default_rng(70).random((3, 5)) > 0.7, -np.inf, 0.0)
    mask[:, 0] = 0.0
    out, p = F.attention(q, k, v, ta.tensor(mask))
    _backward(out, rng)
    return {"out": out.detach().numpy(), "p": p.detach().numpy(), "q_grad": q.grad.numpy(), "k_grad": k.grad.numpy(),
            "v_grad": v.grad.numpy()}


def _mha():
    ta.manual_seed(8)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=ta.float64)
    rng = np.random.default_rng(8)
    mha.in_proj_bias.data[...] = ta.tensor(rng.standard_normal(24))
    x = ta.tensor(rng.standard_normal((2, 3, 8)), requires_grad=True)
    out, w = mha(x, x, x, average_attn_weights=False)
    out.backward(rng.standard_normal(out.shape))
    return {
        "out": out.detach().numpy(), "weights": w.detach().numpy(), "x_grad": x.grad.numpy(),
        "in_proj_weight_grad": mha.in_proj_weight.grad.numpy(),
        "out_proj_weight_grad": mha.out_proj.weight.grad.numpy(),
    }


def mha_split_heads():
    return _mha()


def mha_merge_heads():
    return _mha()


def adam_step():
    p = nn.Parameter(np.random.default_rng(9).standard_normal((3, 4)))
    opt = optim.Adam([p], lr=0.05, betas=(0.8, 0.9))
    grads = np.random.default_rng(90).standard_normal((3, 3, 4))
    for g in grads:
        p.grad = ta.tensor(g.copy())
        opt.step()
    return {"p": p.detach().numpy(), "exp_avg_sq": opt.state[0]["exp_avg_sq"]}


PROBES = {name: fn for name, fn in globals().items() if not name.startswith("_") and callable(fn)
          and fn.__module__ == __name__}


def compute_all():
    """``{"task/name": array}`` for every probe."""
    values = {}
    for task, probe in PROBES.items():
        for name, array in probe().items():
            values[f"{task}/{name}"] = np.asarray(array)
    return values
