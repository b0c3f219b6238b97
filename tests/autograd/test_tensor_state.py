"""A tensor's state through its life: names, versions, leaves made by detach(), tensors made from tensors,
bool-list indexing, and a root gradient that itself requires grad."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F


def test_new_and_computed_tensors_start_unnamed_at_version_0():
    x = ta.ones(2)
    y = x * 2  # made by an op
    assert x.name is None and y.name is None
    y.add_(1)  # in place on an op's result that needs no grad
    assert y._version == 1 and y.tolist() == [3.0, 3.0]


def test_a_detached_tensor_can_become_a_leaf_that_gets_a_gradient():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    leaf = (x * 3).detach().requires_grad_()
    assert leaf.is_leaf and leaf.requires_grad
    (leaf * leaf).sum().backward()
    np.testing.assert_allclose(leaf.grad, [6.0, 12.0])
    assert x.grad is None


def test_a_tensor_made_from_a_tensor_copies_it():
    src = ta.tensor([1.0, 2.0])
    copy = ta.tensor(src)
    assert copy.tolist() == [1.0, 2.0] and copy.dtype == np.float32
    copy.array[0] = 5.0
    assert src.tolist() == [1.0, 2.0]


def test_a_list_of_bools_selects_like_a_mask():
    x = ta.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    picked = x[[True, False, True]]
    assert picked.tolist() == [[1.0], [3.0]]
    picked.sum().backward()
    np.testing.assert_array_equal(x.grad, [[1.0], [0.0], [1.0]])


def test_a_root_gradient_that_requires_grad_is_read_as_values():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    g = ta.tensor([3.0, 4.0], requires_grad=True)
    (x * 2).backward(g)
    np.testing.assert_array_equal(x.grad, [6.0, 8.0])


def test_register_parameter_registers_it():
    m = nn.Module()
    w = nn.Parameter(np.ones(2))
    m.register_parameter("w", w)
    assert m.w is w and [n for n, _ in m.named_parameters()] == ["w"]


def test_attention_on_3d_inputs_and_its_dropout():
    rng = np.random.default_rng(0)
    q, k, v = (ta.tensor(rng.standard_normal((2, n, 3))) for n in (4, 5, 5))  # (h, n, d), no batch dim
    out, p = F.attention(q, k, v)
    scores = q.array @ np.swapaxes(k.array, -1, -2) / np.sqrt(3)
    expected = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(p.array, expected, rtol=1e-12)
    np.testing.assert_allclose(out.array, expected @ v.array, rtol=1e-12)
    ta.manual_seed(0)
    _, dropped = F.attention(ta.zeros(1, 200, 3), ta.zeros(1, 50, 3), ta.zeros(1, 50, 3), dropout_p=0.2)
    assert dropped.name == "P_drop"  # the explainer's label for the weights after dropout
    assert 0.77 < (dropped.array > 0).mean() < 0.83  # p = 0.2 drops a fifth


@pytest.mark.parametrize("call, message", [
    (lambda x: x.transpose(5, 0), "transpose: dim 5 is out of range"),
    (lambda x: x * ta.ones(4), "mul: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: x + ta.ones(4), "add: shapes (2, 3) and (4,) cannot be broadcast"),
    (lambda x: x.reshape(2.0, 3), "reshape: invalid shape (2.0, 3)"),
    (lambda x: ta.tensor(1.0).transpose(0, 2), "transpose: dim 2 is out of range for a tensor with 0 dimensions"),
    (lambda x: ta.tensor(1.0).transpose(2, 0), "transpose: dim 2 is out of range for a tensor with 0 dimensions"),
])
def test_more_checks_name_their_op(call, message):
    import re

    with pytest.raises((IndexError, ValueError), match="^" + re.escape(message)):
        call(ta.ones(2, 3))
