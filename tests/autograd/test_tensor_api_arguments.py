"""Tensor methods pass on each argument they take, cast what they write in place, and name themselves
in their errors, as torch's methods do (torch is the oracle where it runs)."""

import math

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

IN_PLACE = {"div_": ((2.0,), {}), "clamp_": ((), {"min": 0.0}), "uniform_": ((), {}), "normal_": ((), {}),
            "sub_": ((1.0,), {}), "fill_": ((1.0,), {}), "zero_": ((), {}), "copy_": ((np.zeros(3),), {})}


@pytest.mark.parametrize("op", sorted(IN_PLACE))
def test_an_in_place_op_on_a_leaf_that_requires_grad_is_refused_under_its_own_name(op):
    args, kwargs = IN_PLACE[op]
    with pytest.raises(RuntimeError, match=rf"^{op}: a leaf Variable that requires grad"):
        getattr(ta.ones(3, requires_grad=True), op)(*args, **kwargs)


def test_item_assignment_on_such_a_leaf_is_refused_under_its_name():
    with pytest.raises(RuntimeError, match=r"^__setitem__: a leaf Variable"):
        ta.ones(3, requires_grad=True)[0] = 1.0


def _both(make):
    """``make(lib)`` in tinyattn and in torch, as NumPy arrays (or tuples of them)."""
    def arrays(value):
        if isinstance(value, (tuple, list)):
            return tuple(arrays(v) for v in value)
        return value.detach().numpy() if hasattr(value, "detach") else value
    return arrays(make(ta)), arrays(make(torch))


def _same(ours, theirs):
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    elif isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours.dtype, theirs.dtype)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    else:
        assert ours == theirs


CASTS = {
    "fill_ an int tensor with a float": lambda lib: lib.zeros(3, dtype=lib.int64).fill_(2.7),
    "zero_ an int tensor": lambda lib: lib.ones(3, dtype=lib.int32).zero_(),
    "copy_ float64 into float32": lambda lib: lib.zeros(3).copy_(lib.tensor([1.25, 2.5, 3.75], dtype=lib.float64)),
    "copy_ a float array into an int tensor": lambda lib: lib.zeros(3, dtype=lib.int64).copy_(
        lib.tensor([1.7, -2.7, 3.2])),
    "setitem a float into an int tensor": lambda lib: _assign(lib.zeros(3, dtype=lib.int64), 1, 2.7),
    "setitem a float64 tensor into float32": lambda lib: _assign(lib.zeros(3), slice(0, 2),
                                                                 lib.tensor([0.1, 0.2], dtype=lib.float64)),
    "sub_ with alpha 2": lambda lib: lib.ones(3).sub_(lib.tensor([1.0, 2.0, 3.0]), alpha=2),
    "div_ by a tensor": lambda lib: lib.ones(3).div_(lib.tensor([2.0, 4.0, 8.0])),
    "true division in place": lambda lib: _itruediv(lib.ones(3), lib.tensor([2.0, 4.0, 8.0])),
    "clamp_ with both bounds": lambda lib: lib.tensor([-1.0, 0.5, 2.0]).clamp_(-0.5, 1.0),
    "clip with tensor bounds": lambda lib: lib.tensor([-1.0, 0.5, 2.0]).clip(lib.tensor(-0.5), lib.tensor(1.0)),
    "clamp with only a max": lambda lib: lib.tensor([-1.0, 0.5, 2.0]).clamp(max=0.0),
}


def _assign(t, index, value):
    t[index] = value
    return t


def _itruediv(t, other):
    t /= other
    return t


@pytest.mark.parametrize("name", sorted(CASTS))
def test_in_place_writes_keep_the_tensor_s_dtype_and_match_torch(name):
    _same(*_both(CASTS[name]))


@pytest.mark.parametrize("op", ["uniform_", "normal_"])
def test_random_fills_keep_a_float32_tensor_float32(op):
    t = getattr(ta.zeros(1000), op)()
    assert t.dtype == ta.float32 and t.numpy().std() > 0.1


def test_uniform_with_low_equal_to_high_fills_that_value_and_names_itself_when_low_exceeds_high():
    assert ta.zeros(3).uniform_(2.0, 2.0).tolist() == [2.0, 2.0, 2.0]  # torch allows from == to
    torch.zeros(3).uniform_(2.0, 2.0)
    with pytest.raises(RuntimeError, match="^uniform_"):
        ta.zeros(3).uniform_(3.0, 2.0)
    with pytest.raises(TypeError, match="^uniform_: generator"):
        ta.zeros(3).uniform_(generator="seed")
    with pytest.raises(TypeError, match="^normal_: generator"):
        ta.zeros(3).normal_(generator="seed")


def test_an_in_place_change_through_a_view_bumps_its_base_s_version_by_one_as_torch():
    for lib in (ta, torch):
        base = lib.zeros(3, 4)
        before = base._version
        with lib.no_grad():
            base[0].add_(1.0)
            base[1].mul_(2.0)
        assert base._version == before + 2, lib.__name__


def test_an_in_place_op_in_the_graph_keeps_the_tensor_s_dtype_and_its_gradient_s():
    grads = []
    for lib in (ta, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.add_(lib.tensor([0.5, 0.25, 0.125], dtype=lib.float64))  # float64 + float32 -> float64, cast back
        assert y.dtype == lib.float32
        y.backward(lib.tensor([1.0, 2.0, 3.0]))
        grads.append(x.grad.numpy())
    assert grads[0].dtype == grads[1].dtype == np.float32
    np.testing.assert_allclose(grads[0], grads[1])


def test_to_refuses_a_device_given_by_keyword():
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        ta.ones(2).to(device="cuda")


TO = {
    "dtype keyword": lambda lib: lib.ones(3).to(dtype=lib.float64),
    "device and dtype keywords": lambda lib: lib.ones(3).to(device="cpu", dtype=lib.int64),
    "another tensor": lambda lib: lib.ones(3).to(lib.zeros(2, dtype=lib.float64)),
    "type_as": lambda lib: lib.ones(3, dtype=lib.int64).type_as(lib.zeros(2, dtype=lib.float64)),
    "new_tensor": lambda lib: lib.ones(3, dtype=lib.float64).new_tensor([1, 2]),
    "new_zeros": lambda lib: lib.ones(3, dtype=lib.float64).new_zeros(2, 3),
    "new_ones": lambda lib: lib.ones(3, dtype=lib.float64).new_ones((2,)),
    "new_full": lambda lib: lib.ones(3, dtype=lib.float64).new_full((2,), 7),
    "norm p=0 counts the nonzeros": lambda lib: lib.tensor([0.0, 1.0, 1.0, 2.0]).norm(0),
    "triu by default": lambda lib: lib.ones(3, 3).triu(),
    "argmin and argmax keep no dim by default": lambda lib: (lib.tensor([[0.0, 5.0], [3.0, 1.0]]).argmin(1),
                                                             lib.tensor([[0.0, 5.0], [3.0, 1.0]]).argmax(0)),
    "clamp_ with tensor bounds": lambda lib: lib.tensor([-1.0, 0.5, 2.0]).clamp_(lib.tensor(-0.5), lib.tensor(1.0)),
    "norm p=2 and p=1": lambda lib: (lib.tensor([3.0, -4.0]).norm(2), lib.tensor([3.0, -4.0]).norm(1)),
    "argmax along a dim": lambda lib: lib.tensor([[0.0, 5.0], [3.0, 1.0]]).argmax(1),
    "sum of a 0-d tensor over dim 0": lambda lib: lib.tensor(2.5).sum(0),
    "isclose by the defaults": lambda lib: lib.tensor([1.0, 1.0, 0.0, math.nan]).isclose(
        lib.tensor([1.000001, 1.5, 0.5, math.nan])),
    "isclose with atol": lambda lib: lib.tensor([1.0, 0.0]).isclose(lib.tensor([1.3, 0.4]), atol=0.5),
    "allclose with atol": lambda lib: lib.tensor([1.0, 0.0]).allclose(lib.tensor([1.3, 0.4]), atol=0.5),
    "allclose by the defaults": lambda lib: lib.tensor([1.0, 0.0]).allclose(lib.tensor([1.5, 0.0])),
    "allclose nan by default": lambda lib: lib.tensor([math.nan]).allclose(lib.tensor([math.nan])),
    "tril by default": lambda lib: lib.ones(3, 3).tril(),
    "topk of a 0-d tensor": lambda lib: tuple(lib.tensor(2.5).topk(1)),
    "argsort stable with ties": lambda lib: lib.tensor([1, 0, 1, 0, 1] * 20).argsort(stable=True),
    "sort stable with ties, descending": lambda lib: tuple(lib.tensor([1, 0, 1, 0, 1] * 20).sort(
        descending=True, stable=True)),
}


@pytest.mark.parametrize("name", sorted(TO))
def test_a_method_passes_on_its_arguments_as_torch(name):
    _same(*_both(TO[name]))


@pytest.mark.parametrize("make", [
    lambda **kw: ta.ones(2).new_tensor([1.0], **kw), lambda **kw: ta.ones(2).new_zeros(2, **kw),
    lambda **kw: ta.ones(2).new_ones(2, **kw), lambda **kw: ta.ones(2).new_full((2,), 1.5, **kw),
], ids=["new_tensor", "new_zeros", "new_ones", "new_full"])
def test_the_new_factories_pass_on_requires_grad_and_device(make):
    assert make(requires_grad=True).requires_grad and not make().requires_grad
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        make(device="cuda")


def test_copy_true_gives_a_new_tensor_and_copy_false_the_same_one():
    t = ta.ones(2)
    assert t.to(ta.float32) is t and t.to(ta.float32, copy=True) is not t
    assert t.to(copy=True) is not t and t.to(dtype=ta.float32, copy=False) is t


@pytest.mark.parametrize(("op", "call"), [
    ("flip", lambda x: x.flip(5)), ("movedim", lambda x: x.movedim(5, 0)), ("unbind", lambda x: x.unbind(5)),
    ("sort", lambda x: x.sort(5)), ("sort", lambda x: x.argsort(5)), ("topk", lambda x: x.topk(1, 5)),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, 5)), ("argmax", lambda x: x.argmax(5)),
    ("argmin", lambda x: x.argmin(5)), ("sum", lambda x: x.sum(5)), ("mean", lambda x: x.mean(5)),
    ("amax", lambda x: x.amax(5)), ("var", lambda x: x.var(5)),
])
def test_a_dim_out_of_range_is_reported_by_the_method_called(op, call):
    with pytest.raises(IndexError, match=rf"^{op}: dim 5 is out of range"):
        call(ta.ones(3, 4))


def test_the_other_refusals_of_the_shape_methods_match_torch():
    for lib in (ta, torch):
        with pytest.raises(RuntimeError):
            lib.tensor(2.0).topk(2)
        with pytest.raises(RuntimeError):
            lib.ones(3, 4).repeat_interleave(lib.tensor([1, -1, 1]), 0)
        for src, dst in (((0, 1), (0, 0)), ((0, 0), (0, 1))):
            with pytest.raises(RuntimeError):
                lib.ones(3, 4).movedim(src, dst)


@pytest.mark.parametrize(("symbol", "call"), [("&", lambda a: a & a), ("|", lambda a: a | a), ("^", lambda a: a ^ a)])
def test_a_bitwise_operator_on_floats_is_refused_naming_the_operator(symbol, call):
    with pytest.raises(TypeError, match=rf"^\{symbol}: not supported for floating-point tensors"):
        call(ta.ones(2))
    with pytest.raises((TypeError, NotImplementedError)):  # torch: "bitwise_and_cpu" not implemented for 'Float'
        call(torch.ones(2))


def test_a_bitwise_operator_between_a_bool_and_a_float_tensor_is_refused_too():
    with pytest.raises(TypeError, match=r"^&: not supported for floating-point tensors"):
        ta.tensor([True]) & ta.ones(1)
    with pytest.raises((TypeError, RuntimeError, NotImplementedError)):
        torch.tensor([True]) & torch.ones(1)


def test_format_of_a_0d_tensor_uses_the_spec_and_of_others_their_str():
    assert f"{ta.tensor(1.5):.2f}" == f"{torch.tensor(1.5):.2f}" == "1.50"
    assert f"{ta.tensor([1.5])}" == str(ta.tensor([1.5]))
    assert format(ta.tensor([1.5, 2.0]), "") == str(ta.tensor([1.5, 2.0]))
