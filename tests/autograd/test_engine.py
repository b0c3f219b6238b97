"""The backward engine: accumulation, node reuse, deep graphs, grad mode, graph release, the guard on what
each backward returns (count, shape, dtype)."""

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.autograd import Function, grad


def test_reused_node_gets_every_contribution():
    a = ta.tensor(3.0, requires_grad=True)
    b = a + a
    c = b + b
    c.backward()
    assert a.grad == 4.0


def test_gradients_accumulate_across_calls():
    a = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (a * a).sum().backward()
    (a * 3.0).sum().backward()
    np.testing.assert_allclose(a.grad, 2 * a.array + 3.0)


def test_non_leaf_keeps_no_grad_unless_retained():
    a = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = a * 2.0
    c = a * 3.0
    c.retain_grad()
    (b * c).sum().backward()
    assert b.grad is None
    np.testing.assert_allclose(c.grad, b.array)
    assert not b.is_leaf and a.is_leaf


def test_deep_chain_without_recursion():
    x = ta.tensor(1.0, dtype=ta.float64, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y + 1e-4 * y
    y.backward()
    np.testing.assert_allclose(x.grad, (1 + 1e-4) ** 10_000, rtol=1e-10)


def test_backward_needs_gradient_for_non_scalar():
    x = ta.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"one-element.*\(2, 3\)"):
        (x * 2.0).backward()
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)"):
        (x * 2.0).backward(np.ones(3))


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        ta.ones(2).sum().backward()


def test_no_grad_builds_no_graph_and_restores_mode():
    x = ta.ones(2, requires_grad=True)
    with ta.no_grad():
        assert not ta.is_grad_enabled()
        y = x * 2.0
        with ta.enable_grad():
            z = x * 2.0
    assert ta.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad

    @ta.no_grad()
    def f(t):
        return t * 2.0

    assert not f(x).requires_grad
    assert ta.is_grad_enabled()


def test_second_backward_raises_unless_retained():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 4 * x.array)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_saved_arrays_released_after_backward():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * x
    node = y.grad_fn
    assert node.ctx.saved_tensors
    y.sum().backward()
    assert node.released and node.ctx is None
    assert node.input_meta == () and node.saved_versions == ()  # (what only its backward read, freed with it)
    assert node.next_functions == ((x.gradient_edge(), 0), (x.gradient_edge(), 0))  # (the edges stay, as torch's)


def buggy_op(name, backward):
    """A doubling op called ``name`` whose ``backward`` has a bug the engine's guard must name."""
    return type(name, (Function,), {"forward": staticmethod(lambda ctx, x: x * 2), "backward": staticmethod(backward),
                                    "on_arrays": True})


@pytest.mark.parametrize(("name", "backward", "shape", "message"), [
    ("WrongShape", lambda ctx, g: (g.sum(axis=0),), (2, 3),  # drops a dim
     r"WrongShape.backward .* shape \(3,\) .* shape \(2, 3\)"),
    ("TwoGradients", lambda ctx, g: (g * 2, g), (3,),  # one input, two gradients
     r"^TwoGradients.backward returned 2 gradients for 1 inputs"),
    ("Float64Gradient", lambda ctx, g: (g.astype(np.float64) * 2,), (3,),  # float32 input, float64 gradient
     r"dtype float64 for input 0, which has shape \(3,\) and dtype float32"),
])
def test_the_guard_names_the_op_and_what_its_backward_got_wrong(name, backward, shape, message):
    x = ta.ones(*shape, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        buggy_op(name, backward).apply(x).sum().backward()


def test_the_guard_takes_an_equal_dtype_that_is_another_object():
    # float32 with metadata equals float32 but is not NumPy's float32 dtype object: the guard's quick identity
    # check sends it to the full comparison, which must accept it (and the gradient must arrive unchanged)
    tagged = np.dtype(np.float32, metadata={"unit": "m"})
    op = buggy_op("Tagged", lambda ctx, g: ((g * 2).astype(tagged),))
    x = ta.ones(2, 3, requires_grad=True)
    upstream = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    op.apply(x).backward(upstream)
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), upstream * 2)


def test_needs_input_grad_is_one_bool_per_input_as_in_torch():
    seen = []

    class Scale(Function):
        on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
        @staticmethod
        def forward(ctx, x, factor, y):
            seen.append(ctx.needs_input_grad)  # (as it is: torch's is a tuple, so == (True, False) holds)
            return x * factor + y

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None, None

    x, y = ta.ones(2, requires_grad=True), ta.ones(2)
    Scale.apply(x, 3.0, y)  # a tensor that wants a gradient, a Python number, a tensor that does not
    Scale.apply(y, np.float32(2.0), x)
    assert seen == [(True, False, False), (False, False, True)]
    assert all(type(need) is bool for needs in seen for need in needs)


class Square(Function):
    on_arrays = True  # an op as tinyattn's own: forward and backward on arrays
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return (2 * x * grad_output,)


def test_custom_function_from_the_docs():
    t = ta.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    y = Square.apply(t)
    np.testing.assert_array_equal(y.array, [1.0, 4.0, 9.0])
    y.backward(np.array([1.0, 1.0, 0.5]))
    np.testing.assert_array_equal(t.grad, [2.0, -4.0, 3.0])


def test_grad_function_leaves_dot_grad_alone():
    x = ta.tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * 3.0
    (gx, gh) = grad((h * h).sum(), [x, h])
    np.testing.assert_allclose(gx, 18 * x.array)
    np.testing.assert_allclose(gh, 2 * h.array)
    assert x.grad is None


def test_intermediate_values_are_not_kept_alive_by_the_graph():
    import gc
    import weakref

    x = ta.tensor(np.ones(3), requires_grad=True)
    middle = x * 2.0
    ref = weakref.ref(middle)
    y = middle.exp()  # Exp saves its output, not its input
    del middle
    gc.collect()
    assert ref() is None
    y.backward(np.ones(3))
    np.testing.assert_allclose(x.grad, 2 * np.exp(2.0))


def test_autograd_backward_frees_the_graph_by_default_and_takes_a_sequence_of_outputs():
    x = ta.tensor([1.0, 2.0], dtype=ta.float64, requires_grad=True)
    y = (x * x).sum()
    ta.autograd.backward([y, y])  # torch's spelling: a sequence of outputs (here one twice: twice its gradient)
    np.testing.assert_array_equal(x.grad, [4.0, 8.0])
    with pytest.raises(RuntimeError, match="second time"):
        ta.autograd.backward(y)  # retain_graph is False by default
    with pytest.raises(TypeError, match="^grad: outputs must be a Tensor or a sequence of Tensors, got int"):
        ta.autograd.grad(3, [x])


def test_a_backward_whose_gradients_all_fit_is_passed_on_as_it_is():
    returned = {}

    def backward(ctx, g):  # a gradient for x, None for y (which needs none)
        returned["grads"] = (g * 2, None)
        return returned["grads"]

    pair = type("Pair", (Function,), {"on_arrays": True, "forward": staticmethod(lambda ctx, x, y: x * y),
                                      "backward": staticmethod(backward)})
    node = pair.apply(ta.ones(3, requires_grad=True), ta.ones(3)).grad_fn
    assert node.backward(np.ones(3, np.float32)) is returned["grads"]  # the guard copies nothing on this path


def test_the_guard_names_the_input_whose_gradient_misfits_even_when_one_array_serves_two():
    # x (2, 3) + b (3,): a backward that forgets to unbroadcast returns the same array for both inputs; the
    # first fits, the second does not, and the message must name input 1 with b's shape
    forgets = type("ForgetsUnbroadcast", (Function,), {
        "forward": staticmethod(lambda ctx, x, b: x + b),
        "backward": staticmethod(lambda ctx, g: (g, g)),
        "on_arrays": True})
    x, b = ta.ones(2, 3, requires_grad=True), ta.ones(3, requires_grad=True)
    upstream = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"^ForgetsUnbroadcast.backward returned a gradient of shape \(2, 3\) and "
                                           r"dtype float32 for input 1, which has shape \(3,\) and dtype float32$"):
        forgets.apply(x, b).backward(upstream)
