"""Behaviours a user relies on that no other test pinned down (each closes a family of slips).

Found by mutation testing (docs/mutation.md): every test here fails if one plausible edit of the
library were made, e.g. the third piece of a split taking the wrong slice.
"""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import Function, GradcheckError, grad, gradcheck
from tinyattn.autograd.function import normalize_dim, unbroadcast

from ..helpers import check, leaf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b * b + 1),
        lambda a, b: (a * a + 1) ** b, lambda a, b: a @ b.transpose(0, 1), lambda a, b: ta.where(a > 0, a, b),
        lambda a, b: (a.exp() + b.tanh() + a.sigmoid() * b.abs()).sum(dim=1, keepdim=True),
        lambda a, b: ta.cat([a, b, a * 2], 0), lambda a, b: ta.stack([a, b, b * 3], 1),
    ],
)
def test_every_gradient_has_its_inputs_dtype(rng, dtype, op):
    a = ta.tensor(rng.standard_normal((2, 3)).astype(dtype), requires_grad=True)
    b = ta.tensor(rng.standard_normal((2, 3)).astype(dtype), requires_grad=True)
    out = op(a, b)
    assert out.dtype == dtype
    out.backward(rng.standard_normal(out.shape).astype(dtype))
    assert a.grad.dtype == b.grad.dtype == dtype


def test_a_float32_input_with_a_float64_one_gets_a_float32_gradient(rng):
    a = ta.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    b = ta.tensor(rng.standard_normal((3,)), requires_grad=True)
    out = a * b  # computed in float64
    assert out.dtype == np.float64
    out.backward(np.ones((2, 3)))
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_allclose(a.grad, np.broadcast_to(b.array, (2, 3)), rtol=1e-6)
    assert unbroadcast(np.ones((2, 3)), (3,), np.float32).dtype == np.float32


@pytest.mark.parametrize("sizes, dim", [(2, 0), (3, 1), ([1, 2, 2], 1), ([2, 1, 1], 0)])
def test_every_split_piece_has_the_right_values_and_gradient(rng, sizes, dim):
    x = leaf(rng, 4, 5)
    pieces = x.split(sizes, dim)
    bounds = np.cumsum([p.shape[dim] for p in pieces])[:-1]
    for piece, expected in zip(pieces, np.split(x.array, bounds, axis=dim)):
        np.testing.assert_array_equal(piece.array, expected)
    weights = [rng.standard_normal(p.shape) for p in pieces]
    sum((p * w).sum() for p, w in zip(pieces, weights)).backward()
    np.testing.assert_array_equal(x.grad, np.concatenate(weights, axis=dim))
    for chunks in (1, 2, 3):
        assert sum(p.shape[dim] for p in x.chunk(chunks, dim)) == x.shape[dim]


def test_cat_of_three_sends_each_its_part(rng):
    a, b, c = leaf(rng, 2, 1), leaf(rng, 2, 3), leaf(rng, 2, 2)
    check(lambda a, b, c: ta.cat([a, b, c], 1), a, b, c)
    check(lambda a, b, c: ta.stack([a.sum(1), b.sum(1), c.sum(1)], 0), a, b, c)


def test_matmul_and_linear_when_only_one_operand_needs_grad(rng):
    from tinyattn.nn import functional as F

    a, b = leaf(rng, 2, 3, 4), ta.tensor(rng.standard_normal((4, 5)))
    c, w_const, x_const = (ta.tensor(rng.standard_normal(s)) for s in [(3, 4), (5, 4), (2, 4)])
    check(lambda a: a @ b, a)
    check(lambda b: c @ b, leaf(rng, 4, 2))
    check(lambda w: F.linear(x_const, w), leaf(rng, 5, 4))
    check(lambda x: F.linear(x, w_const), leaf(rng, 3, 4))
    x = leaf(rng, 3)
    assert x.matmul(ta.tensor(np.ones(3))).shape == () and (np.ones((2, 3)) @ x).shape == (2,)


def test_reductions_keep_their_dims_as_asked(rng):
    x = leaf(rng, 2, 1, 3)
    assert x.sum(1).shape == (2, 3) and x.sum(1, keepdim=True).shape == (2, 1, 3)  # keepdim defaults to False
    check(lambda t: t.var(dim=2), x)
    check(lambda t: t.var(dim=(0, 2), keepdim=True), x)
    check(lambda t: t.amax(dim=2), x)  # another size-1 dim beside the reduced one
    y = ta.tensor(np.array([[1.0, 3.0, 3.0]]), requires_grad=True)
    y.amax(1).sum().backward()
    assert y.grad.tolist() == [[0.0, 0.5, 0.5]]  # ties share


@pytest.mark.parametrize("start, end, shape", [(0, -1, (24,)), (1, 2, (2, 12)), (0, 1, (6, 4)), (2, -1, (2, 3, 4))])
def test_flatten_variants(rng, start, end, shape):
    x = leaf(rng, 2, 3, 4)
    assert x.flatten(start, end).shape == shape
    check(lambda t: t.flatten(start, end), x)


def test_relu_and_abs_gradients_at_exactly_zero():
    x = ta.tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    (x.relu() + x.abs()).sum().backward()
    assert x.grad.tolist() == [-1.0, 0.0, 2.0]  # relu': 0, 0, 1; abs': -1, 0, 1


def test_normalize_dim_bounds():
    assert normalize_dim("op", -3, 3) == 0 and normalize_dim("op", 2, 3) == 2
    for bad in (3, -4):
        with pytest.raises(IndexError, match=rf"dim {bad} is out of range for a tensor with 3 dimensions"):
            normalize_dim("op", bad, 3)
    with pytest.raises(TypeError, match="dim must be an int, got bool"):
        normalize_dim("op", True, 3)


def test_retain_grad_accumulates_over_two_backwards_and_backward_on_a_leaf():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward(retain_graph=True)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad, 2 * 2 * y.array)
    leaf_only = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    leaf_only.backward(np.array([3.0, 4.0]))
    leaf_only.backward(np.array([1.0, 1.0]))
    assert leaf_only.grad.tolist() == [4.0, 5.0]


def test_grad_with_a_bare_tensor_a_grad_output_and_retain_graph():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * x
    (gx,) = grad(y, x, np.array([1.0, 10.0]), retain_graph=True)
    assert gx.tolist() == [2.0, 40.0] and x.grad is None
    (again,) = grad(y.sum(), [x])
    assert again.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(y.sum(), [x])


def test_a_custom_function_may_return_a_bare_array_or_none():
    class Double(Function):
        on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad_output):
            return 2 * grad_output  # a bare array for the one input

    class Stop(Function):
        on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
        @staticmethod
        def forward(ctx, x):
            return x.copy()

        @staticmethod
        def backward(ctx, grad_output):
            return None

    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (Double.apply(x) + Stop.apply(x)).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_gradcheck_tolerances_and_inputs_without_grad(rng):
    class Off(Function):  # backward 1% too large
        on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2.02 * x * grad_output

    x = leaf(rng, 4) * 1.0 + 3.0  # away from 0, so the 1% is far above atol
    x = ta.tensor(x.array, requires_grad=True)
    with pytest.raises(GradcheckError):
        gradcheck(Off.apply, (x,))
    assert gradcheck(Off.apply, (x,), rtol=0.05)
    constant = ta.tensor(rng.standard_normal(4))
    assert gradcheck(lambda a, c: a * c, (x, constant))
    with pytest.raises(ValueError, match="no input requires grad"):
        gradcheck(lambda c: c * 2, (constant,))


def test_small_tensor_facts():
    x = ta.tensor(np.arange(6.0).reshape(2, 3))
    assert x.numel() == 6 and bool(ta.tensor(1.0)) and not bool(ta.tensor(0.0))
    with pytest.raises(RuntimeError, match=r"the truth value of a tensor of shape \(2, 3\) is ambiguous"):
        bool(x)


class OffBy(Function):
    on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
    """``out = x``, with a backward wrong by ``ERRORS`` (one number per element)."""

    ERRORS = np.zeros(1)

    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output + OffBy.ERRORS.reshape(grad_output.shape)


def test_gradcheck_names_the_function_and_lists_only_the_failing_elements_worst_first():
    x = ta.tensor(np.zeros((2, 3)), requires_grad=True)
    OffBy.ERRORS = np.array([0.0, 3.0, 0.0, 1.0, 0.0, 2.0])  # three wrong elements, (0, 1) the worst

    def my_function(t):
        return OffBy.apply(t)

    with pytest.raises(GradcheckError) as info:
        gradcheck(my_function, x, atol=1e-4, rtol=1e-2)  # a bare tensor as inputs
    message = str(info.value)
    assert message.startswith("gradcheck: my_function: gradient mismatch for input 0 (shape (2, 3))")
    assert "<= 0.0001 + 0.01 * |numerical|" in message
    listed = [line.split(":")[0].strip() for line in message.splitlines() if line.strip().startswith("at (")]
    assert listed == ["at (0, 1)", "at (1, 2)", "at (1, 0)"]
    OffBy.ERRORS = np.array([0.0, 0.0, 0.0, 0.0, 5.0, 0.0])  # one wrong element: one line
    with pytest.raises(GradcheckError) as info:
        gradcheck(my_function, (x,))
    assert sum(line.strip().startswith("at (") for line in str(info.value).splitlines()) == 1


def test_gradcheck_fails_a_nan_gradient_and_ignores_non_tensors():
    x = ta.tensor(np.ones(3), requires_grad=True)
    OffBy.ERRORS = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(GradcheckError, match=r"at \(0,\)"):
        gradcheck(OffBy.apply, (x,))
    assert gradcheck(lambda t, k, flag: (t * k, ta.tensor([1, 2])), (x, 3, True))  # an int output is ignored
    with pytest.raises(ValueError, match="func returned no floating-point tensor"):
        gradcheck(lambda t: ta.tensor([1, 2]), (x,))
    f32 = ta.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    with pytest.warns(UserWarning):
        assert gradcheck(lambda t: t * 2, (f32,), eps=1e-2, atol=1e-2)
