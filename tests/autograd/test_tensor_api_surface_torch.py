"""The integer and selection methods of the Tensor surface against torch, call by call: the value, its dtype and
shape, the gradient where there is one, and the refusal where torch refuses (its type; its message where torch's is
fixed text).

bincount, remainder / ``%``, floor_divide / ``//`` (both sides), masked_select, mm, narrow, nonzero, topk, sort and
argsort, each on the inputs where their branches differ: integer and float operands, negative values and divisors, a
Python number on the left, broadcasting, empty and 0-d tensors, out-of-range arguments."""

import numpy as np
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(41)
F = RNG.standard_normal((3, 4)) * 3  # (floats of both signs)
G = RNG.choice([-2.5, -1.0, 0.75, 2.0], size=(3, 4))  # (divisors of both signs, none zero)
INTS = RNG.integers(-7, 8, size=(3, 4))
INT_DIVISORS = RNG.choice([-3, -2, 2, 5], size=(3, 4))
COUNTS = np.array([0, 3, 1, 3, 6, 0, 3])
MASK = RNG.random((3, 4)) > 0.4


def _t(lib, array, dtype=None, grad=False):
    t = lib.tensor(array) if dtype is None else lib.tensor(array, dtype=getattr(lib, dtype))
    return t.requires_grad_(True) if grad else t


CALLS = {
    # bincount: counts (int64), weights' float dtype kept, integer weights summed as float64, minlength, refusals
    "bincount": lambda lib: _t(lib, COUNTS).bincount(),
    "bincount_minlength": lambda lib: _t(lib, COUNTS).bincount(minlength=10),
    "bincount_empty": lambda lib: _t(lib, np.array([], np.int64)).bincount(minlength=3),
    "bincount_float32_weights": lambda lib: _t(lib, COUNTS).bincount(_t(lib, np.linspace(0, 1, 7), "float32")),
    "bincount_float64_weights": lambda lib: _t(lib, COUNTS).bincount(weights=_t(lib, np.linspace(-1, 1, 7))),
    "bincount_int_weights": lambda lib: _t(lib, COUNTS).bincount(_t(lib, np.arange(7))),
    "bincount_2d": lambda lib: _t(lib, INTS).bincount(),
    "bincount_negative": lambda lib: _t(lib, np.array([1, -1])).bincount(),
    "bincount_float": lambda lib: _t(lib, np.array([1.0, 2.0])).bincount(),
    "bincount_bool": lambda lib: _t(lib, np.array([True, False])).bincount(),
    "bincount_uint8": lambda lib: _t(lib, np.array([1, 2], np.uint8)).bincount(),
    "bincount_weights_length": lambda lib: _t(lib, COUNTS).bincount(_t(lib, np.ones(3))),
    # remainder and %: the sign of the divisor, integers exact, a number on either side
    "remainder_float": lambda lib: _t(lib, F).remainder(_t(lib, G)),
    "remainder_float_number": lambda lib: _t(lib, F) % -1.5,
    "remainder_int": lambda lib: _t(lib, INTS) % _t(lib, INT_DIVISORS),
    "remainder_int_number": lambda lib: _t(lib, INTS) % 3,
    "remainder_int_by_float": lambda lib: _t(lib, INTS) % 2.5,
    "rmod_number": lambda lib: 7.5 % _t(lib, G),
    "rmod_int": lambda lib: 9 % _t(lib, INT_DIVISORS),
    "rmod_int_float_tensor": lambda lib: 9 % _t(lib, G),
    # floor_divide and //: toward minus infinity, integers exact, a number on either side
    "floor_divide_float": lambda lib: _t(lib, F).floor_divide(_t(lib, G)),
    "floor_divide_float_number": lambda lib: _t(lib, F) // -1.5,
    "floor_divide_int": lambda lib: _t(lib, INTS) // _t(lib, INT_DIVISORS),
    "floor_divide_int_number": lambda lib: _t(lib, INTS) // 3,
    "floor_divide_int_by_float": lambda lib: _t(lib, INTS) // 2.5,
    "rfloordiv_number": lambda lib: 7.5 // _t(lib, G),
    "rfloordiv_int": lambda lib: 9 // _t(lib, INT_DIVISORS),
    "rfloordiv_int_float_tensor": lambda lib: 9 // _t(lib, G),
    # masked_select: a broadcast mask, a row mask, refusals
    "masked_select": lambda lib: _t(lib, F).masked_select(_t(lib, MASK)),
    "masked_select_broadcast": lambda lib: _t(lib, F).masked_select(_t(lib, MASK[0])),
    "masked_select_mask_wider": lambda lib: _t(lib, F[0]).masked_select(_t(lib, MASK)),
    "masked_select_not_bool": lambda lib: _t(lib, F).masked_select(_t(lib, MASK.astype(np.int64))),
    "masked_select_shapes": lambda lib: _t(lib, F).masked_select(_t(lib, MASK[:, :3])),
    # mm and its refusals
    "mm": lambda lib: _t(lib, F).mm(_t(lib, G.T)),
    "mm_vector_self": lambda lib: _t(lib, F[0]).mm(_t(lib, G.T)),
    "mm_vector_other": lambda lib: _t(lib, F).mm(_t(lib, G[0])),
    "mm_shapes": lambda lib: _t(lib, F).mm(_t(lib, G)),
    # narrow: negative dim and start, the end of the dimension, refusals
    "narrow": lambda lib: _t(lib, F).narrow(1, 1, 2),
    "narrow_negative": lambda lib: _t(lib, F).narrow(-1, -3, 3),
    "narrow_to_the_end": lambda lib: _t(lib, F).narrow(0, 3, 0),
    "narrow_start_out_of_range": lambda lib: _t(lib, F).narrow(0, 4, 0),
    "narrow_start_too_negative": lambda lib: _t(lib, F).narrow(0, -4, 1),
    "narrow_too_long": lambda lib: _t(lib, F).narrow(1, 2, 3),
    "narrow_negative_length": lambda lib: _t(lib, F).narrow(1, 2, -1),
    # nonzero: 2-d, 1-d, 0-d, as_tuple
    "nonzero": lambda lib: _t(lib, INTS * MASK).nonzero(),
    "nonzero_1d": lambda lib: _t(lib, INTS[0]).nonzero(),
    "nonzero_0d": lambda lib: _t(lib, np.array(2.0)).nonzero(),
    "nonzero_0d_zero": lambda lib: _t(lib, np.array(0.0)).nonzero(),
    "nonzero_as_tuple": lambda lib: _t(lib, INTS * MASK).nonzero(as_tuple=True),
    "nonzero_0d_as_tuple": lambda lib: _t(lib, np.array(0.0)).nonzero(as_tuple=True),
    "nonzero_empty": lambda lib: _t(lib, np.zeros((2, 0))).nonzero(),
    # topk, sort, argsort: both directions, along a chosen dim, k at its ends
    "topk": lambda lib: _t(lib, F).topk(2),
    "topk_smallest_dim0": lambda lib: _t(lib, F).topk(2, dim=0, largest=False),
    "topk_all": lambda lib: _t(lib, F).topk(4, -1),
    "topk_none": lambda lib: _t(lib, F).topk(0),
    "topk_too_many": lambda lib: _t(lib, F).topk(5),
    "sort_descending_dim0": lambda lib: _t(lib, F).sort(dim=0, descending=True),
    "argsort": lambda lib: _t(lib, F).argsort(dim=1),
    "argsort_descending": lambda lib: _t(lib, F).argsort(0, descending=True),
}


def _result(value):
    """What a call gave: (dtype name, shape, values as an array) per tensor, a tuple of those for a tuple."""
    if isinstance(value, tuple):  # (values and indices, or nonzero's tuple)
        return tuple(_result(v) for v in value)
    return str(value.dtype).replace("torch.", ""), tuple(value.shape), value.detach().numpy()


def _outcome(lib, name):
    try:
        return ("returned", _result(CALLS[name](lib)))
    except Exception as e:  # noqa: BLE001  (any refusal is compared with torch's)
        return ("raised", type(e).__name__, str(e) if isinstance(e, NotImplementedError) else "")


def _assert_same(ours, theirs):
    """The same dtype and shape, integers equal, floats equal to their precision (torch sums float32 weights in
    float32, NumPy in float64)."""
    if isinstance(theirs, tuple) and theirs and isinstance(theirs[0], tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _assert_same(o, t)
        return
    (dtype, shape, values), (dtype_t, shape_t, values_t) = ours, theirs
    assert (dtype, shape) == (dtype_t, shape_t)
    tolerance = 1e-6 if values_t.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(values, values_t, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_call_gives_torchs_value_dtype_and_shape_or_its_refusal(name):
    ours, theirs = _outcome(ta, name), _outcome(torch, name)
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "raised":
        assert ours == theirs
    else:
        _assert_same(ours[1], theirs[1])


@pytest.mark.parametrize("call", [
    lambda lib: _t(lib, np.array([1])).mm(_t(lib, np.ones((1, 1)))),
    lambda lib: _t(lib, np.ones((2, 3))).mm(_t(lib, np.ones(3))),
    lambda lib: _t(lib, np.ones((2, 3))).mm(_t(lib, np.ones((4, 5)))),
    lambda lib: _t(lib, np.array([1, -1])).bincount(),
    lambda lib: _t(lib, np.ones((2, 3))).narrow(1, 2, 3),
    lambda lib: _t(lib, np.ones((2, 3))).narrow(1, 4, 0),
], ids=["mm_self", "mm_mat2", "mm_shapes", "bincount", "narrow_length", "narrow_start"])
def test_refusals_say_what_torchs_say(call):
    messages = []
    for lib in (ta, torch):
        with pytest.raises((RuntimeError, IndexError)) as raised:
            call(lib)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]


GRADIENT_CALLS = {
    "remainder": lambda lib, a, b: a.remainder(b),
    "mod_number": lambda lib, a, b: a % 1.25 + b,
    "masked_select": lambda lib, a, b: a.masked_select(lib.tensor(MASK[1])) * b.masked_select(lib.tensor(MASK)),
    "mm": lambda lib, a, b: a.mm(b.T),
    "narrow": lambda lib, a, b: a.narrow(-1, -3, 2) * b.narrow(1, 0, 2),
    "topk": lambda lib, a, b: a.topk(2, dim=0, largest=False).values * (a * b).topk(3).values[:2, :1],
    "sort": lambda lib, a, b: a.sort(0, descending=True).values + b,
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CALLS))
def test_gradients_flow_as_torchs(name):
    """A random upstream through each differentiable call: both inputs' gradients equal torch's."""
    grads = []
    for lib in (ta, torch):
        a, b = _t(lib, F, grad=True), _t(lib, G, grad=True)
        out = GRADIENT_CALLS[name](lib, a, b)
        upstream = lib.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)))
        grads.append([g.numpy() for g in lib.autograd.grad(out, (a, b), upstream, allow_unused=True,
                                                              materialize_grads=True)])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
