"""gradcheck itself: it must catch wrong backwards, including ones that out.sum() would miss."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import Function, GradcheckError, gradcheck


class SoftmaxWithWrongBackward(Function):
    on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
    """Forward is softmax; backward passes the gradient straight through (wrong)."""

    @staticmethod
    def forward(ctx, x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    @staticmethod
    def backward(ctx, g):
        return (np.zeros_like(g),)


def test_random_upstream_catches_what_sum_would_miss(rng):
    x = ta.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    # d sum(softmax)/dx is 0, so a zero backward agrees with finite differences on out.sum() ...
    s = SoftmaxWithWrongBackward.apply(x).sum()
    s.backward()
    np.testing.assert_allclose(x.grad, 0.0)
    # ... but gradcheck's random weighting exposes it
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(2, 3\)\)(.|\n)*at \(\d, \d\): analytic"):
        gradcheck(SoftmaxWithWrongBackward.apply, (x,))
    assert gradcheck(SoftmaxWithWrongBackward.apply, (x,), raise_exception=False) is False


def test_error_is_runtime_error_with_values(rng):
    x = ta.tensor(rng.standard_normal(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="analytic .* vs numerical"):
        gradcheck(SoftmaxWithWrongBackward.apply, (x,))


def test_passes_a_correct_op_and_warns_on_float32(rng):
    x = ta.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: t.softmax(-1), (x,))
    with pytest.warns(UserWarning, match="float64"):
        gradcheck(lambda t: t * 2.0, (ta.ones(2, requires_grad=True),), atol=1e-2, eps=1e-2)


def test_does_not_touch_global_rng(rng):
    x = ta.tensor(rng.standard_normal(3), requires_grad=True)
    state = np.random.get_state()[1].copy()
    ta.manual_seed(3)
    expected = ta.randn(4).array
    ta.manual_seed(3)
    gradcheck(lambda t: t.exp(), (x,))
    np.testing.assert_array_equal(ta.randn(4).array, expected)
    np.testing.assert_array_equal(np.random.get_state()[1], state)


def test_message_explains_the_numbers_and_lists_the_three_worst_elements():
    x = ta.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(SoftmaxWithWrongBackward.apply, (x,))
    message = str(info.value)
    assert "L = sum(output ⊙ R)" in message and "'analytic' from" in message and "finite differences" in message
    worst = [line for line in message.splitlines() if line.strip().startswith("at (")]
    assert len(worst) == 3
    assert len({line.split(":")[0] for line in worst}) == 3  # three different indices


def test_same_failure_same_message_and_the_seed_changes_the_weights(rng):
    """gradcheck is reproducible: its weights come from ``seed`` (default 0), never from fresh entropy."""
    x = ta.tensor(rng.standard_normal(4), requires_grad=True)

    def message(**kwargs):
        with pytest.raises(GradcheckError) as err:
            gradcheck(SoftmaxWithWrongBackward.apply, (x,), **kwargs)
        return str(err.value)

    assert message() == message() == message(seed=0)
    assert message(seed=1) != message(seed=0)


def test_exact_agreement_passes_with_zero_tolerance():
    """``x ↦ x`` at 0 with a power-of-two eps: the differences are exact, so excess is 0, which passes."""
    assert gradcheck(lambda t: t * 1.0, (ta.zeros(3, dtype=ta.float64, requires_grad=True),),
                     eps=2.0**-20, atol=0.0, rtol=0.0)


def test_the_float32_warning_points_at_the_caller_and_a_callable_without_name_is_shown_by_repr():
    import functools

    with pytest.warns(UserWarning, match="float64") as record:
        gradcheck(lambda t: t * 2.0, (ta.ones(2, requires_grad=True),), atol=1e-2, eps=1e-2)
    # the caller's line (under mutation testing, mutmut's trampoline sits between the caller and gradcheck)
    assert record[0].filename == __file__ or record[0].filename.endswith("trampoline.py")
    wrong = functools.partial(SoftmaxWithWrongBackward.apply)
    with pytest.raises(GradcheckError, match=r"^gradcheck: functools\.partial\("):
        gradcheck(wrong, (ta.tensor(np.arange(3.0), requires_grad=True),))


class CubeWithConstantSlope(Function):
    """``x³`` whose backward, when recorded as ops, treats the saved ``x`` as a constant: its first derivative is
    right, its second is not (planted)."""

    on_arrays = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        x = x.detach().numpy() if isinstance(x, ta.Tensor) else x
        return grad_output * (3 * x * x)


def test_gradgradcheck_takes_an_input_the_function_does_not_use():
    """As torch's: an input that requires grad but that the function ignores has a zero second derivative."""
    a, b = (ta.tensor(np.linspace(-1, 1, n), requires_grad=True) for n in (4, 3))
    assert ta.autograd.gradgradcheck(lambda s, t: (s * s).sin(), [a, b])


def test_gradgradcheck_takes_grad_outputs_with_zeros():
    """A one-hot grad_outputs (the second derivative of one output element) is an ordinary vector."""
    x = ta.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    one_hot = ta.tensor(np.eye(5)[1], requires_grad=True)
    assert ta.autograd.gradgradcheck(lambda t: (t * t).tanh(), [x], one_hot)
    with pytest.raises(GradcheckError):
        ta.autograd.gradgradcheck(CubeWithConstantSlope.apply, [x], one_hot)


def test_gradgradcheck_is_reproducible_and_its_seed_reaches_the_outer_check(rng):
    """With grad_outputs given, only the seed picks the outer check's weights: the same seed, the same message."""
    x = ta.tensor(rng.standard_normal(4), requires_grad=True)
    r = ta.tensor(rng.standard_normal(4), requires_grad=True)

    def message(**kwargs):
        with pytest.raises(GradcheckError) as err:
            ta.autograd.gradgradcheck(CubeWithConstantSlope.apply, [x], r, **kwargs)
        return str(err.value)

    assert message() == message(seed=0)
    assert message(seed=1) == message(seed=1) != message(seed=0)
