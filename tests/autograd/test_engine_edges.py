"""The engine at its edges: a backward that returns None for an input that needs a gradient, or a Python
number; root gradients as numbers, lists or another dtype; output sequences, as torch takes them, and the
ones torch refuses (these run without torch; the cross-checks are in test_several_outputs_torch.py)."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import Function, grad


class FirstOnly(Function):
    on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
    """``out = a * b``, but backward passes a gradient to ``a`` only (None for ``b``)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        (b,) = ctx.saved_tensors
        return grad_output * b, None


class Halve(Function):
    on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
    """``out = x / 2`` for a 0-d ``x``; backward returns a Python float (refused, as torch refuses it)."""

    @staticmethod
    def forward(ctx, x):
        return x / 2

    @staticmethod
    def backward(ctx, grad_output):
        return float(grad_output) / 2


def test_a_branch_without_gradient_does_not_stop_the_others():
    a = ta.tensor([1.0, 2.0], dtype=ta.float64, requires_grad=True)
    b = ta.tensor([3.0, 4.0], dtype=ta.float64, requires_grad=True)
    c = ta.tensor([5.0, 6.0], dtype=ta.float64, requires_grad=True)
    # b's branch gets no gradient from FirstOnly; it reaches b (and c) only through the second term
    out = FirstOnly.apply(a, b * 1.0).sum() + (b * c).sum()
    out.backward()
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
    np.testing.assert_array_equal(b.grad, [5.0, 6.0])  # from b * c only
    np.testing.assert_array_equal(c.grad, [3.0, 4.0])
    d = ta.tensor([1.0, 1.0], dtype=ta.float64, requires_grad=True)
    FirstOnly.apply(a * 1.0, d * 2.0).sum().backward()  # d's whole branch gets nothing
    assert d.grad is None


def test_a_backward_returning_a_python_number_is_refused_and_root_gradients_may_be_numbers_or_lists():
    x = ta.tensor(4.0, dtype=ta.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Halve.backward returned a float for input 0, which has shape \(\) "
                                           r"and dtype float64"):  # (torch: "expected Variable or None (got float)")
        Halve.apply(x).backward(3.0)
    y = ta.tensor(4.0, dtype=ta.float64, requires_grad=True)
    (y * 0.5).backward(3.0)  # a number as the root gradient of a 0-d output
    assert y.grad == 1.5
    v = ta.tensor([1.0, 2.0], requires_grad=True)
    (v * 2.0).backward([1.0, -1.0])
    np.testing.assert_array_equal(v.grad, [2.0, -2.0])
    w = ta.tensor([1.0, 2.0], requires_grad=True)  # float32
    (w * 2.0).backward(np.array([1.0, 1.0], dtype=np.float64))
    assert w.grad.dtype == np.float32  # the root gradient takes the output's dtype, as in torch


def test_grad_takes_one_element_sequences_as_torch():
    x = ta.tensor([1.0, 2.0, 3.0], dtype=ta.float64, requires_grad=True)
    y = x * x
    g = np.array([1.0, 0.5, -1.0])
    (dx,) = grad([y], [x], [g], retain_graph=True)
    np.testing.assert_array_equal(dx, 2 * x.array * g)
    (dx2,) = grad((y,), x, (g,))
    np.testing.assert_array_equal(dx2, dx)


def test_several_outputs_are_refused_as_torch_refuses_them():
    x = ta.tensor([1.0, 2.0], dtype=ta.float64, requires_grad=True)
    a, b = x * 2, (x * x).sum()
    with pytest.raises(RuntimeError, match=r"^backward: element 1 of tensors does not require grad"):
        ta.autograd.backward([a, b.detach()], [ta.ones(2, dtype=ta.float64), None])
    with pytest.raises(RuntimeError, match=r"^grad: got 2 tensors and 1 gradients$"):
        ta.autograd.grad([a, b], x, [ta.ones(2)])
    with pytest.raises(RuntimeError, match=r"^backward: got 2 tensors and 1 gradients$"):
        ta.autograd.backward([a, a * 3], ta.ones(2, dtype=ta.float64))  # (one tensor: the first output's, as torch)
    with pytest.raises(TypeError, match=r"^grad: inputs must be Tensors, got float at position 1$"):
        ta.autograd.grad(b, [x, 3.0])
    with pytest.raises(RuntimeError, match="implicitly created only for one-element outputs"):
        ta.autograd.backward([a, b])  # (a has two elements: its gradient cannot be None)
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `backward\(\)` cannot be empty\.$"):
        b.backward(inputs=[])
    with pytest.raises(RuntimeError, match=r"^backward: input 0 \(shape \(2,\)\) does not require grad$"):
        b.backward(inputs=[x.detach()])
    with pytest.raises(TypeError, match=r"^grad: outputs must be Tensors, got float at position 1$"):
        ta.autograd.grad([b, 3.0], x)
    with pytest.raises(TypeError, match=r"^backward: the outputs' gradients must be a Tensor, None or a sequence, "
                                        r"got int$"):
        ta.autograd.backward([a, b], 3)
    ta.autograd.backward([])  # no outputs: nothing to do, as torch
    with pytest.raises(RuntimeError, match="was not used in the graph"):
        ta.autograd.grad([], x)
    assert x.grad is None


def test_grad_variables_is_torchs_old_name_for_grad_tensors():
    x = ta.tensor([1.0, -2.0], dtype=ta.float64, requires_grad=True)
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated") as caught:
        ta.autograd.backward(x * 3, grad_variables=ta.tensor([0.5, 2.0], dtype=ta.float64))
    # the caller's line (under mutation testing, mutmut's trampoline sits between the caller and backward)
    assert caught[0].filename == __file__ or caught[0].filename.endswith("trampoline.py")
    np.testing.assert_array_equal(x.grad, [1.5, 6.0])
    with pytest.raises(RuntimeError, match="both passed"):
        ta.autograd.backward(x * 3, ta.ones(2), grad_variables=ta.ones(2))
