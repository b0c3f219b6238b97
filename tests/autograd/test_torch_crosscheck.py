"""Every op against torch: forward values and input gradients, float64, random upstream gradient."""

import zlib

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# name -> (input shapes, function applied to either library's tensors)
CASES = {
    "add_broadcast": ([(2, 3, 4), (3, 1)], lambda a, b: a + b),
    "sub_scalar": ([(3, 4)], lambda a: 2.0 - a),
    "mul_broadcast": ([(2, 1, 4), (3, 4)], lambda a, b: a * b),
    "div": ([(3, 4), (4,)], lambda a, b: a / (b * b + 1.0)),
    "pow_scalar": ([(3, 4)], lambda a: (a * a + 1.0) ** 1.5),
    "pow_tensor": ([(3, 4), (3, 4)], lambda a, b: (a * a + 1.0) ** b),
    "rpow": ([(3,)], lambda a: 2.0**a),
    "neg": ([(3,)], lambda a: -a),
    "matmul_2d": ([(3, 4), (4, 5)], lambda a, b: a @ b),
    "matmul_batched_broadcast": ([(2, 1, 3, 4), (5, 4, 2)], lambda a, b: a @ b),
    "matmul_vec": ([(4,), (2, 4, 3)], lambda a, b: a @ b),
    "exp": ([(3, 4)], lambda a: a.exp()),
    "log": ([(3, 4)], lambda a: (a * a + 0.5).log()),
    "sqrt": ([(3, 4)], lambda a: (a * a + 0.5).sqrt()),
    "tanh": ([(3, 4)], lambda a: a.tanh()),
    "relu": ([(3, 4)], lambda a: a.relu()),
    "sigmoid": ([(3, 4)], lambda a: a.sigmoid()),
    "abs": ([(3, 4)], lambda a: a.abs()),
    "sum_dims": ([(2, 3, 4)], lambda a: a.sum(dim=(0, 2), keepdim=True)),
    "mean": ([(2, 3, 4)], lambda a: a.mean(dim=1)),
    "amax": ([(2, 3, 4)], lambda a: a.amax(dim=-1)),
    "max_all": ([(2, 3)], lambda a: a.max()),
    "var": ([(2, 3, 4)], lambda a: a.var(dim=-1, keepdim=True)),
    "var_biased": ([(2, 3, 4)], lambda a: a.var(dim=(0, 1), correction=0)),
    "reshape": ([(2, 3, 4)], lambda a: a.reshape(4, -1) * 1.0),
    "view_after_transpose": ([(2, 3, 4)], lambda a: a.transpose(0, 1).reshape(3, 8)),
    "permute": ([(2, 3, 4)], lambda a: a.permute(2, 0, 1)),
    "T": ([(3, 5)], lambda a: a.T),
    "unsqueeze_squeeze": ([(3, 1, 4)], lambda a: a.squeeze(1).unsqueeze(0)),
    "expand": ([(3, 1)], lambda a: a.expand(2, 3, 4)),
    "flatten": ([(2, 3, 4)], lambda a: a.flatten(1)),
    "getitem_slice": ([(4, 5)], lambda a: a[1:3, ::2]),
    "getitem_int_array": ([(4, 5)], lambda a: a[[0, 2, 0]]),
    "softmax": ([(2, 3, 4)], lambda a: a.softmax(dim=1)),
    "log_softmax": ([(2, 3, 4)], lambda a: a.log_softmax(dim=-1)),
    "softmax_huge": ([(2, 5)], lambda a: (a * 1000.0).softmax(dim=-1)),
    "cast": ([(3, 4)], lambda a: (a.float() * 3.0).double() * a),
    "split_chunk": ([(5, 4)], lambda a: a.split(2)[1] * a.chunk(2, dim=1)[0][:2].sum(dim=1, keepdim=True)),
}


@pytest.mark.parametrize("case", CASES)
def test_op_matches_torch(case):
    shapes, fn = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    arrays = [rng.standard_normal(s) for s in shapes]
    ours = [ta.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_ours, out_theirs = fn(*ours), fn(*theirs)
    np.testing.assert_allclose(out_ours.array, out_theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = rng.standard_normal(out_ours.shape)
    out_ours.backward(upstream)
    out_theirs.backward(torch.tensor(upstream))
    for i, (o, t) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"input {i}")


def test_where_masked_fill_cat_stack_match_torch():
    rng = np.random.default_rng(5)
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    cond = rng.random((3, 4)) > 0.5
    upstream = rng.standard_normal((5, 4))
    grads, outs = [], []
    for lib in (ta, torch):
        a, b = lib.tensor(a_np, requires_grad=True), lib.tensor(b_np, requires_grad=True)
        c = lib.tensor(cond)
        out = lib.where(c, a, b) + a.masked_fill(c, -1.0) * 2.0
        out = lib.cat([out, lib.stack([b, b * 3.0], dim=0)], dim=0)  # (5, 4)
        out.backward(lib.tensor(upstream))
        outs.append(np.asarray(out.detach()))
        grads.append((np.asarray(a.grad), np.asarray(b.grad)))
    np.testing.assert_allclose(outs[0], outs[1])
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])
