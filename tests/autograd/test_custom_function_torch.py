"""A Function written as torch's "Extending PyTorch" docs write it runs on tinyattn as on torch.

Each program below is written once against a ``lib`` (tinyattn or torch) and run on both; values,
gradients, second derivatives and errors are compared. The Functions receive Tensors and compute
with Tensor methods (``x.exp()``, ``ctx.save_for_backward(t)``), as torch's own examples do.
"""

import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def library_functions(lib):
    """The same custom Functions, subclassing ``lib.autograd.Function``."""
    Function = lib.autograd.Function

    class LegendrePolynomial3(Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    class MyExp(Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    class ScaleAndShift(Function):  # a number among the inputs, and two outputs
        @staticmethod
        def forward(ctx, x, factor, y):
            ctx.factor = factor
            ctx.seen = (tuple(ctx.needs_input_grad), lib.is_grad_enabled())
            return x * factor + y, (x * y).sum(-1)

        @staticmethod
        def backward(ctx, grad_scaled, grad_sum):
            x, y = ctx.saved_tensors if ctx.saved_tensors else (None, None)
            return grad_scaled * ctx.factor, None, grad_scaled

    class SortWithIndices(Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x.sort(-1)
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, grad_values, grad_indices):
            (indices,) = ctx.saved_tensors
            grad = lib.zeros_like(grad_values)
            return grad.scatter(-1, indices, grad_values)

    class OnceExp(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.exp()

    class TooManyGradients(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, grad_output

    return dict(LegendrePolynomial3=LegendrePolynomial3, MyExp=MyExp, ScaleAndShift=ScaleAndShift,
                SortWithIndices=SortWithIndices, OnceExp=OnceExp, TooManyGradients=TooManyGradients)


def both(program):
    """``program(lib, functions)`` on tinyattn and on torch: its results, as NumPy arrays, side by side."""
    results = []
    for lib in (ta, torch):
        out = program(lib, library_functions(lib))
        results.append([np.asarray(o.detach().numpy()) if hasattr(o, "detach") else o for o in out])
    return results


def assert_same(results, rtol=1e-12):
    for mine, other in zip(*results):
        if isinstance(mine, np.ndarray):
            assert mine.dtype == other.dtype and mine.shape == other.shape
            np.testing.assert_allclose(mine, other, rtol=rtol, atol=1e-12)
        else:
            assert mine == other


def test_the_tutorials_polynomial_trains_as_on_torch():
    def program(lib, fns):
        x = lib.linspace(-math.pi, math.pi, 200, dtype=lib.float64)
        y = lib.sin(x)
        a, b, c, d = (lib.full((), v, dtype=lib.float64, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
        for _ in range(50):
            loss = (a + b * fns["LegendrePolynomial3"].apply(c + d * x) - y).pow(2).sum()
            loss.backward()
            with lib.no_grad():
                for p in (a, b, c, d):
                    p -= 5e-4 * p.grad
                    p.grad = None
        return [loss, a, b, c, d]

    assert_same(both(program), rtol=1e-10)


def test_two_outputs_a_number_input_and_what_forward_sees():
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    g1, g2 = rng.standard_normal((3, 4)), rng.standard_normal(3)

    def program(lib, fns):
        x, y = lib.tensor(xs, requires_grad=True), lib.tensor(ys, requires_grad=True)
        scaled, summed = fns["ScaleAndShift"].apply(x, 2.5, y)
        ((scaled * lib.tensor(g1)).sum() + (summed * lib.tensor(g2)).sum()).backward()
        return [scaled, summed, x.grad, y.grad, scaled.requires_grad, summed.requires_grad]

    assert_same(both(program))
    ctx_seen = []
    for lib in (ta, torch):
        fns = library_functions(lib)
        out = fns["ScaleAndShift"].apply(lib.ones(2, requires_grad=True), 2.0, lib.ones(2))
        ctx_seen.append(out[0].grad_fn is not None)
    assert ctx_seen == [True, True]


def test_forward_runs_with_grad_mode_off_and_sees_needs_input_grad_as_torch():
    seen = []
    for lib in (ta, torch):
        Function = lib.autograd.Function

        class Peek(Function):
            @staticmethod
            def forward(ctx, x, factor, y, lib=lib):
                seen.append((tuple(ctx.needs_input_grad), lib.is_grad_enabled()))
                return x * factor + y

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output, None, None

        Peek.apply(lib.ones(2, requires_grad=True), 3.0, lib.ones(2))
    assert seen[0] == seen[1] == ((True, False, False), False)


def test_a_non_differentiable_output_and_a_scatter_in_backward():
    xs = np.random.default_rng(1).standard_normal((2, 5))
    g = np.random.default_rng(2).standard_normal((2, 5))

    def program(lib, fns):
        x = lib.tensor(xs, requires_grad=True)
        values, indices = fns["SortWithIndices"].apply(x)
        (values * lib.tensor(g)).sum().backward()
        return [values, indices, x.grad, indices.requires_grad, values.requires_grad]

    assert_same(both(program))


def test_second_derivative_through_a_custom_function_as_torch():
    xs = np.random.default_rng(3).standard_normal(4)

    def program(lib, fns):
        x = lib.tensor(xs, requires_grad=True)
        y = fns["MyExp"].apply(x * 1.5).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return [y, g, h]

    assert_same(both(program))


def test_once_differentiable_gives_a_first_derivative_and_refuses_a_second():
    xs = np.random.default_rng(4).standard_normal(3)

    def first(lib, fns):
        x = lib.tensor(xs, requires_grad=True)
        fns["OnceExp"].apply(x).sum().backward()
        return [x.grad]

    assert_same(both(first))
    for lib in (ta, torch):
        x = lib.tensor(xs, requires_grad=True)
        v = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = library_functions(lib)["OnceExp"].apply(x)
        (g,) = lib.autograd.grad(y, x, grad_outputs=v, create_graph=True)  # an upstream that requires grad
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with "
                                               "@once_differentiable"):
            g.sum().backward()
        (g,) = lib.autograd.grad(library_functions(lib)["OnceExp"].apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad  # (nothing upstream requires grad: the gradient has no graph)


def test_errors_are_torchs():
    for lib in (ta, torch):
        fns = library_functions(lib)
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            fns["TooManyGradients"].apply(lib.ones(2, requires_grad=True)).sum().backward()
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        out = fns["MyExp"].apply(y)
        with lib.no_grad():
            out.add_(1)  # the saved result, changed in place
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
        with pytest.raises(TypeError, match="save_for_backward can only save variables"):
            class SavesANumber(lib.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x, 3)
                    return x

                @staticmethod
                def backward(ctx, g):
                    return g

            SavesANumber.apply(lib.ones(1, requires_grad=True))


def test_the_old_style_with_a_non_static_forward_is_refused_as_torch():
    for lib in (ta, torch):
        class MyReLU(lib.autograd.Function):
            def forward(self, input):
                return input.clamp(min=0)

            def backward(self, grad_output):
                return grad_output

        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is "
                                               "deprecated"):
            MyReLU()(lib.ones(2, requires_grad=True))


def test_a_function_on_arrays_says_so_and_stays_an_op():
    class Square(ta.autograd.Function):
        on_arrays = True

        @staticmethod
        def forward(ctx, x):
            assert type(x) is np.ndarray
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return 2 * x * grad_output

    x = ta.tensor([1.0, -2.0], requires_grad=True)
    Square.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0])


def test_forward_returning_an_array_is_told_what_it_is():
    class ReturnsArray(ta.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.numpy()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="ReturnsArray.forward must return Tensors"):
        ReturnsArray.apply(ta.ones(2))


@pytest.mark.parametrize("base, kind", [("core", np.ndarray), ("torch", ta.Tensor)])
@pytest.mark.parametrize("module", ["tinyattn.autograd.core.ops.my_op", "tinyattn", "my_course.ops"])
def test_the_function_class_built_on_decides_its_kind(base, kind, module):
    """A Function built on the core's ``Function`` is an op on arrays, as the ops in core/ops/ are; one built on
    torch's (``ta.autograd.Function``) gets torch's contract, Tensors in and out. Where it is defined (inside
    tinyattn's own package or not) does not matter."""
    seen = []

    def forward(ctx, x):
        seen.append(type(x))
        return x * 2

    def backward(ctx, grad_output):
        return grad_output * 2

    parent = ta.autograd.core.Function if base == "core" else ta.autograd.Function
    op = type("Double", (parent,), {"__module__": module, "forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})
    x = ta.tensor([1.0, -2.0], requires_grad=True)
    op.apply(x).sum().backward()
    assert seen == [kind]
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def _returning(lib, make_gradient, name="Returning"):
    """A Function ``name`` on ``lib`` whose forward doubles ``x`` and whose backward returns
    ``make_gradient(lib, g)``."""

    def forward(ctx, x):
        return x * 2

    def backward(ctx, grad_output):
        return make_gradient(lib, grad_output)

    return type(name, (lib.autograd.Function,), {"forward": staticmethod(forward),
                                                 "backward": staticmethod(backward)})


@pytest.mark.parametrize("name, make_gradient", [
    ("broadcast", lambda lib, g: g * lib.tensor(np.arange(1.0, 7.0).reshape(2, 1, 3), dtype=g.dtype)),
    ("float64", lambda lib, g: (g * 3).double()),
])
def test_a_gradient_of_a_broadcast_shape_or_another_dtype_is_fitted_to_its_input_as_torch(name, make_gradient):
    """torch sums a gradient of a shape the input broadcasts to down to the input's shape, and casts it to the
    input's dtype, before it flows on."""
    data = np.random.default_rng(5).standard_normal((1, 3)).astype(np.float32)
    results = []
    for lib in (ta, torch):
        x = lib.tensor(data, requires_grad=True)
        _returning(lib, make_gradient).apply(x).sum().backward()
        results.append((x.grad.dtype, x.grad.shape, x.grad.detach().numpy()))
    (ours_dtype, ours_shape, ours), (their_dtype, their_shape, theirs) = results
    assert str(ours_dtype).split(".")[-1] == str(their_dtype).split(".")[-1] == "float32"
    assert tuple(ours_shape) == tuple(their_shape) == (1, 3)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_a_gradient_that_does_not_fit_its_input_is_refused_naming_the_users_function_as_torch():
    messages = []
    for lib in (ta, torch):
        x = lib.ones(3, requires_grad=True)
        BadBackward = _returning(lib, lambda lib, g: g[:1], name="BadBackward")
        with pytest.raises(RuntimeError) as caught:
            BadBackward.apply(x).sum().backward()
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == ("Function BadBackwardBackward returned an invalid gradient at index 0 - "
                                          "got [1] but expected shape compatible with [3]")
