"""The core alone, as a student uses it: its Tensor, its ops, its ``backward``, and the classes it makes.

tinyattn's torch-like Tensor runs torch's backward (``autograd/backprop.py``) over the core's op classes;
these tests call the core's own ``backward`` (``core/engine.py``) and its pieces, each against derivatives
written out by hand, with random upstream gradients. The whole package is imported (the conftest does): the
core's tensors stay the core's all the same.
"""

import numpy as np
import pytest

from tinyattn.autograd import core
from tinyattn.autograd.core import checks, engine
from tinyattn.autograd.core.function import Function, LeafNode, Node, TensorBase
from tinyattn.autograd.core.ops.elementwise import Exp, Mul
from tinyattn.autograd.core.ops.matmul import MatMul
from tinyattn.autograd.core.ops.reduction import Sum

RNG = np.random.default_rng(20261207)


def leaf(*shape):
    return core.Tensor(RNG.standard_normal(shape), requires_grad=True)


def test_the_core_backward_of_a_matmul_and_an_exp_is_the_chain_rule_with_a_random_upstream_gradient():
    a, b = leaf(3, 4), leaf(4, 2)
    c = MatMul.apply(a, b)
    y = Exp.apply(c)
    g = RNG.standard_normal((3, 2))
    y.backward(g)  # the core's Tensor.backward: the engine, from g
    dc = g * np.exp(a.array @ b.array)  # d exp(c) / dc = exp(c)
    np.testing.assert_allclose(a.grad.array, dc @ b.array.T)
    np.testing.assert_allclose(b.grad.array, a.array.T @ dc)
    assert type(a.grad) is core.Tensor and type(y) is core.Tensor and type(y.grad_fn) is Node


def test_a_leaf_used_twice_gets_the_sum_of_both_paths_and_a_second_backward_adds_to_it():
    x = leaf(5)
    g = RNG.standard_normal(5)
    y = Mul.apply(x, x)  # y = x², dy/dx = 2x: one path through each input
    engine.backward(y, g)
    np.testing.assert_allclose(x.grad.array, 2 * x.array * g)
    engine.backward(Mul.apply(x, x), g)  # .grad accumulates across passes
    np.testing.assert_allclose(x.grad.array, 4 * x.array * g)


def test_a_one_element_output_starts_from_one_and_the_tensor_method_is_the_engine():
    x = leaf(2, 3)
    total = Sum.apply(Mul.apply(x, 3.0), dim=None, keepdim=False)
    total.backward()  # core.Tensor.backward: no gradient needed for one element
    np.testing.assert_allclose(x.grad.array, np.full((2, 3), 3.0))
    assert x.grad.dtype == x.dtype


def test_a_gradient_given_as_a_tensor_is_read_as_its_array_in_the_outputs_dtype():
    x = core.Tensor(RNG.standard_normal(4).astype(np.float32), requires_grad=True)
    g = core.Tensor(RNG.standard_normal(4))  # float64, for a float32 output
    engine.backward(Mul.apply(x, 2.0), g)
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.array, 2.0 * g.array.astype(np.float32), rtol=1e-6)


def test_the_core_refuses_a_start_it_cannot_use():
    x = leaf(3)
    with pytest.raises(RuntimeError, match=r"one-element outputs; this output has shape \(3,\)"):
        engine.backward(Mul.apply(x, 2.0))
    with pytest.raises(ValueError, match=r"gradient has shape \(2,\), expected the output's shape \(3,\)"):
        engine.backward(Mul.apply(x, 2.0), np.ones(2))
    with pytest.raises(RuntimeError, match="does not require grad"):
        engine.backward(core.Tensor(np.ones(3)))


def test_only_the_nodes_behind_the_output_run_and_each_after_every_node_that_uses_its_output():
    x = leaf(3)
    y = Exp.apply(x)
    z = Mul.apply(y, y)  # y's node feeds z twice
    unrelated = Exp.apply(leaf(3))
    order = engine.topological_order([z.grad_fn])
    assert order[0] is z.grad_fn and order[-1] is x.gradient_edge()
    assert order.index(y.grad_fn) > order.index(z.grad_fn) and len(order) == 3
    assert unrelated.grad_fn not in order


def test_each_node_runs_once_with_its_complete_gradient_and_a_leafs_node_runs_no_backward(monkeypatch):
    x = leaf(4)
    y = Exp.apply(x)
    z = Mul.apply(y, y)
    g = RNG.standard_normal(4)
    seen = []
    node_backward = Node.backward

    def spy(node, grad_output):
        seen.append((node, grad_output.copy()))
        return node_backward(node, grad_output)

    monkeypatch.setattr(Node, "backward", spy)
    engine.backward(z, g)
    assert [node for node, _ in seen] == [z.grad_fn, y.grad_fn]  # a leaf's node: its gradient flows no further
    np.testing.assert_allclose(seen[1][1], 2 * np.exp(x.array) * g)  # both uses of y, summed before y's step
    np.testing.assert_allclose(x.grad.array, 2 * np.exp(2 * x.array) * g)


def test_a_node_keeps_none_for_an_input_that_takes_no_gradient():
    x, constant = leaf(2), core.Tensor(np.ones(2))
    node = Mul.apply(x, constant).grad_fn
    assert node.edges == (x.gradient_edge(), None)
    assert node.input_meta == (((2,), np.dtype(np.float64)), None)
    sink = x.gradient_edge()
    assert type(sink) is LeafNode and sink is x.gradient_edge()  # (one node per leaf, for all its graphs)
    assert sink.retained() is x and constant.gradient_edge() is None
    assert sink.edges == () and sink.input_meta == () and sink.ctx is None  # no inputs, nothing saved


def test_no_node_is_recorded_when_no_input_wants_a_gradient():
    y = Mul.apply(core.Tensor(np.ones(2)), 2.0)
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf


def test_a_backward_returning_a_gradient_of_the_wrong_shape_is_refused_with_the_op_and_the_shapes():
    class Broken(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output[:1]

    x = leaf(3)
    with pytest.raises(RuntimeError, match=r"Broken.backward returned a gradient of shape \(1,\) and dtype "
                                           r"float64 for input 0, which has shape \(3,\)"):
        engine.backward(Broken.apply(x), np.ones(3))


def test_a_bare_gradient_is_taken_for_a_one_input_op_and_a_wrong_count_is_refused():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2  # bare, not a 1-tuple

    class TwoForOne(Twice):
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = leaf(3)
    engine.backward(Twice.apply(x), np.ones(3))
    np.testing.assert_allclose(x.grad.array, np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="TwoForOne.backward returned 2 gradients for 1 inputs"):
        engine.backward(TwoForOne.apply(x), np.ones(3))


def test_the_core_tensor_guards_requires_grad_and_grad():
    with pytest.raises(RuntimeError, match="only floating point tensors can require gradients"):
        core.Tensor(np.arange(3), requires_grad=True)
    x = leaf(2)
    with pytest.raises(RuntimeError, match="only be turned off on a leaf"):
        Mul.apply(x, 2.0).requires_grad = False
    x.requires_grad = False
    assert not x.requires_grad
    with pytest.raises(RuntimeError, match=r"assigned grad has shape \(3,\)"):
        x.grad = core.Tensor(np.ones(3))
    with pytest.raises(TypeError, match="got grad of type ndarray"):
        x.grad = np.ones(2)
    x.grad = core.Tensor(np.ones(2))
    np.testing.assert_allclose(x.grad.array, np.ones(2))


def test_the_operators_apply_the_ops():
    a, b = leaf(3), leaf(3)
    cases = [(a + b, a.array + b.array), (a - b, a.array - b.array), (a * b, a.array * b.array),
             (a / b, a.array / b.array), (2.0 - a, 2.0 - a.array), (2.0 / a, 2.0 / a.array), (-a, -a.array),
             (2.0 + a, 2.0 + a.array), (2.0 * a, 2.0 * a.array), (2.0 ** a, 2.0 ** a.array),
             (a ** 2.0, a.array ** 2.0)]
    for result, expected in cases:
        np.testing.assert_allclose(result.array, expected)
        assert result.grad_fn is not None
    m = leaf(3, 2)
    np.testing.assert_allclose((a @ m).array, a.array @ m.array)
    assert (a.shape, a.dtype, a.ndim) == ((3,), np.dtype(np.float64), 1)


def test_a_class_built_on_the_core_tensor_gets_results_and_nodes_of_its_own_kinds_by_its_class_attributes():
    class NodeOfMine(Node):
        pass

    class LeafOfMine(LeafNode):
        pass

    class Richer(core.Tensor):
        node_class = NodeOfMine
        leaf_class = LeafOfMine

    x = Richer(RNG.standard_normal(2), requires_grad=True)
    y = Mul.apply(x, leaf(2))  # a core tensor beside it: the result is of the more derived class
    assert type(y) is Richer and type(y.grad_fn) is NodeOfMine and type(x.gradient_edge()) is LeafOfMine
    plain = Mul.apply(leaf(2), 2.0)
    assert type(plain) is core.Tensor and type(plain.grad_fn) is Node  # the core's own, as before
    assert isinstance(x, TensorBase)


def test_op_result_is_the_last_step_of_apply_and_a_class_built_on_the_tensor_may_add_to_it():
    calls = []

    class Noting(core.Tensor):
        @classmethod
        def op_result(cls, result, fn, inputs, options):
            calls.append((fn, inputs, options))
            result.noted = True
            return result

    x = Noting(np.ones((2, 3)))
    y = x.sum(dim=1)
    assert y.noted and calls == [(Sum, (x,), {"dim": 1, "keepdim": False})]


def test_an_op_without_a_tensor_among_its_inputs_is_refused_naming_what_it_got():
    with pytest.raises(TypeError, match=r"Mul.apply: expected a tensor among the inputs, got \(ndarray, float\)"):
        Mul.apply(np.ones(2), 2.0)


def test_a_node_of_the_core_has_the_ops_name_and_its_backward_checks_what_it_returns():
    x = leaf(2)
    node = Exp.apply(x).grad_fn
    assert isinstance(node, Node) and node.name == "Exp"
    g = RNG.standard_normal(2)
    (dx,) = node.backward(g)
    np.testing.assert_allclose(dx, g * np.exp(x.array))


def test_checks_name_the_op_and_the_dims():
    assert checks.normalize_dims("sum", None, 3) == (0, 1, 2)
    assert checks.normalize_dims("sum", (-1, 0), 3) == (0, 2)
    assert checks.normalize_dims("sum", 0, 0) == ()
    assert checks.normalize_dim("t", -1, 0) == 0
    with pytest.raises(ValueError, match=r"sum: dim \(1, -2\) repeats an axis"):
        checks.normalize_dims("sum", (1, -2), 3)
    with pytest.raises(IndexError, match=r"softmax: dim 3 is out of range for a tensor with 3 dimensions \(expected "
                                         r"-3..2\)"):
        checks.normalize_dim("softmax", 3, 3)
    with pytest.raises(TypeError, match="dim must be an int, got bool"):
        checks.normalize_dim("softmax", True, 3)
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast together"):
        checks.broadcast_shapes("add", (2, 3), (4,))
    assert checks.broadcasts_to((1, 3), (2, 3)) and not checks.broadcasts_to((2, 3), (1, 3))
    assert not checks.broadcasts_to((4,), (2, 3))


def test_grad_mode_switches_recording_off_and_back_on():
    from tinyattn.autograd.core import grad_mode

    x = leaf(2)
    with grad_mode.no_grad():
        assert Mul.apply(x, 2.0).grad_fn is None
        with grad_mode.enable_grad():
            assert Mul.apply(x, 2.0).grad_fn is not None
    with grad_mode.inference_mode():
        assert not grad_mode.is_grad_enabled()
    with grad_mode.inference_mode(False):  # (inference mode off: recording as before, as torch)
        assert grad_mode.is_grad_enabled()
    assert grad_mode.is_grad_enabled()


def test_the_recorder_hears_each_forward_and_each_backward_step_of_the_core():
    from tinyattn.autograd.core import grad_mode

    heard = []

    class Recorder:
        def forward(self, node, inputs, output):
            heard.append(("forward", node.name, inputs, output))

        def backward(self, node, grad_output, grad_inputs):
            heard.append(("backward", node.name, grad_output, grad_inputs))

    x = leaf(3)
    g = RNG.standard_normal(3)
    previous = grad_mode.set_recorder(Recorder())
    try:
        y = Exp.apply(x)
        engine.backward(y, g)
    finally:
        grad_mode.set_recorder(previous)
    (kind, name, inputs, output), (kind2, name2, grad_output, grad_inputs) = heard
    assert (kind, name, kind2, name2) == ("forward", "Exp", "backward", "Exp")
    assert inputs == (x,) and output is y and grad_output is g
    np.testing.assert_allclose(grad_inputs[0], g * np.exp(x.array))


def test_a_cast_to_the_dtype_an_array_has_is_the_array_itself_and_otherwise_a_converted_copy():
    from tinyattn.autograd.core.dtypes import promote
    from tinyattn.autograd.core.ops.shared import cast

    a = RNG.standard_normal(3).astype(np.float32)
    assert promote(np.dtype(np.float32), a) is a and cast(a, np.float32) is a  # (no copy: the same memory)
    for converted in (promote(np.dtype(np.float64), a), cast(a, np.float64)):
        assert converted.dtype == np.float64 and not np.shares_memory(converted, a)
        np.testing.assert_array_equal(converted, a.astype(np.float64))
    assert type(promote(np.dtype(np.float32), 2)) is np.float32  # a Python number becomes a NumPy scalar


class FirstOnly(Function):
    """``out = a + b``, whose backward sends nothing to ``b`` (as an op whose input is overwritten)."""

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


class SecondOnly(FirstOnly):
    @staticmethod
    def backward(ctx, grad_output):
        return None, grad_output


@pytest.mark.parametrize("op", [FirstOnly, SecondOnly])
def test_an_input_a_backward_sends_nothing_gets_nothing_and_the_pass_goes_on_to_the_others(op):
    a, b, c = leaf(3), leaf(3), leaf(3)
    g = RNG.standard_normal(3)
    # each input reached by one path; a's and b's nodes are non-leaves, so one of them gets no gradient at all
    out = op.apply(Exp.apply(a), Mul.apply(b, c))
    engine.backward(out, g)
    if op is FirstOnly:
        np.testing.assert_allclose(a.grad.array, g * np.exp(a.array))
        assert b.grad is None and c.grad is None
    else:
        np.testing.assert_allclose(b.grad.array, g * c.array)
        np.testing.assert_allclose(c.grad.array, g * b.array)
        assert a.grad is None


def test_an_input_used_twice_that_one_use_sends_nothing_gets_the_other_uses_gradient():
    a = leaf(4)
    g = RNG.standard_normal(4)
    engine.backward(FirstOnly.apply(a, a), g)
    np.testing.assert_allclose(a.grad.array, g)
    b = leaf(4)
    engine.backward(SecondOnly.apply(b, b), g)
    np.testing.assert_allclose(b.grad.array, g)


def test_the_core_tensors_own_methods_are_its_ops_with_their_gradients():
    x = leaf(2, 3, 4)
    g = RNG.standard_normal((3, 2, 4))
    y = x.reshape(3, 2, 4)
    assert type(y) is core.Tensor and y.grad_fn.name == "Reshape"
    np.testing.assert_array_equal(x.reshape((3, 8)).array, x.array.reshape(3, 8))
    np.testing.assert_array_equal(x.reshape([4, -1]).array, x.array.reshape(4, 6))
    np.testing.assert_array_equal(x.reshape(24).array, x.array.reshape(24))
    y.backward(g)
    np.testing.assert_array_equal(x.grad.array, g.reshape(2, 3, 4))
    np.testing.assert_array_equal(x.transpose(0, -1).array, x.array.swapaxes(0, 2))
    e = np.exp(x.array - x.array.max(axis=1, keepdims=True))
    np.testing.assert_allclose(x.softmax(dim=1).array, e / e.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(x.log_softmax(dim=1).array, np.log(e / e.sum(axis=1, keepdims=True)))
    assert x.log_softmax(dim=-1).grad_fn.name == "LogSoftmax"
    np.testing.assert_allclose(x.sum().array, x.array.sum())
    np.testing.assert_allclose(x.sum(dim=(0, 2), keepdim=True).array, x.array.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(x.mean().array, x.array.mean())
    np.testing.assert_allclose(x.mean(dim=1).array, x.array.mean(axis=1))
    np.testing.assert_allclose(x.mean(1, True).array, x.array.mean(axis=1, keepdims=True))
    x.grad = None
    h = RNG.standard_normal((2, 3))
    x.mean(dim=2).backward(h)
    np.testing.assert_allclose(x.grad.array, np.repeat(h[:, :, None] / 4, 4, axis=2))


class Scaled(Function):
    """``out = factor · x`` (a symmetric Jacobian: factor I), whose backward reads its option from ``ctx.kwargs``."""

    symmetric = True

    @staticmethod
    def forward(ctx, x, *, factor):
        return x * factor

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.kwargs["factor"]  # (bare: one input)


def test_the_default_jvp_follows_from_what_an_op_says_of_itself():
    from tinyattn.autograd.core.ops.elementwise import Add, MaskedFill, Where
    from tinyattn.autograd.core.ops.matmul import Einsum
    from tinyattn.autograd.core.ops.softmax import Softmax

    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    ta_, tb = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    out = a @ b
    np.testing.assert_allclose(MatMul.jvp((ta_, tb), (a, b), out), ta_ @ b + a @ tb)  # multilinear
    c, tc = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    np.testing.assert_allclose(Einsum.jvp((ta_, tc), (a, c), None, equation="ij,ij->i"), (ta_ * c + a * tc).sum(1))
    np.testing.assert_allclose(Add.jvp((ta_, tc), (a, c), a + c), ta_ + tc)  # linear: the op on the tangents
    cond = a > 0
    np.testing.assert_allclose(Where.jvp((None, ta_, tc), (cond, a, c), None), np.where(cond, ta_, tc))
    np.testing.assert_allclose(MaskedFill.jvp((ta_, None), (a, cond), None, value=5.0), np.where(cond, 0.0, ta_))
    y = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    np.testing.assert_allclose(Softmax.jvp((ta_,), (a,), y, dim=1), y * (ta_ - (ta_ * y).sum(1, keepdims=True)))
    np.testing.assert_allclose(Scaled.jvp((ta_,), (a,), None, factor=3.0), 3.0 * ta_)  # symmetric, bare


def test_an_op_that_states_no_jvp_and_nothing_it_follows_from_has_none():
    class Opaque(Function):
        @staticmethod
        def forward(ctx, x):
            return x

    with pytest.raises(NotImplementedError, match="Opaque has no jvp: forward-mode AD does not support it"):
        Opaque.jvp((np.ones(2),), (np.ones(2),), np.ones(2))
