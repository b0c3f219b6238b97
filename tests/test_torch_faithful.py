"""What a user porting torch code meets first: each behaviour here was wrong or missing, now torch's.

The last test is the table of clear errors: bad inputs to optimizers, promotion, masks and
edge shapes raise TypeError/ValueError/RuntimeError whose message names the argument and the
shapes or dtypes, never a NumPy internal error.
"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.autograd import grad
from tinyattn.nn import functional as F


def test_float32_models_stay_float32_with_numpy_scalars_and_float64_masks():
    ta.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ta.randn(2, 4, 8, requires_grad=True)
    mask = np.triu(np.full((4, 4), -np.inf), 1)  # float64, built in NumPy
    out, _ = mha(x, x, x, attn_mask=mask)
    scores = (x @ x.transpose(1, 2)) / np.sqrt(8)  # a NumPy float64 scalar
    assert out.dtype == scores.dtype == np.float32
    (out.sum() + scores.sum()).backward()  # no dtype crash in the engine
    assert x.grad.dtype == mha.in_proj_weight.grad.dtype == np.float32
    assert (ta.tensor([1, 2]) / 2).dtype == (ta.arange(2) * 0.5).dtype == ta.tensor([1, 2]).exp().dtype == np.float32


def test_numpy_ufuncs_keep_the_graph_or_refuse():
    x = ta.tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = np.exp(x)  # dispatches to the differentiable op
    assert isinstance(y, ta.Tensor) and y.requires_grad
    (np.ones(2) * y).sum().backward()
    np.testing.assert_allclose(x.grad, np.exp([0.5, 1.5]))
    with pytest.raises(TypeError, match="numpy.arctan has no gradient here"):
        np.arctan(x)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\)"):
        np.asarray(x)
    np.testing.assert_allclose(np.arctan(x.detach()).array, np.arctan([0.5, 1.5]))  # without grad: allowed


def test_an_optimizer_step_between_forward_and_backward_is_refused():
    w = nn.Parameter(np.ones((2, 2)))
    loss = (ta.tensor(np.ones((1, 2))) @ w).sum()
    w.grad = ta.ones(2, 2, dtype=w.dtype)
    optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[Parameter of shape \(2, 2\)\] "
                                           r"is at version 1; expected version 0"):
        loss.backward()


def test_in_place_ops_on_leaves_with_grad_are_refused_and_others_bump_the_version():
    w = nn.Parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.zero_()
    with ta.no_grad():
        w.mul_(2.0).add_(1.0)
    assert w._version == 2 and np.all(w.array == 3.0)
    y = w * 2
    y.masked_fill_(np.array([True, False, True]), 0.0)  # a non-leaf: recorded, as torch
    y.sum().backward()
    assert y.grad_fn.name == "MaskedFill" and w.grad.tolist() == [0.0, 2.0, 0.0]
    z = ta.zeros(3).masked_fill_(np.array([True, False, True]), 5.0)
    assert z.tolist() == [5.0, 0.0, 5.0] and z.requires_grad_() is z and z.requires_grad


def test_cast_to_int_leaves_the_graph():
    x = ta.tensor(np.array([1.7, 2.2]), requires_grad=True)
    assert not x.to(ta.int64).requires_grad and x.to(ta.int64).tolist() == [1, 2]
    assert x.float().requires_grad


def test_grad_returns_separate_writable_arrays():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    ga, gb = grad((x * 3).sum(), [x, x])
    assert ga is not gb
    ga[0] = 100.0
    assert gb[0] == 3.0


def test_gradients_at_zero_are_zero_not_nan():
    x = ta.tensor(np.array([0.0, 1.0]), requires_grad=True)
    (x ** 0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    a = ta.tensor(np.array([0.0, 2.0]))
    b = ta.tensor(np.array([2.0, 3.0]), requires_grad=True)
    (a ** b).sum().backward()
    assert np.isfinite(b.grad).all() and b.grad[0] == 0.0


def test_cross_entropy_ignores_a_row_of_minus_infinity():
    logits = ta.tensor(np.array([[-np.inf, 0.0, 1.0], [0.5, 0.2, 0.1]]), requires_grad=True)
    loss = F.cross_entropy(logits, np.array([-100, 0]))
    loss.backward()
    assert np.isfinite(loss.item()) and np.isfinite(logits.grad).all() and np.all(logits.grad[0] == 0)


def test_edge_shapes():
    assert ta.tensor(3.0).softmax(0).item() == 1.0 and ta.tensor(3.0).log_softmax(-1).item() == 0.0
    assert F.gelu(ta.tensor(1.0)).shape == ()
    assert ta.zeros(0, 3).softmax(0).shape == (0, 3)
    assert [p.shape for p in ta.zeros(0, 3).split(2)] == [(0, 3)] == [p.shape for p in ta.zeros(0, 3).chunk(2)]
    assert ta.randn(3, 2)[[]].shape == (0, 2)
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    q, empty = ta.randn(2, 3, 4), ta.randn(2, 0, 4)
    for need_weights in (True, False):  # no keys: every query sees nothing, and gets out_proj.bias
        out, _ = mha(q, empty, empty, need_weights=need_weights)
        np.testing.assert_allclose(out.array, np.broadcast_to(mha.out_proj.bias.array, (2, 3, 4)))


def test_var_std_and_max_take_torchs_arguments():
    x = ta.tensor(np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]]), requires_grad=True)
    np.testing.assert_allclose(x.var(1, False).array, np.var(x.array, axis=1))  # 2nd positional: unbiased
    np.testing.assert_allclose(x.std(1, True, True).array, np.std(x.array, axis=1, ddof=1, keepdims=True))
    values, indices = x.max(1)
    assert values.tolist() == [4.0, 3.0] and indices.tolist() == [2, 2]
    values.sum().backward()
    assert x.grad.tolist() == [[0, 0, 1], [0, 0, 1]]
    assert x.min(dim=0).indices.tolist() == [1, 1, 1]


ERRORS = [  # (what, call, exception, message)
    ("bare tensor to an optimizer", lambda: optim.Adam(nn.Parameter(np.ones(2))), TypeError,
     "params must be an iterable of Tensors or dicts, got Parameter"),
    ("non-leaf to an optimizer", lambda: optim.SGD([nn.Parameter(np.ones(2)) * 2], lr=0.1), ValueError,
     r"can't optimize a non-leaf Tensor \(of shape \(2,\)\)"),
    ("negative lr", lambda: optim.SGD([nn.Parameter(np.ones(2))], lr=-0.1), ValueError, "invalid learning rate: -0.1"),
    ("matmul of two dtypes", lambda: ta.ones(2, 2) @ ta.ones(2, 2, dtype=ta.float64), RuntimeError,
     "matmul: operands have different dtypes float32 and float64"),
    ("linear of two dtypes", lambda: F.linear(ta.ones(2, 3, dtype=ta.float64), ta.ones(4, 3)), RuntimeError,
     r"linear: input, weight and bias must share one dtype"),
    ("softmax of ints", lambda: ta.tensor([1, 2]).softmax(0), TypeError,
     "softmax: expected a floating point tensor, got dtype int64"),
    ("cat of 0-d", lambda: ta.cat([ta.tensor(1.0), ta.tensor(2.0)]), ValueError,
     r"cat: zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    ("mask of ints", lambda: nn.MultiheadAttention(4, 2)(ta.ones(3, 1, 4), ta.ones(3, 1, 4), ta.ones(3, 1, 4),
                                                         attn_mask=np.zeros((3, 3), dtype=int)), TypeError,
     "attn_mask: only bool and floating-point masks are supported, got dtype int64"),
    ("mask of the wrong shape", lambda: F.scaled_dot_product_attention(ta.ones(2, 3), ta.ones(4, 3), ta.ones(4, 3),
                                                                       attn_mask=np.ones((3, 3), bool)), ValueError,
     r"attn_mask of shape \(3, 3\) does not broadcast to the scores' shape \(2, 4\)"),
    ("max over an empty dim", lambda: ta.zeros(0, 2).max(0), IndexError,
     r"max: cannot take the max of an empty dim 0 of shape \(0, 2\)"),
    ("max of two tensors", lambda: ta.ones(2).max(ta.ones(2)), TypeError, "max: dim must be an int, got Tensor"),
    ("split of 0-d", lambda: ta.tensor(1.0).split(1), ValueError, "split: expects a tensor with at least one dim"),
    ("chunk of 0-d", lambda: ta.tensor(1.0).chunk(2), ValueError, "chunk: expects a tensor with at least one dim"),
    ("layer_norm over no dims", lambda: F.layer_norm(ta.tensor(1.0), ()), ValueError,
     r"layer_norm: normalized_shape must have at least one dim, got \(\)"),
    ("broadcast failure", lambda: ta.ones(2, 3) + ta.ones(4), ValueError,
     r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast together"),
]


@pytest.mark.parametrize("what, call, exception, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_clear_errors(what, call, exception, message):
    with pytest.raises(exception, match=message):
        call()
